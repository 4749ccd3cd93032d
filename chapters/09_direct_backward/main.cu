// Chapter 09 - the direct backward in both layouts, deterministic. See docs/09_direct_backward.md.
//
// dx, dweight and dbias from x and dout, every input read once and dx written once, in either
// layout (--layout), with dweight and dbias summed in a fixed order (the same bits every run) or,
// for comparison, with atomics (--reduction). The steps, headline first:
//
//   channel-first   cf_staged  persistent blocks; tiles of x and dout fetched ahead into shared
//                              memory by cp.async, halos beside them, sums per tile
//                              (cf_staged.cuh), then reduce_partials (reduce.cuh)
//                   cf_fused   one pass per row chunk: halos both ways by shuffle, sums per chunk
//                              (cf_fused.cuh), then reduce_partials
//                   cf_naive   a thread per dx element; a block per channel for the sums
//                              (naive.cuh)
//   channel-last    cl_staged  a warp across the channels walks down a tile of time steps, its
//                              rows fetched ahead into shared memory by cp.async (cl_staged.cuh),
//                              then reduce_partials
//                   cl_tiled   a lane walks down a tile of time steps with x and dz windows in
//                              registers (cl_tiled.cuh), then reduce_partials
//                   cl_naive   as cf_naive, in channel-last memory
//
// The kernels but the naive ones also run with atomic sums (cf_staged_atomic, ...) with
// --reduction atomic or both. cf_staged needs L a multiple of the 16-byte vector (rows on 16-byte
// boundaries), cl_staged D a multiple of the 8-byte copy; the chapter skips them, and says so, for
// other shapes. As in chapter 08 the tensors
// stay on the device: a timed run is the kernels alone. The problem is drawn channel-first;
// channel-last runs read its transposes, and their dx is transposed back to be checked against the
// one fp64 reference.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "chapters/06_channel_last_backward/backward_problem.h"
#include "chapters/09_direct_backward/kernels.cuh"
#include "common/buffers.h"
#include "common/runner.h"

namespace conv1d::ch09 {
namespace {

struct Flags {
  std::string layout = "both";
  std::string variant = "all";
  std::string reduction = "both";
  int64_t vectors = 0;       // cf_fused: vectors per lane (0: chosen from the shape)
  int64_t rows = 0;          // cl_tiled, cl_staged: time steps a tile (0: chosen from the shape)
  int64_t access_bytes = 0;  // cl_tiled: the widest access (0: the default channels per lane)
};

// One variant: a step of the chapter in one layout, with one way of adding the sums.
struct Step {
  Layout layout;
  std::string idea;  // "staged", "fused", "tiled", "naive"
  bool atomic = false;
  std::string name() const {
    return std::string(layout == Layout::channel_first ? "cf_" : "cl_") + idea +
           (atomic ? "_atomic" : "");
  }
  std::string main_kernel() const {
    return idea == "naive" ? "conv_bwd_naive_dx"
           : idea == "staged"
               ? (layout == Layout::channel_first ? "conv_bwd_cf_staged" : "conv_bwd_cl_staged")
           : idea == "fused" ? "conv_bwd_cf"
                             : "conv_bwd_cl";
  }
};

// What the launches decided from the shape and the flags.
struct Choices {
  int vectors = 2, rows = 64, staged_rows = 64, access_bytes = 0;
};

ChapterSpec chapter_spec() {
  ChapterSpec s{"09", "direct_backward",
                "the direct backward, both layouts, deterministic weight gradients"};
  s.dtypes = {Dtype::fp32, Dtype::fp16, Dtype::bf16};
  s.defaults.dtype = Dtype::bf16;
  s.bias = s.silu = true;
  s.pass = "backward";
  return s;
}

// The bytes a backward must move: x and dout read, dx written (the partial sums are extra).
double tensor_bytes(const Options& o) {
  return 3.0 * o.batch * o.dim * o.seqlen * dtype_bytes(o.dtype);
}

class DirectBackwardChapter : public Chapter {
 public:
  DirectBackwardChapter() : Chapter(chapter_spec()) {}

