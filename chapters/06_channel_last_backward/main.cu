// Chapter 06 - the backward pass in channel-last layout. See docs/06_channel_last_backward.md.
//
// The kernels are in backward_kernel.cuh, one run of them in pipeline.cuh; this file is the chapter on
// the frame every chapter runs in (common/runner.h): its rate model, the check of dx, dweight and
// dbias against the fp64 reference, and its variants, the two ways of adding up dweight and dbias
// (--reduction), measured one after the other on the same inputs.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "chapters/06_channel_last_backward/pipeline.cuh"
#include "common/npy.h"
#include "common/runner.h"
#include "common/verify.h"

namespace conv1d::ch06 {
namespace {

// The bytes the goal counts: x and dout read once, dx written once (halos and partial sums are
// extra).
double tensor_bytes(const Options& o) {
  return 3.0 * o.batch * o.dim * o.seqlen * dtype_bytes(o.dtype);
}

std::vector<KernelModel> kernel_models(const Options& o, const BwdPlan& plan) {
  const double n = double(o.batch) * o.dim * o.seqlen, w = o.width;
  const double sum_bytes = double(o.dim) * (w + 1) * 4;  // dweight and dbias
  // Per element: W multiply-adds for dx and W for dweight, one add for dbias; with SiLU z once more
  // (W multiply-adds) and silu'(z) (about 8 operations).
  std::vector<KernelModel> m{
      {"conv_bwd_channel_last", n * (4 * w + 1 + (o.silu ? 2 * w + 8 : 0)), tensor_bytes(o)}};
  const double partials = double(plan.partial_floats(o.width, o.dim));
  if (plan.sink == GradSink::partials)
    m.push_back({"reduce_weight_grads", partials, partials * 4 + sum_bytes});
  if (plan.sink == GradSink::atomics) m.push_back({"memset dweight, dbias", 0, sum_bytes});
  return m;
}

std::string describe(const BwdPlan& p, const Options& o) {
  char buf[256];
  const char* sink = p.sink == GradSink::partials       ? "partial sums + reduce_weight_grads"
                     : p.sink == GradSink::final_values ? "one block row: sums written directly"
                                                        : "atomics into dweight, dbias";
  std::snprintf(
      buf, sizeof buf,
      "grid %lld x %lld blocks of %d threads, tile %dx%d, %lld tile(s) per block, %s (%.2f MB)",
      static_cast<long long>(p.blocks_x), static_cast<long long>(p.blocks_y), DefaultTile::kThreads,
      DefaultTile::kRows, DefaultTile::kChannels, static_cast<long long>(p.tiles_per_block), sink,
      p.partial_floats(o.width, o.dim) * 4e-6);
  return buf;
}

// One way of reducing dweight and dbias, and what its runs left on the host.
struct VariantState {
  Reduction reduction;
  BwdPlan plan;
  std::string name;
  BwdOutputs out;
  std::vector<float> first_dweight, first_dbias;  // deterministic: the first run's bits
};

// The check of one run: dx, dweight and dbias against the reference; with the deterministic sums,
// dweight and dbias also the same bits as the first run's.
CheckResult check_outputs(const BwdProblem& p, VariantState& st) {
  CheckResult c = check_backward(p, st.out);
  if (st.reduction == Reduction::deterministic) {
    if (st.first_dweight.empty()) {
      st.first_dweight = st.out.dweight;
      st.first_dbias = st.out.dbias;
    } else {
      const bool same =
          same_bits(st.first_dweight, st.out.dweight) && same_bits(st.first_dbias, st.out.dbias);
      c.text += std::string("  dweight and dbias bitwise identical to the first run: ") +
                (same ? "yes" : "NO") + "\n";
      c.ok = c.ok && same;
    }
  }
  return c;
}

MeasuredVariant make_variant(const BwdProblem& p, BwdBuffers& buf, VariantState& st) {
  MeasuredVariant m;
  m.name = st.name;
  m.kernels = kernel_models(p.opt, st.plan);
  m.run = [&p, &buf, &st](RunContext& ctx) {
    if (ctx.poison_outputs) {  // verification runs: NaN on both sides, results copied back afterwards
      poison_outputs(buf);
      poison(st.out);
    }
    run_backward(buf, p, st.plan, ctx.rec);
    if (ctx.poison_outputs)
      ctx.rec.d2h("copy dx, dweight, dbias to host", [&] { download_outputs(buf, st.out); });
  };
  m.check = [&p, &st] { return check_outputs(p, st); };
  m.save_npy = [&p, &st](const std::string& dir) {
    save_backward_outputs(st.name, st.out, p.opt, p.dims(), dir);
  };
  // The whole backward (every kernel of a run) against the same bytes: the figure the goal is
  // about.
  m.whole_run_name = "whole backward";
  m.whole_run_bytes = tensor_bytes(p.opt);
  return m;
}

// The chapter on the frame (common/runner.h): its flags, memory, problem, variants and report.
class BackwardChapter : public Chapter {
 public:
  BackwardChapter() : Chapter(chapter_spec()) {}

