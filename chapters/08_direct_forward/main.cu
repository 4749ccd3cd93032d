// Chapter 08 - the direct forward at the memory-bandwidth limit, channel-first and channel-last.
// See docs/08_direct_forward.md.
//
// No img2col, no weight expansion, no GEMM: the convolution computed straight from x, each input read
// once and each output written once, in either layout natively (--layout), taught as steps measured
// in one run (--variant), headline first:
//
//   channel-first   cf_staged   tiles fetched ahead into shared memory by cp.async     (cf_staged.cuh)
//                   cf_chunked  several 16-byte vectors per thread, loads in flight    (cf_chunked.cuh)
//                   cf_vector   one 16-byte vector per thread, halo by warp shuffle     (cf_vector.cuh)
//                   cf_naive    one thread per output                                   (naive.cuh)
//   channel-last    cl_staged   the tiled walk, its rows fetched ahead by cp.async      (cl_staged.cuh)
//                   cl_tiled    a thread walks down kRows time steps of its channels   (cl_tiled.cuh)
//                   cl_vector   one vector of channels per thread, W loads             (cl_vector.cuh)
//                   cl_naive    one thread per output                                   (naive.cuh)
//
// The inputs and outputs stay on the device (uploaded once, as in training and inference, where they
// are on the device already): a run is the kernel alone. Channel-last runs read x transposed on the
// host once, and their outputs are transposed back to be checked against the one fp64 reference.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "chapters/08_direct_forward/kernels.cuh"
#include "common/buffers.h"
#include "common/npy.h"
#include "common/runner.h"
#include "common/verify.h"

namespace conv1d::ch08 {
namespace {

struct Flags {
  std::string layout = "both";
  std::string variant = "all";
  int64_t vectors = 0;        // cf_chunked: vectors per thread (0: chosen from the shape)
  int64_t rows = 0;           // cl_tiled: rows per thread (0: chosen from the shape)
  int64_t access_bytes = 16;  // channel-last kernels: the widest access tried
};

// What the launches decided from the shape and the flags.
struct Choices {
  int vectors = 1, rows = 8, staged_rows = 16, access_bytes = 16;
};

// One step of the chapter in one layout: which kernel, launched how.
struct Step {
  Layout layout;
  std::string idea;  // "staged", "chunked", "vector", "naive", "tiled"
  std::string kernel;
  std::string name() const {
    return std::string(layout == Layout::channel_first ? "cf_" : "cl_") + idea;
  }
};

const std::vector<Step>& all_steps() {
  static const std::vector<Step> steps{
      {Layout::channel_first, "staged", "conv_fwd_cf_staged"},
      {Layout::channel_first, "chunked", "conv_fwd_cf_chunked"},
      {Layout::channel_first, "vector", "conv_fwd_cf_vector"},
      {Layout::channel_first, "naive", "conv_fwd_naive"},
      {Layout::channel_last, "staged", "conv_fwd_cl_staged"},
      {Layout::channel_last, "tiled", "conv_fwd_cl_tiled"},
      {Layout::channel_last, "vector", "conv_fwd_cl_vector"},
      {Layout::channel_last, "naive", "conv_fwd_naive"},
  };
  return steps;
}

// Launches step `st` on `a` (or, with `facts`, only describes the kernel it would launch).
template <class T>
void launch_step(const Step& st, const DirectArgs<T>& a, int width, const Choices& c,
                 KernelFacts* facts) {
  if (st.idea == "naive")
    launch_naive(a, st.layout, width, 0, facts);
  else if (st.idea == "vector" && st.layout == Layout::channel_first)
    launch_cf_vector(a, width, 0, facts);
  else if (st.idea == "staged" && st.layout == Layout::channel_first)
    launch_cf_staged(a, width, 0, facts);
  else if (st.idea == "staged")
    launch_cl_staged(a, width, c.staged_rows, 0, facts);
  else if (st.idea == "chunked")
    launch_cf_chunked(a, width, c.vectors, 0, facts);
  else if (st.idea == "vector")
    launch_cl_vector(a, width, c.access_bytes, 0, facts);
  else
    launch_cl_tiled(a, width, c.rows, c.access_bytes, 0, facts);
}

// The bytes a forward must move (x read, out written, the filters) and its arithmetic (W
// multiply-adds per output, the epilogue's).
KernelModel model(const Step& st, const Options& o) {
  const double n = double(o.batch) * o.dim * o.seqlen, e = dtype_bytes(o.dtype);
  const double params = double(o.dim) * (o.width + (o.bias ? 1 : 0));
  return {st.kernel, 2.0 * o.width * n + epilogue_flops(o), (2.0 * n + params) * e};
}

ChapterSpec chapter_spec() {
  ChapterSpec s{"08", "direct_forward",
                "the direct forward, channel-first and channel-last, at the bandwidth limit"};
  s.dtypes = {Dtype::fp32, Dtype::fp16, Dtype::bf16};
  s.defaults.dtype = Dtype::bf16;
  s.bias = s.silu = true;
  return s;
}

class DirectForwardChapter : public Chapter {
 public:
  DirectForwardChapter() : Chapter(chapter_spec()) {}