  std::vector<ExtraFlag> flags(Options*) override {
    return {
        choice_flag("--layout", &flags_.layout, {"channel-first", "channel-last", "both"},
                    "layout of x, dout and dx: channel-first [B,D,L], channel-last [B,L,D] or both "
                    "(default)"),
        choice_flag(
            "--variant", &flags_.variant, {"all", "staged", "fused", "tiled", "naive"},
            "all (default) or one step: staged (both layouts), fused (channel-first), tiled "
            "(channel-last), naive"),
        choice_flag(
            "--reduction", &flags_.reduction, {"deterministic", "atomic", "both"},
            "dweight and dbias: partial sums added in a fixed order, atomics, or both compared "
            "(default both; naive is always deterministic)"),
        int_flag(
            "--vectors", &flags_.vectors, 0, 4,
            "cf_fused: 16-byte vectors per lane, 1, 2 or 4 (default 0: chosen from the shape)"),
        int_flag("--rows", &flags_.rows, 0, 64,
                 "cl_tiled, cl_staged: time steps a tile (a lane's, a warp's), 16, 32 or 64 "
                 "(default 0: chosen from the shape)"),
        int_flag("--access-bytes", &flags_.access_bytes, 0, 16,
                 "cl_tiled: the widest access, 16, 8 or 4 bytes, at most 4 channels (default 0: 4 "
                 "channels per lane in 16 bits, 2 in fp32)")};
  }

  std::string check(const Options& o) override {
    const int64_t v = flags_.vectors, r = flags_.rows, ab = flags_.access_bytes;
    if (v != 0 && v != 1 && v != 2 && v != 4)
      return "--vectors must be 0, 1, 2 or 4 (got " + std::to_string(v) + ")";
    if (r != 0 && r != 16 && r != 32 && r != 64)
      return "--rows must be 0, 16, 32 or 64 (got " + std::to_string(r) + ")";
    if (ab != 0 && ab != 4 && ab != 8 && ab != 16)
      return "--access-bytes must be 0, 4, 8 or 16 (got " + std::to_string(ab) + ")";
    // The channel-first staged kernel's tiles follow rows, which must start on 16-byte
    // boundaries; the channel-last one copies a lane's channels of a row as 8 bytes.
    const int per = 16 / int(dtype_bytes(o.dtype)), cl_per = 8 / int(dtype_bytes(o.dtype));
    const bool staged_takes_rows = o.seqlen % per == 0;
    const bool cl_staged_takes = o.dim % cl_per == 0;
    for (Layout l : {Layout::channel_first, Layout::channel_last}) {
      if (!wants(l)) continue;
      using Ideas = std::vector<std::string>;
      const Ideas ideas = l == Layout::channel_first ? Ideas{"staged", "fused", "naive"}
                                                     : Ideas{"staged", "tiled", "naive"};
      for (const std::string& idea : ideas) {
        if (flags_.variant != "all" && flags_.variant != idea) continue;
        if (idea == "staged" && l == Layout::channel_first && !staged_takes_rows) {
          skipped_ += std::string(skipped_.empty() ? "" : "; ") + "cf_staged skipped: --seqlen " +
                      std::to_string(o.seqlen) + " is not a multiple of " + std::to_string(per) +
                      " (rows on 16-byte boundaries)";
          continue;
        }
        if (idea == "staged" && l == Layout::channel_last && !cl_staged_takes) {
          skipped_ += std::string(skipped_.empty() ? "" : "; ") + "cl_staged skipped: --dim " +
                      std::to_string(o.dim) + " is not a multiple of " + std::to_string(cl_per) +
                      " (a lane's channels are one 8-byte copy)";
          continue;
        }
        for (bool atomic : {false, true}) {
          if (idea == "naive" && atomic) continue;
          if (idea != "naive" && flags_.reduction != "both" &&
              (flags_.reduction == "atomic") != atomic)
            continue;
          steps_.push_back(Step{l, idea, atomic});
        }
      }
    }
    if (steps_.empty())
      return "--variant " + flags_.variant + " has no kernel in --layout " + flags_.layout +
             " (fused is channel-first, tiled channel-last" +
             (skipped_.empty() ? std::string(")") : "; " + skipped_ + ")");
    return "";
  }