  std::vector<ExtraFlag> flags(Options* opt) override { return chapter_flags(opt, &flags_); }

  MemoryNeed memory(const Frame& f) override {
    make_states(f.opt);
    const Options& opt = f.opt;
    const ConvShape shape{opt.batch, opt.dim, opt.seqlen, opt.width};
    const int64_t n = shape.elements(), e = dtype_bytes(opt.dtype);
    MemoryNeed need;
    need.device_bytes = problem_device_bytes(opt, partial_floats_);
    // x, dout and one dx per variant in the storage type; x, dout, the reference dx in fp64; the
    // reference's scratch.
    need.host_bytes =
        n * (int64_t(2 + states_.size()) * e + 3 * 8) + reference_backward_scratch_bytes(shape);
    return need;
  }

  void describe(const Frame& f) override {
    if (!flags_.preset.empty())
      std::printf("preset: %s (flags after --preset override it)\n", flags_.preset.c_str());
    for (const auto& st : states_)
      std::printf("%s: %s\n", st->name.c_str(), ch06::describe(st->plan, f.opt).c_str());
  }

  std::string make_problem(const Frame& f) override {
    p_ = make_backward_problem(f.opt);
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "; tolerances: dx atol %.0e + rtol %.0e, dweight atol %.3e + rtol %.0e, "
                  "dbias atol %.3e + rtol %.0e",
                  p_.dx_tol.atol, p_.dx_tol.rtol, p_.dweight_tol.atol, p_.dweight_tol.rtol,
                  p_.dbias_tol.atol, p_.dbias_tol.rtol);
    return buf;
  }

  void save_inputs(const std::string& dir) override { save_backward_inputs(p_, dir); }

  std::vector<MeasuredVariant> variants(const Frame&) override {
    buf_ = upload_problem(p_, partial_floats_);
    std::vector<MeasuredVariant> vs;
    for (const auto& st : states_) {
      st->out = empty_outputs(p_);
      vs.push_back(make_variant(p_, buf_, *st));
    }
    return vs;
  }

  void report(const Frame&, std::vector<VariantResult>&) override {
    if (states_.size() == 2)
      compare_sums(p_, states_[0]->name, states_[0]->out, states_[1]->name, states_[1]->out);
  }

 private:
  // One state per reduction asked for (--reduction), with its plan.
  void make_states(const Options& opt) {
    const ConvShape shape{opt.batch, opt.dim, opt.seqlen, opt.width};
    for (Reduction r : {Reduction::deterministic, Reduction::atomic}) {
      const bool det = r == Reduction::deterministic;
      if (flags_.reduction != "both" && flags_.reduction != (det ? "deterministic" : "atomic"))
        continue;
      auto st = std::make_unique<VariantState>();
      st->reduction = r;
      st->plan = plan_backward(shape, r, flags_.tiles_per_block);
      st->name = std::string(det ? "deterministic" : "atomic") +
                 (flags_.tiles_per_block ? "@" + std::to_string(st->plan.tiles_per_block) : "");
      partial_floats_ = std::max(partial_floats_, st->plan.partial_floats(opt.width, opt.dim));
      states_.push_back(std::move(st));
    }
  }

  BwdFlags flags_;
  std::vector<std::unique_ptr<VariantState>> states_;
  int64_t partial_floats_ = 0;
  BwdProblem p_;
  BwdBuffers buf_;
};

}  // namespace
}  // namespace conv1d::ch06

int main(int argc, char** argv) {
  conv1d::ch06::BackwardChapter chapter;
  return conv1d::run_chapter(argc, argv, chapter);
}