  std::vector<ExtraFlag> flags(Options*) override {
    return {
        choice_flag(
            "--layout", &flags_.layout, {"channel-first", "channel-last", "both"},
            "layout of x and out: channel-first [B,D,L], channel-last [B,L,D] or both (default)"),
        choice_flag("--variant", &flags_.variant,
                    {"all", "staged", "chunked", "vector", "naive", "tiled"},
                    "all (default) or one step: staged (both layouts), chunked (channel-first), "
                    "tiled (channel-last), vector, naive"),
        int_flag("--vectors", &flags_.vectors, 0, 8,
                 "cf_chunked: 16-byte vectors per thread, 1, 2, 4 or 8 (default 0: chosen from the "
                 "shape)"),
        int_flag("--rows", &flags_.rows, 0, 32,
                 "cl_tiled: time steps per thread, 8, 16 or 32 (default 0: chosen from the shape; "
                 "cl_staged chooses its own, 16, 32 or 64)"),
        int_flag("--access-bytes", &flags_.access_bytes, 4, 16,
                 "channel-last kernels: the widest access, 16, 8 or 4 bytes (default 16)")};
  }

  std::string check(const Options& o) override {
    const int64_t v = flags_.vectors;
    if (v != 0 && v != 1 && v != 2 && v != 4 && v != 8)
      return "--vectors must be 0, 1, 2, 4 or 8 (got " + std::to_string(v) + ")";
    const int64_t ab = flags_.access_bytes;
    if (ab != 4 && ab != 8 && ab != 16)
      return "--access-bytes must be 4, 8 or 16 (got " + std::to_string(ab) + ")";
    const int64_t r = flags_.rows;
    if (r != 0 && r != 8 && r != 16 && r != 32)
      return "--rows must be 0, 8, 16 or 32 (got " + std::to_string(r) + ")";
    // The channel-first staged kernel's tiles follow rows, which must start on 16-byte boundaries;
    // the channel-last one copies 16 bytes of channels a row, so D must be whole vectors.
    const int per = 16 / int(dtype_bytes(o.dtype));
    const bool cf_staged_takes = o.seqlen % per == 0, cl_staged_takes = o.dim % per == 0;
    if (flags_.variant == "staged" && !cf_staged_takes && !cl_staged_takes)
      return "--variant staged needs --seqlen (channel-first) or --dim (channel-last) a multiple "
             "of " +
             std::to_string(per) + " in " + dtype_name(o.dtype);
    for (const Step& st : all_steps()) {
      if (!wanted(st)) continue;
      const bool first = st.layout == Layout::channel_first;
      if (st.idea == "staged" && !(first ? cf_staged_takes : cl_staged_takes)) {
        skipped_ += std::string(skipped_.empty() ? "" : "\n") + (first ? "cf" : "cl") +
                    "_staged skipped: " + (first ? "--seqlen " : "--dim ") +
                    std::to_string(first ? o.seqlen : o.dim) + " is not a multiple of " +
                    std::to_string(per) +
                    (first ? " (rows on 16-byte boundaries)" : " (rows of 16-byte vectors)");
        continue;
      }
      steps_.push_back(st);
    }
    if (steps_.empty() && !skipped_.empty()) return skipped_;  // (the shape ruled it out)
    if (steps_.empty())
      return "--variant " + flags_.variant + " has no kernel in --layout " + flags_.layout +
             " (chunked is channel-first, tiled channel-last; staged takes both where the shape "
             "allows)";
    return "";
  }

  void describe(const Frame&) override {
    if (!skipped_.empty()) std::printf("%s\n", skipped_.c_str());
  }