  MemoryNeed memory(const Frame& f) override {
    const Options& o = f.opt;
    const int64_t n = o.batch * o.dim * o.seqlen, e = dtype_bytes(o.dtype);
    const int64_t layouts =
        (wants(Layout::channel_first) ? 1 : 0) + (wants(Layout::channel_last) ? 1 : 0);
    MemoryNeed m;
    // x, dout, dx per layout; the partial sums (W+1 per unit: at most one unit per 16 elements, or
    // one per row of a short sequence); the rest.
    m.device_bytes = 3 * layouts * n * e + (n / 16 + o.batch * o.dim) * (o.width + 1) * 4 +
                     o.dim * (o.width + 1) * (e + 4);
    // x and dout, their channel-last copies, one dx per layout and a transposed one for the check;
    // x, dout and the reference dx in fp64, and the reference's scratch.
    m.host_bytes = (2 + 2 * layouts + layouts + 1) * n * e + 3 * n * 8 +
                   reference_backward_scratch_bytes(ConvShape{o.batch, o.dim, o.seqlen, o.width});
    return m;
  }

  void describe(const Frame&) override {
    if (!skipped_.empty()) std::printf("%s\n", skipped_.c_str());
    for (const Step& st : steps_)
      std::printf("%s%s", st.name().c_str(), &st == &steps_.back() ? "\n" : ", ");
  }

  std::string make_problem(const Frame& f) override {
    opt_ = f.opt;
    p_ = ch06::make_backward_problem(opt_, Layout::channel_first);
    if (wants(Layout::channel_last)) {
      x_last_ = transposed(p_.x, opt_.batch, opt_.dim, opt_.seqlen);
      dout_last_ = transposed(p_.dout, opt_.batch, opt_.dim, opt_.seqlen);
    }
    char buf[256];
    std::snprintf(
        buf, sizeof buf,
        "; tolerances: dx atol %.0e + rtol %.0e, dweight atol %.3e + rtol %.0e, dbias atol %.3e + "
        "rtol %.0e",
        p_.dx_tol.atol, p_.dx_tol.rtol, p_.dweight_tol.atol, p_.dweight_tol.rtol, p_.dbias_tol.atol,
        p_.dbias_tol.rtol);
    return buf;
  }

  void save_inputs(const std::string& dir) override { ch06::save_backward_inputs(p_, dir); }

  std::vector<MeasuredVariant> variants(const Frame& f) override {
    upload();
    const Options& o = opt_;
    choices_.access_bytes = static_cast<int>(flags_.access_bytes);
    choices_.vectors = cf_bwd_vectors(o.seqlen, dtype_bytes(o.dtype) == 4 ? 4 : 8,
                                      static_cast<int>(flags_.vectors));
    choices_.rows = cl_bwd_rows(o.batch, o.seqlen, o.dim, cl_access(), f.dev.sm_count,
                                static_cast<int>(flags_.rows), dtype_bytes(o.dtype) == 4 ? 64 : 32);
    choices_.staged_rows =
        cl_staged_bwd_rows(o.batch, o.seqlen, o.dim, 8 / int(dtype_bytes(o.dtype)), f.dev.sm_count,
                           static_cast<int>(flags_.rows));
    std::vector<MeasuredVariant> vs;
    for (const Step& st : steps_) vs.push_back(variant(st));
    return vs;
  }

  void report(const Frame&, std::vector<VariantResult>&) override {
    for (const auto& a : states_)
      for (const auto& b : states_)
        if (a->step.layout == b->step.layout && a->step.idea == b->step.idea && !a->step.atomic &&
            b->step.atomic)
          ch06::compare_sums(p_, a->step.name(), a->out, b->step.name(), b->out);
  }

 private:
  bool wants(Layout l) const {
    return flags_.layout == "both" ||
           flags_.layout == (l == Layout::channel_first ? "channel-first" : "channel-last");
  }

  // Device tensors of one layout.
  struct Tensors {
    DeviceBuffer x, dout, dx;
  };
  Tensors& tensors(Layout l) { return l == Layout::channel_first ? first_ : last_; }

