// Chapter 06, host side: the command line (the presets of the seed notes,
// docs/background.md#the-seeds, and the chapter's own flags), the random problem with its fp64
// reference, and the tolerances the results are held to.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "common/cli.h"
#include "common/npy.h"
#include "common/reference.h"
#include "common/runner.h"
#include "common/tensor.h"
#include "common/verify.h"

namespace conv1d::ch06 {

// The seed notes' six test configurations (all width 4), selectable with --preset NAME.
struct Preset {
  const char* name;
  int64_t batch, dim, seqlen;
  bool bias, silu;
};
inline const std::vector<Preset>& presets() {
  static const std::vector<Preset> all = {
      {"tiny", 1, 32, 64, true, false},      {"small", 2, 64, 256, true, false},
      {"medium", 4, 64, 512, true, false},   {"large", 4, 64, 1024, true, false},
      {"no-bias", 2, 64, 256, false, false}, {"with-silu", 2, 64, 256, true, true},
  };
  return all;
}

struct BwdFlags {
  std::string reduction = "both";  // deterministic, atomic or both
  int64_t tiles_per_block = 0;     // 0: chosen from the shape (plan_backward)
  std::string preset;              // the last --preset given, "" for none
};

inline ChapterSpec chapter_spec() {
  ChapterSpec s;
  s.number = "06";
  s.name = "channel_last_backward";
  s.title = "channel-last backward: dx, dweight, dbias with 64x64 shared-memory tiles and halos";
  s.dtypes = {Dtype::fp32, Dtype::fp16, Dtype::bf16};
  s.bias = s.silu = true;
  s.pass = "backward";
  s.defaults.dtype = Dtype::bf16;
  return s;
}

// A preset sets the shape, width, --bias and --silu where it stands on the command line: flags
// after it override it (`--preset small --batch 8`).
inline std::vector<ExtraFlag> chapter_flags(Options* opt, BwdFlags* f) {
  std::string names;
  for (const Preset& p : presets()) names += (names.empty() ? "" : ", ") + std::string(p.name);
  ExtraFlag preset{
      "--preset",
      "the seed notes' shapes BxDxL, W=4: tiny 1x32x64, small 2x64x256, medium 4x64x512, large "
      "4x64x1024 (with bias); no-bias, with-silu (small's); later flags override",
      true, [=](const std::string& v) -> std::string {
        for (const Preset& p : presets()) {
          if (v != p.name) continue;
          opt->batch = p.batch;
          opt->dim = p.dim;
          opt->seqlen = p.seqlen;
          opt->width = 4;
          opt->bias = p.bias;
          opt->silu = p.silu;
          f->preset = v;
          return "";
        }
        return "--preset must be one of " + names + " (got '" + v + "')";
      }};
  return {preset,
          choice_flag(
              "--reduction", &f->reduction, {"deterministic", "atomic", "both"},
              "how the blocks' dweight/dbias sums are added: partial sums + a fixed-order kernel, "
              "atomics, or both compared (default both)"),
          int_flag("--tiles-per-block", &f->tiles_per_block, 0, 1 << 20,
                   "64-row tiles each block works through (default 0: chosen from the shape)")};
}

struct BwdProblem {
  Options opt;
  ConvShape shape;
  Layout layout = Layout::channel_last;    // of x, dout and dx
  HostArray x, dout;                       // [B, L, D] (or [B, D, L]) in opt.dtype
  HostArray weight, bias;                  // [D, W], [D] (empty without --bias)
  std::vector<double> dx, dweight, dbias;  // fp64 reference: like x, [D, W], [D]
  Tolerance dx_tol{}, dweight_tol{}, dbias_tol{};
  // The dimensions of x, dout and dx in their layout, for .npy files and error messages.
  std::vector<int64_t> dims() const {
    return layout == Layout::channel_last ? std::vector<int64_t>{opt.batch, opt.seqlen, opt.dim}
                                          : std::vector<int64_t>{opt.batch, opt.dim, opt.seqlen};
  }
};

// [docs:ch06_tolerance]
// dweight[d, k] and dbias[d] are sums of B*L terms, so "1e-3 relative to the magnitudes" (the
// reference library's tests, docs/background.md#verification-tolerances) needs a magnitude for a
// sum: we take the root of the sum of its terms' squares (the size a sum of that many random terms
// has), its mean square over all outputs of the tensor, times 1e-3, as atol;
// rtol is 1e-3. Losing a single 64-row tile moves a sum by about 8/sqrt(B*L) of that magnitude: 4 %
// at the benchmark's B*L = 32768, far outside the tolerance (the tests check that it is caught).
inline Tolerance sum_tolerance(double sum_of_squared_terms, int64_t outputs) {
  return {1e-3 * std::sqrt(sum_of_squared_terms / static_cast<double>(outputs)), 1e-3};
}
// [/docs:ch06_tolerance]

// Random x, dout, weight (and bias) in opt.dtype, in `layout` (chapter 06: channel-last); the fp64
// reference of the backward computed from exactly those values, and the tolerances from the sizes of
// its sums' terms.
inline BwdProblem make_backward_problem(const Options& opt, Layout layout = Layout::channel_last) {
  BwdProblem p;
  p.opt = opt;
  p.layout = layout;
  p.shape = ConvShape{opt.batch, opt.dim, opt.seqlen, opt.width};
  const int64_t D = opt.dim, W = opt.width, n = p.shape.elements();
  RandomInputs in = draw_inputs(opt);  // x, weight and bias as every chapter draws them
  p.x = std::move(in.x);
  p.weight = std::move(in.weight);
  p.bias = std::move(in.bias);
  p.dout = HostArray(opt.dtype, n);
  fill_uniform(p.dout, opt.seed + 3, -1.0, 1.0);
  const std::vector<double> x = p.x.to_double(), g = p.dout.to_double(), w = p.weight.to_double();
  const std::vector<double> bias = p.bias.to_double();

  RefProblem rp;
  rp.shape = p.shape;
  rp.layout = layout;
  rp.x = x.data();
  rp.weight = w.data();
  rp.bias = opt.bias ? bias.data() : nullptr;
  rp.silu = opt.silu;
  p.dx.resize(n);
  p.dweight.resize(D * W);
  p.dbias.resize(D);
  std::vector<double> dweight_sq(D * W), dbias_sq(D);
  reference_backward(rp, g.data(),
                     RefGrads{p.dx.data(), p.dweight.data(), p.dbias.data(), nullptr,
                              dweight_sq.data(), dbias_sq.data()});

  double sum_sq_w = 0, sum_sq_b = 0;
  for (double v : dweight_sq) sum_sq_w += v;
  for (double v : dbias_sq) sum_sq_b += v;
  p.dx_tol = default_tolerance(opt.dtype);
  p.dweight_tol = sum_tolerance(sum_sq_w, D * W);
  p.dbias_tol = sum_tolerance(sum_sq_b, D);
  return p;
}

// The results of one run on the host: dx in the storage type and the problem's layout, dweight [D, W]
// and dbias [D] in fp32.
struct BwdOutputs {
  HostArray dx;
  std::vector<float> dweight, dbias;
};

inline BwdOutputs empty_outputs(const BwdProblem& p) {
  BwdOutputs o;
  o.dx = HostArray(p.opt.dtype, p.x.size());
  o.dweight.assign(p.shape.dim * p.shape.width, 0.0f);
  o.dbias.assign(p.shape.dim, 0.0f);
  return o;
}

// Every output NaN on the host, before a verification run copies the device's back.
inline void poison(BwdOutputs& o) {
  o.dx.fill_nan();
  std::fill(o.dweight.begin(), o.dweight.end(), std::nanf(""));
  std::fill(o.dbias.begin(), o.dbias.end(), std::nanf(""));
}

// dx, dweight and dbias against the reference, within their tolerances; dx in the problem's layout.
inline CheckResult check_backward(const BwdProblem& p, const BwdOutputs& out) {
  const Options& o = p.opt;
  const std::vector<double> dw(out.dweight.begin(), out.dweight.end());
  const std::vector<double> db(out.dbias.begin(), out.dbias.end());
  const VerifyReport rx = verify("dx", out.dx, p.dx, p.dx_tol, p.dims());
  const VerifyReport rw = verify("dweight", dw, p.dweight, p.dweight_tol, {o.dim, o.width});
  const VerifyReport rb = verify("dbias", db, p.dbias, p.dbias_tol, {o.dim});
  CheckResult c;
  c.ok = rx.ok() && rw.ok() && rb.ok();
  c.text = rx.summary() + "\n" + rx.details() + "  " + rw.summary() + "\n" + rw.details() + "  " +
           rb.summary() + "\n" + rb.details();
  return c;
}

// --save-npy: the inputs and the fp64 references.
inline void save_backward_inputs(const BwdProblem& p, const std::string& dir) {
  const Options& o = p.opt;
  write_npy(dir + "/x.npy", p.x, p.dims());
  write_npy(dir + "/dout.npy", p.dout, p.dims());
  write_npy(dir + "/weight.npy", p.weight, {o.dim, o.width});
  if (o.bias) write_npy(dir + "/bias.npy", p.bias, {o.dim});
  write_npy(dir + "/dx_reference.npy", p.dx, p.dims());
  write_npy(dir + "/dweight_reference.npy", p.dweight, {o.dim, o.width});
  write_npy(dir + "/dbias_reference.npy", p.dbias, {o.dim});
  std::printf("wrote x, dout, weight%s (%s) and the fp64 references to %s\n",
              o.bias ? ", bias" : "", p.layout == Layout::channel_last ? "[B, L, D]" : "[B, D, L]",
              dir.c_str());
}

// --save-npy: one variant's outputs; dx in `dims` (its layout).
inline void save_backward_outputs(const std::string& name, const BwdOutputs& out, const Options& o,
                                  const std::vector<int64_t>& dims, const std::string& dir) {
  write_npy(dir + "/dx_" + name + ".npy", out.dx, dims);
  write_npy(dir + "/dweight_" + name + ".npy", out.dweight.data(), "<f4", {o.dim, o.width});
  write_npy(dir + "/dbias_" + name + ".npy", out.dbias.data(), "<f4", {o.dim});
  std::printf("  wrote dx_%s.npy, dweight_%s.npy, dbias_%s.npy\n", name.c_str(), name.c_str(),
              name.c_str());
}

// Two ways of adding up the same numbers: how far apart dweight and dbias land.
inline void compare_sums(const BwdProblem& p, const std::string& a_name, const BwdOutputs& a,
                         const std::string& b_name, const BwdOutputs& b) {
  auto max_diff = [](const std::vector<float>& u, const std::vector<float>& v) {
    double m = 0;
    for (size_t i = 0; i < u.size(); ++i) m = std::max(m, std::fabs(double(u[i]) - double(v[i])));
    return m;
  };
  const double dw = max_diff(a.dweight, b.dweight), db = max_diff(a.dbias, b.dbias);
  const bool same = same_bits(a.dweight, b.dweight) && same_bits(a.dbias, b.dbias);
  std::printf(
      "\n%s vs %s: dweight max |difference| %.3e (%.3f of its atol), dbias %.3e (%.3f of its "
      "atol); %s\n",
      a_name.c_str(), b_name.c_str(), dw, dw / p.dweight_tol.atol, db, db / p.dbias_tol.atol,
      same ? "bitwise identical"
           : "not bitwise identical (atomics add in the order the blocks finish)");
}

}  // namespace conv1d::ch06