  MemoryNeed memory(const Frame& f) override {
    const int64_t n = f.opt.batch * f.opt.dim * f.opt.seqlen, e = dtype_bytes(f.opt.dtype);
    const int64_t layouts =
        (wants(Layout::channel_first) ? 1 : 0) + (wants(Layout::channel_last) ? 1 : 0);
    MemoryNeed m;
    m.device_bytes =
        2 * layouts * n * e + f.opt.dim * (f.opt.width + 1) * e;  // x and out per layout
    // x, its channel-last copy, one output per layout and the transposed check; the reference and,
    // while it is computed, x in fp64.
    m.host_bytes = (2 + 2 * layouts) * n * e + 2 * n * 8;
    return m;
  }

  std::string make_problem(const Frame& f) override {
    opt_ = f.opt;
    const Options& o = opt_;
    in_ = draw_inputs(o);
    {
      const RefInputs ref_in(in_);
      ref_.resize(static_cast<size_t>(o.batch * o.dim * o.seqlen));
      reference_forward(ref_in.problem(ConvShape{o.batch, o.dim, o.seqlen, o.width},
                                       Layout::channel_first, o.silu),
                        ref_.data());
    }
    if (wants(Layout::channel_last)) x_last_ = transposed(in_.x, o.batch, o.dim, o.seqlen);
    return "";
  }

  void save_inputs(const std::string& dir) override {
    const Options& o = opt_;
    write_npy(dir + "/x.npy", in_.x, {o.batch, o.dim, o.seqlen});
    write_npy(dir + "/weight.npy", in_.weight, {o.dim, o.width});
    if (o.bias) write_npy(dir + "/bias.npy", in_.bias, {o.dim});
    write_npy(dir + "/reference.npy", ref_, {o.batch, o.dim, o.seqlen});
    std::printf("wrote x, weight%s and reference .npy files ([B, D, L]) to %s\n",
                o.bias ? ", bias" : "", dir.c_str());
  }

  std::vector<MeasuredVariant> variants(const Frame& f) override {
    const Options& o = opt_;
    upload();
    choices_.access_bytes = static_cast<int>(flags_.access_bytes);
    choices_.rows =
        cl_tiled_rows(o.batch, o.seqlen, o.dim / cl_columns_access(), f.dev.sm_count,
                      static_cast<int>(flags_.rows), dtype_bytes(o.dtype) == 4 ? 32 : 16);
    choices_.staged_rows =
        cl_staged_rows(o.batch, o.seqlen, o.dim / (16 / dtype_bytes(o.dtype)), f.dev.sm_count);
    choices_.vectors =
        chunked_vectors(ceil_div(o.batch * o.dim * o.seqlen, dtype_bytes(o.dtype) == 4 ? 4 : 8),
                        f.dev.sm_count, static_cast<int>(flags_.vectors));
    std::vector<MeasuredVariant> vs;
    for (const Step& st : steps_) vs.push_back(variant(st));
    return vs;
  }

 private:
  bool wants(Layout l) const {
    return flags_.layout == "both" ||
           flags_.layout == (l == Layout::channel_first ? "channel-first" : "channel-last");
  }
  bool wanted(const Step& st) const {
    return wants(st.layout) && (flags_.variant == "all" || flags_.variant == st.idea);
  }

  // Device buffers of one layout.
  struct Tensors {
    DeviceBuffer x, out;
    HostArray out_host;  // the last verification run's output, as the device wrote it
  };

  void upload() {
    auto to_device = [](const HostArray& h) {
      DeviceBuffer d(h.bytes());
      if (h.bytes()) GPU_CHECK(cudaMemcpy(d.get(), h.data(), h.bytes(), cudaMemcpyHostToDevice));
      return d;
    };
    weight_ = to_device(in_.weight);
    bias_ = to_device(in_.bias);
    for (Layout l : {Layout::channel_first, Layout::channel_last}) {
      if (!wants(l)) continue;
      Tensors& t = tensors(l);
      t.x = to_device(l == Layout::channel_first ? in_.x : x_last_);
      t.out = DeviceBuffer(in_.x.bytes());
      t.out_host = HostArray(opt_.dtype, in_.x.size());
    }
    x_last_ = HostArray();  // on the device now
  }

  Tensors& tensors(Layout l) { return l == Layout::channel_first ? first_ : last_; }

  // Elements per access of the channel-last kernels (what D and the buffers allow).
  int cl_columns_access() {
    return dispatch_storage(opt_.dtype, [&](auto tag) {
      return cl_access_elements(args<device_t<typename decltype(tag)::type>>(Layout::channel_last),
                                static_cast<int>(flags_.access_bytes));
    });
  }

  template <class T>
  DirectArgs<T> args(Layout l) {
    Tensors& t = tensors(l);
    return DirectArgs<T>{t.x.get<const T>(),
                         weight_.get<const T>(),
                         opt_.bias ? bias_.get<const T>() : nullptr,
                         t.out.get<T>(),
                         opt_.batch,
                         opt_.dim,
                         opt_.seqlen,
                         opt_.silu};
  }