  // One variant's outputs on the host, and (deterministic sums) the first run's sums.
  struct VariantState {
    Step step;
    ch06::BwdOutputs out;
    std::vector<float> first_dweight, first_dbias;
  };

  void upload() {
    auto to_device = [](const HostArray& h) {
      DeviceBuffer d(h.bytes());
      if (h.bytes()) GPU_CHECK(cudaMemcpy(d.get(), h.data(), h.bytes(), cudaMemcpyHostToDevice));
      return d;
    };
    weight_ = to_device(p_.weight);
    bias_ = to_device(p_.bias);
    const int64_t D = opt_.dim, W = opt_.width;
    dweight_ = DeviceBuffer(D * W * sizeof(float));
    dbias_ = DeviceBuffer(D * sizeof(float));
    for (Layout l : {Layout::channel_first, Layout::channel_last}) {
      if (!wants(l)) continue;
      Tensors& t = tensors(l);
      t.x = to_device(l == Layout::channel_first ? p_.x : x_last_);
      t.dout = to_device(l == Layout::channel_first ? p_.dout : dout_last_);
      t.dx = DeviceBuffer(p_.x.bytes());
    }
    x_last_ = HostArray();
    dout_last_ = HostArray();
  }

  // Elements per access of the channel-last kernel (what D, the buffers and --access-bytes allow).
  int cl_access() {
    if (!wants(Layout::channel_last)) return 1;
    return dispatch_storage(opt_.dtype, [&](auto tag) {
      using T = device_t<typename decltype(tag)::type>;
      return cl_bwd_channels(args<T>(Layout::channel_last, false), choices_.access_bytes);
    });
  }

  template <class T>
  BwdArgs<T> args(Layout l, bool atomic) {
    Tensors& t = tensors(l);
    return BwdArgs<T>{t.x.get<const T>(),
                      t.dout.get<const T>(),
                      weight_.get<const T>(),
                      opt_.bias ? bias_.get<const T>() : nullptr,
                      t.dx.get<T>(),
                      partials_.get<float>(),
                      dweight_.get<float>(),
                      dbias_.get<float>(),
                      opt_.batch,
                      opt_.dim,
                      opt_.seqlen,
                      opt_.silu,
                      atomic};
  }

  // The partial-sum buffer of a deterministic step, as reduce_partials reads it.
  PartialLayout partial_layout(const Step& st) const {
    if (st.idea == "staged" && st.layout == Layout::channel_last)
      return cl_bwd_partials(opt_.batch, opt_.dim,
                             cl_staged_bwd_units(opt_.seqlen, choices_.staged_rows), opt_.width);
    if (st.idea == "staged")
      return cf_bwd_partials(
          opt_.batch, opt_.dim,
          cf_bwd_staged_chunks(opt_.seqlen, dtype_bytes(opt_.dtype) == 4 ? 4 : 8), opt_.width);
    if (st.idea == "fused")
      return cf_bwd_partials(
          opt_.batch, opt_.dim,
          cf_bwd_chunks(opt_.seqlen, dtype_bytes(opt_.dtype) == 4 ? 4 : 8, choices_.vectors),
          opt_.width);
    return cl_bwd_partials(opt_.batch, opt_.dim, cl_bwd_units(opt_.seqlen, choices_.rows),
                           opt_.width);
  }
  int64_t partial_floats(const Step& st) const {
    const PartialLayout l = partial_layout(st);
    return l.count1 * l.count2 * opt_.dim * (opt_.width + 1);
  }

