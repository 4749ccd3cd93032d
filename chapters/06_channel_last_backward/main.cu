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

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

CheckResult check_outputs(const BwdProblem& p, VariantState& st) {
  const Options& o = p.opt;
  const std::vector<double> dw(st.out.dweight.begin(), st.out.dweight.end());
  const std::vector<double> db(st.out.dbias.begin(), st.out.dbias.end());
  const VerifyReport rx = verify("dx", st.out.dx, p.dx, p.dx_tol, {o.batch, o.seqlen, o.dim});
  const VerifyReport rw = verify("dweight", dw, p.dweight, p.dweight_tol, {o.dim, o.width});
  const VerifyReport rb = verify("dbias", db, p.dbias, p.dbias_tol, {o.dim});
  CheckResult c;
  c.ok = rx.ok() && rw.ok() && rb.ok();
  c.text = rx.summary() + "\n" + rx.details() + "  " + rw.summary() + "\n" + rw.details() + "  " +
           rb.summary() + "\n" + rb.details();
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

void save_inputs(const BwdProblem& p, const std::string& dir) {
  const Options& o = p.opt;
  write_npy(dir + "/x.npy", p.x, {o.batch, o.seqlen, o.dim});
  write_npy(dir + "/dout.npy", p.dout, {o.batch, o.seqlen, o.dim});
  write_npy(dir + "/weight.npy", p.weight, {o.dim, o.width});
  if (o.bias) write_npy(dir + "/bias.npy", p.bias, {o.dim});
  write_npy(dir + "/dx_reference.npy", p.dx, {o.batch, o.seqlen, o.dim});
  write_npy(dir + "/dweight_reference.npy", p.dweight, {o.dim, o.width});
  write_npy(dir + "/dbias_reference.npy", p.dbias, {o.dim});
  std::printf("wrote x, dout, weight%s ([B, L, D] and [D, W]) and the fp64 references to %s\n",
              o.bias ? ", bias" : "", dir.c_str());
}

void save_outputs(const VariantState& st, const Options& o, const std::string& dir) {
  write_npy(dir + "/dx_" + st.name + ".npy", st.out.dx, {o.batch, o.seqlen, o.dim});
  write_npy(dir + "/dweight_" + st.name + ".npy", st.out.dweight.data(), "<f4", {o.dim, o.width});
  write_npy(dir + "/dbias_" + st.name + ".npy", st.out.dbias.data(), "<f4", {o.dim});
  std::printf("  wrote dx_%s.npy, dweight_%s.npy, dbias_%s.npy\n", st.name.c_str(), st.name.c_str(),
              st.name.c_str());
}

MeasuredVariant make_variant(const BwdProblem& p, BwdBuffers& buf, VariantState& st) {
  MeasuredVariant m;
  m.name = st.name;
  m.kernels = kernel_models(p.opt, st.plan);
  m.run = [&p, &buf, &st](RunContext& ctx) {
    if (ctx.poison_outputs) {  // verification runs: NaN on both sides, results copied back afterwards
      poison_outputs(buf);
      st.out.dx.fill_nan();
      std::fill(st.out.dweight.begin(), st.out.dweight.end(), std::nanf(""));
      std::fill(st.out.dbias.begin(), st.out.dbias.end(), std::nanf(""));
    }
    run_backward(buf, p, st.plan, ctx.rec);
    if (ctx.poison_outputs)
      ctx.rec.d2h("copy dx, dweight, dbias to host", [&] { download_outputs(buf, st.out); });
  };
  m.check = [&p, &st] { return check_outputs(p, st); };
  m.save_npy = [&p, &st](const std::string& dir) { save_outputs(st, p.opt, dir); };
  // The whole backward (every kernel of a run) against the same bytes: the figure the goal is
  // about.
  m.whole_run_name = "whole backward";
  m.whole_run_bytes = tensor_bytes(p.opt);
  return m;
}

// With --reduction both: how far apart the two ways of adding up the same numbers land.
void compare_reductions(const BwdProblem& p, const VariantState& a, const VariantState& b) {
  auto max_diff = [](const std::vector<float>& u, const std::vector<float>& v) {
    double m = 0;
    for (size_t i = 0; i < u.size(); ++i) m = std::max(m, std::fabs(double(u[i]) - double(v[i])));
    return m;
  };
  const double dw = max_diff(a.out.dweight, b.out.dweight), db = max_diff(a.out.dbias, b.out.dbias);
  const bool same = same_bits(a.out.dweight, b.out.dweight) && same_bits(a.out.dbias, b.out.dbias);
  std::printf(
      "\n%s vs %s: dweight max |difference| %.3e (%.3f of its atol), dbias %.3e (%.3f of its "
      "atol); %s\n",
      a.name.c_str(), b.name.c_str(), dw, dw / p.dweight_tol.atol, db, db / p.dbias_tol.atol,
      same ? "bitwise identical"
           : "not bitwise identical (atomics add in the order the blocks finish)");
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

  void save_inputs(const std::string& dir) override { ch06::save_inputs(p_, dir); }

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
    if (states_.size() == 2) compare_reductions(p_, *states_[0], *states_[1]);
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