  void launch(const Step& st, KernelFacts* facts) {
    dispatch_storage(opt_.dtype, [&](auto tag) {
      using T = device_t<typename decltype(tag)::type>;
      launch_step(st, args<T>(st.layout), opt_.width, choices_, facts);
    });
  }

  MeasuredVariant variant(const Step& st) {
    const Options& o = opt_;
    MeasuredVariant m;
    m.name = st.name();
    m.kernels = {model(st, o)};
    KernelFacts facts;
    launch(st, &facts);
    char intro[256];
    std::snprintf(intro, sizeof intro,
                  "%s, %s: %d registers, %zu bytes of local memory, %d blocks of %d threads per "
                  "multiprocessor%s",
                  st.kernel.c_str(), layout_name(st.layout), facts.registers, facts.local_bytes,
                  facts.blocks_per_sm, facts.threads, detail(st).c_str());
    m.intro = intro;
    m.run = [this, st](RunContext& ctx) {
      Tensors& t = tensors(st.layout);
      if (ctx.poison_outputs) t.out.poison();  // verification runs: nothing unwritten can pass
      ctx.rec.kernel(st.kernel.c_str(), [&] { launch(st, nullptr); });
      if (ctx.poison_outputs)
        ctx.rec.d2h("copy out to host", [&] {
          t.out_host.fill_nan();
          GPU_CHECK(cudaMemcpy(t.out_host.data(), t.out.get(), t.out_host.bytes(),
                               cudaMemcpyDeviceToHost));
        });
    };
    m.check = [this, st] {
      const Options& op = opt_;
      const HostArray& got = tensors(st.layout).out_host;
      // Channel-last outputs are compared in channel-first order: indices below are [b, d, t].
      const VerifyReport r =
          st.layout == Layout::channel_first
              ? verify("out", got, ref_, default_tolerance(op.dtype), {op.batch, op.dim, op.seqlen})
              : verify("out", transposed(got, op.batch, op.seqlen, op.dim), ref_,
                       default_tolerance(op.dtype), {op.batch, op.dim, op.seqlen});
      return CheckResult{r.ok(), r.summary() + "\n" + r.details()};
    };
    m.save_npy = [this, st](const std::string& dir) {
      const Options& op = opt_;
      const std::string path = dir + "/out_" + st.name() + ".npy";
      const bool first = st.layout == Layout::channel_first;
      write_npy(path, tensors(st.layout).out_host,
                first ? std::vector<int64_t>{op.batch, op.dim, op.seqlen}
                      : std::vector<int64_t>{op.batch, op.seqlen, op.dim});
      std::printf("  wrote %s (%s)\n", path.c_str(), first ? "[B, D, L]" : "[B, L, D]");
    };
    return m;
  }

  // What the launch decided from the shape and the flags.
  std::string detail(const Step& st) {
    if (st.idea == "staged" && st.layout == Layout::channel_last)
      return "; " + std::to_string(choices_.staged_rows) + " time steps per thread, " +
             std::to_string(kClStagedDepth) + " batches of " + std::to_string(kTileBatch) +
             " rows on their way";
    if (st.idea == "staged")
      return "; " + std::to_string(kStagedStages) + " tiles of " +
             std::to_string(kStagedVectors * 16 / 1024) +
             " KB a block, in shared memory or on their way";
    if (st.idea == "chunked")
      return "; " + std::to_string(choices_.vectors) + " vector(s) per thread";
    const std::string access =
        std::to_string(cl_columns_access() * dtype_bytes(opt_.dtype)) + "-byte accesses";
    if (st.idea == "tiled")
      return "; " + std::to_string(choices_.rows) + " time steps per thread, " + access;
    if (st.layout == Layout::channel_last && st.idea == "vector") return "; " + access;
    return "";
  }

  Flags flags_;
  std::vector<Step> steps_;
  std::string skipped_;  // a step the shape rules out, said in the header
  Options opt_;
  RandomInputs in_;
  HostArray x_last_;         // x as [B, L, D], until it is uploaded
  std::vector<double> ref_;  // [B, D, L]
  DeviceBuffer weight_, bias_;
  Tensors first_, last_;
  Choices choices_;
};

}  // namespace
}  // namespace conv1d::ch08

int main(int argc, char** argv) {
  conv1d::ch08::DirectForwardChapter chapter;
  return conv1d::run_chapter(argc, argv, chapter);
}