  // The kernels of one run of a step (or, with `facts`, only the main kernel's description).
  void launch(const Step& st, RunContext* ctx, KernelFacts* facts) {
    dispatch_storage(opt_.dtype, [&](auto tag) {
      using T = device_t<typename decltype(tag)::type>;
      const BwdArgs<T> a = args<T>(st.layout, st.atomic);
      const int W = opt_.width;
      auto record = [&](const char* name, auto&& go) {
        if (ctx) ctx->rec.kernel(name, go);
      };
      if (facts) {
        if (st.idea == "naive")
          launch_naive_dx(a, st.layout, W, 0, facts);
        else if (st.idea == "staged" && st.layout == Layout::channel_last)
          launch_cl_bwd_staged(a, W, choices_.staged_rows, 0, facts);
        else if (st.idea == "staged")
          launch_cf_bwd_staged(a, W, 0, facts);
        else if (st.idea == "fused")
          launch_cf_bwd(a, W, choices_.vectors, 0, facts);
        else
          launch_cl_bwd(a, W, choices_.rows, choices_.access_bytes, 0, facts);
        return;
      }
      if (st.idea == "naive") {
        record("conv_bwd_naive_dx", [&] { launch_naive_dx(a, st.layout, W); });
        record("conv_bwd_naive_dweight", [&] { launch_naive_dweight(a, st.layout, W); });
        return;
      }
      if (st.atomic)
        record("memset dweight, dbias", [&] {
          GPU_CHECK(cudaMemsetAsync(dweight_.get(), 0, dweight_.bytes()));
          GPU_CHECK(cudaMemsetAsync(dbias_.get(), 0, dbias_.bytes()));
        });
      record(st.main_kernel().c_str(), [&] {
        if (st.idea == "staged" && st.layout == Layout::channel_last)
          launch_cl_bwd_staged(a, W, choices_.staged_rows);
        else if (st.idea == "staged")
          launch_cf_bwd_staged(a, W);
        else if (st.idea == "fused")
          launch_cf_bwd(a, W, choices_.vectors);
        else
          launch_cl_bwd(a, W, choices_.rows, choices_.access_bytes);
      });
      if (!st.atomic)
        record("reduce_partials", [&] {
          launch_reduce_partials(partials_.get<float>(), partial_layout(st), opt_.dim, W,
                                 dweight_.get<float>(), dbias_.get<float>());
        });
    });
  }

  std::vector<KernelModel> models(const Step& st) const {
    const Options& o = opt_;
    const double n = double(o.batch) * o.dim * o.seqlen, w = o.width, e = dtype_bytes(o.dtype);
    const double sums = double(o.dim) * (w + 1) * 4;
    // Per element: W multiply-adds for dx and W for dweight, one add for dbias; with SiLU, z (W
    // multiply-adds) and silu'(z) (about 8 operations).
    const double flops = n * (4 * w + 1 + (o.silu ? 2 * w + 8 : 0));
    std::vector<KernelModel> m{{st.main_kernel(), flops, tensor_bytes(o)}};
    if (st.idea == "naive") {
      m.push_back({"conv_bwd_naive_dweight", n * (2 * w + 1), 2 * n * e + sums});
    } else if (!st.atomic) {
      const double partials = double(partial_floats(st));
      m.push_back({"reduce_partials", partials, partials * 4 + sums});
    }
    return m;
  }

  MeasuredVariant variant(const Step& st) {
    auto state = std::make_unique<VariantState>();
    state->step = st;
    state->out = ch06::empty_outputs(p_);
    VariantState* s = state.get();
    states_.push_back(std::move(state));
    if (!st.atomic && st.idea != "naive") {
      const int64_t need = partial_floats(st) * int64_t(sizeof(float));
      if (static_cast<int64_t>(partials_.bytes()) < need) partials_ = DeviceBuffer(need);
    }

    MeasuredVariant m;
    m.name = st.name();
    m.kernels = models(st);
    KernelFacts facts;
    launch(st, nullptr, &facts);
    char intro[256];
    std::snprintf(intro, sizeof intro,
                  "%s, %s: %d registers, %zu bytes of local memory, %d blocks of %d threads per "
                  "multiprocessor%s",
                  st.main_kernel().c_str(), layout_name(st.layout), facts.registers,
                  facts.local_bytes, facts.blocks_per_sm, facts.threads, detail(st).c_str());
    m.intro = intro;
    m.run = [this, s](RunContext& ctx) {
      Tensors& t = tensors(s->step.layout);
      // Verification runs: NaN on both sides, the results copied back afterwards.
      if (ctx.poison_outputs) {
        t.dx.poison();
        partials_.poison();
        dweight_.poison();
        dbias_.poison();
        ch06::poison(s->out);
      }
      launch(s->step, &ctx, nullptr);
      if (ctx.poison_outputs)
        ctx.rec.d2h("copy dx, dweight, dbias to host", [&] {
          GPU_CHECK(
              cudaMemcpy(s->out.dx.data(), t.dx.get(), s->out.dx.bytes(), cudaMemcpyDeviceToHost));
          GPU_CHECK(cudaMemcpy(s->out.dweight.data(), dweight_.get(), dweight_.bytes(),
                               cudaMemcpyDeviceToHost));
          GPU_CHECK(cudaMemcpy(s->out.dbias.data(), dbias_.get(), dbias_.bytes(),
                               cudaMemcpyDeviceToHost));
        });
    };
    m.check = [this, s] { return check(*s); };
    m.save_npy = [this, s](const std::string& dir) {
      const Options& o = opt_;
      const bool first = s->step.layout == Layout::channel_first;
      ch06::save_backward_outputs(s->step.name(), s->out, o,
                                  first ? std::vector<int64_t>{o.batch, o.dim, o.seqlen}
                                        : std::vector<int64_t>{o.batch, o.seqlen, o.dim},
                                  dir);
    };
    m.whole_run_name = "whole backward";
    m.whole_run_bytes = tensor_bytes(opt_);
    return m;
  }

  // dx (channel-last: transposed back first), dweight and dbias against the reference; with
  // deterministic sums, dweight and dbias also the same bits as the first run's.
  CheckResult check(VariantState& s) {
    CheckResult c;
    if (s.step.layout == Layout::channel_first) {
      c = ch06::check_backward(p_, s.out);
    } else {
      ch06::BwdOutputs first = s.out;
      first.dx = transposed(s.out.dx, opt_.batch, opt_.seqlen, opt_.dim);
      c = ch06::check_backward(p_, first);
      c.text += "  (dx compared in channel-first order: indices above are [b, d, t])\n";
    }
    if (!s.step.atomic) {
      if (s.first_dweight.empty()) {
        s.first_dweight = s.out.dweight;
        s.first_dbias = s.out.dbias;
      } else {
        const bool same =
            same_bits(s.first_dweight, s.out.dweight) && same_bits(s.first_dbias, s.out.dbias);
        c.text += std::string("  dweight and dbias bitwise identical to the first run: ") +
                  (same ? "yes" : "NO") + "\n";
        c.ok = c.ok && same;
      }
    }
    return c;
  }

  std::string detail(const Step& st) {
    if (st.idea == "staged" && st.layout == Layout::channel_last)
      return "; " + std::to_string(choices_.staged_rows) + " time steps a warp, " +
             std::to_string(kClsCopyBytes) + "-byte copies, a ring of " +
             std::to_string(kClsSmemBytes / 1024) + " KB in shared memory";
    if (st.idea == "staged")
      return "; tiles of " + std::to_string(kStagedVectors) + " vectors, " +
             std::to_string(kBwdStagedStages) + " stages of " +
             std::to_string(kBwdStageVectors * 16 / 1024) + " KB in shared memory";
    if (st.idea == "fused") return "; " + std::to_string(choices_.vectors) + " vector(s) per lane";
    if (st.idea == "tiled")
      return "; " + std::to_string(choices_.rows) + " time steps per lane, " +
             std::to_string(cl_access() * dtype_bytes(opt_.dtype)) + "-byte accesses";
    return "";
  }

  Flags flags_;
  std::vector<Step> steps_;
  std::string skipped_;  // a step the shape rules out, said in the header
  Options opt_;
  ch06::BwdProblem p_;
  HostArray x_last_, dout_last_;  // x and dout as [B, L, D], until they are uploaded
  DeviceBuffer weight_, bias_, dweight_, dbias_, partials_;
  Tensors first_, last_;
  Choices choices_;
  std::vector<std::unique_ptr<VariantState>> states_;
};

}  // namespace
}  // namespace conv1d::ch09

int main(int argc, char** argv) {
  conv1d::ch09::DirectBackwardChapter chapter;
  return conv1d::run_chapter(argc, argv, chapter);
}
