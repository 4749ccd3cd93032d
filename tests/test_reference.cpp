// Tests of the fp64 CPU reference (common/reference.h), the oracle every chapter is checked against.
//
// The reference is checked against things that do not share its code:
//   - tiny cases worked out by hand, written as literals;
//   - the GEMM formulation of the seed notes (transpose, pad, img2col, dense expanded weights),
//     built here from scratch;
//   - central finite differences of the forward, for every gradient;
//   - packed sequences (seq_idx) against the same sequences run one by one without seq_idx;
//   - the two layouts against each other;
//   - a row run as chunks that pass their states (and, backwards, their state gradients) along,
//     against the same row in one pass; a variable-length batch against one packed row and against
//     its sequences one by one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common/reference.h"

namespace {

using conv1d::ConvShape;
using conv1d::Layout;
using conv1d::RefGrads;
using conv1d::RefProblem;

// splitmix64, local to the tests so that they do not depend on tensor.cpp.
struct TestRng {
  uint64_t state;
  explicit TestRng(uint64_t seed) : state(seed) {}
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform(double lo, double hi) {  // [lo, hi)
    return lo + (hi - lo) * static_cast<double>(next() >> 11) * 0x1.0p-53;
  }
  int64_t range(int64_t lo, int64_t hi) {  // [lo, hi]
    return lo + static_cast<int64_t>(next() % static_cast<uint64_t>(hi - lo + 1));
  }
};

// Index arithmetic written out here rather than taken from tensor.h.
int64_t idx(Layout l, const ConvShape& s, int64_t b, int64_t d, int64_t t) {
  if (l == Layout::channel_first) return (b * s.dim + d) * s.seqlen + t;
  return (b * s.seqlen + t) * s.dim + d;
}

// A problem that owns its arrays; empty vectors mean "not given".
struct Problem {
  ConvShape shape;
  Layout layout = Layout::channel_first;
  bool silu = false;
  std::vector<double> x, weight, bias, init;
  std::vector<int32_t> seq;

  int64_t states() const { return shape.batch * shape.dim * (shape.width - 1); }
  RefProblem view() const {
    RefProblem p;
    p.shape = shape;
    p.layout = layout;
    p.x = x.data();
    p.weight = weight.data();
    p.bias = bias.empty() ? nullptr : bias.data();
    p.initial_states = init.empty() ? nullptr : init.data();
    p.seq_idx = seq.empty() ? nullptr : seq.data();
    p.silu = silu;
    return p;
  }
};

ConvShape make_shape(int64_t B, int64_t D, int64_t L, int W) {
  ConvShape s;
  s.batch = B;
  s.dim = D;
  s.seqlen = L;
  s.width = W;
  return s;
}

std::vector<double> random_vec(TestRng& r, int64_t n, double lo = -1.0, double hi = 1.0) {
  std::vector<double> v(static_cast<size_t>(n));
  for (double& e : v) e = r.uniform(lo, hi);
  return v;
}

// seq_idx rows made of contiguous runs with increasing ids, some runs being padding (-1).
std::vector<int32_t> random_seq_idx(TestRng& r, const ConvShape& s) {
  std::vector<int32_t> seq(static_cast<size_t>(s.batch * s.seqlen));
  for (int64_t b = 0; b < s.batch; ++b) {
    int32_t id = 0;
    int64_t t = 0;
    while (t < s.seqlen) {
      const int64_t run = r.range(1, 4);
      const int32_t v = r.range(0, 3) == 0 ? -1 : id++;
      for (int64_t i = 0; i < run && t < s.seqlen; ++i, ++t) seq[b * s.seqlen + t] = v;
    }
  }
  return seq;
}

Problem random_problem(TestRng& r, const ConvShape& s, Layout layout, bool bias, bool init,
                       bool silu, bool seq) {
  Problem p;
  p.shape = s;
  p.layout = layout;
  p.silu = silu;
  p.x = random_vec(r, s.elements());
  p.weight = random_vec(r, s.dim * s.width);
  if (bias) p.bias = random_vec(r, s.dim);
  if (init) p.init = random_vec(r, p.states());
  if (seq) p.seq = random_seq_idx(r, s);
  return p;
}

struct ForwardResult {
  std::vector<double> out, final_states;
};

ForwardResult forward(const Problem& p) {
  ForwardResult r;
  r.out.assign(static_cast<size_t>(p.shape.elements()), std::nan(""));
  r.final_states.assign(static_cast<size_t>(p.states()), std::nan(""));
  conv1d::reference_forward(p.view(), r.out.data(), r.final_states.data());
  return r;
}

struct Grads {
  std::vector<double> dx, dweight, dbias, dinit;
};

Grads backward(const Problem& p, const std::vector<double>& dout,
               const std::vector<double>& dfinal = {}) {
  Grads g;
  const double nan = std::nan("");
  g.dx.assign(p.x.size(), nan);
  g.dweight.assign(p.weight.size(), nan);
  g.dbias.assign(static_cast<size_t>(p.shape.dim), nan);
  g.dinit.assign(static_cast<size_t>(p.states()), nan);
  RefGrads rg;
  rg.dx = g.dx.data();
  rg.dweight = g.dweight.data();
  rg.dbias = g.dbias.data();
  rg.dinitial_states = g.dinit.data();
  conv1d::reference_backward(p.view(), dout.data(), rg, dfinal.empty() ? nullptr : dfinal.data());
  return g;
}

// |got - want| <= atol + rtol * |want| element by element; NaN fails.
void expect_close(const std::vector<double>& got, const std::vector<double>& want, double atol,
                  double rtol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int reported = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const bool ok = std::fabs(got[i] - want[i]) <= atol + rtol * std::fabs(want[i]);
    if (!ok && reported++ < 5)
      ADD_FAILURE() << what << "[" << i << "]: got " << got[i] << ", want " << want[i];
  }
}

void expect_exact(const std::vector<double>& got, const std::vector<double>& want,
                  const std::string& what) {
  expect_close(got, want, 0.0, 0.0, what);
}

std::string describe(const Problem& p) {
  return "B=" + std::to_string(p.shape.batch) + " D=" + std::to_string(p.shape.dim) +
         " L=" + std::to_string(p.shape.seqlen) + " W=" + std::to_string(p.shape.width) +
         (p.layout == Layout::channel_first ? " channel_first" : " channel_last") +
         (p.bias.empty() ? "" : " bias") + (p.init.empty() ? "" : " init") +
         (p.seq.empty() ? "" : " seq_idx") + (p.silu ? " silu" : "");
}

// A one-channel, one-batch problem from literals.
Problem tiny(std::vector<double> x, std::vector<double> w) {
  Problem p;
  p.shape = make_shape(1, 1, static_cast<int64_t>(x.size()), static_cast<int>(w.size()));
  p.x = std::move(x);
  p.weight = std::move(w);
  return p;
}

// ---------------------------------------------------------------------------------------------
// silu

TEST(ReferenceSilu, KnownValues) {
  EXPECT_EQ(conv1d::silu(0.0), 0.0);
  EXPECT_EQ(conv1d::silu_grad(0.0), 0.5);
  EXPECT_NEAR(conv1d::silu(1.0), 0.7310585786300049, 1e-15);
  EXPECT_NEAR(conv1d::silu(-1.0), -0.2689414213699951, 1e-15);
  EXPECT_NEAR(conv1d::silu(2.5), 2.3103545499468914, 1e-15);
  EXPECT_NEAR(conv1d::silu_grad(1.0), 0.9276705118714869, 1e-15);
  EXPECT_NEAR(conv1d::silu_grad(-1.0), 0.07232948812851325, 1e-15);
  EXPECT_NEAR(conv1d::silu_grad(-3.0), -0.08810410601516962, 1e-15);
}

TEST(ReferenceSilu, LargeArgumentsStayFinite) {
  for (double z : {-1000.0, -750.0, -40.0, 40.0, 750.0, 1000.0}) {
    const double s = conv1d::silu(z), g = conv1d::silu_grad(z);
    EXPECT_TRUE(std::isfinite(s)) << "silu(" << z << ") = " << s;
    EXPECT_TRUE(std::isfinite(g)) << "silu_grad(" << z << ") = " << g;
  }
  EXPECT_EQ(conv1d::silu(1000.0), 1000.0);
  EXPECT_EQ(conv1d::silu(-1000.0), 0.0);
  EXPECT_EQ(conv1d::silu_grad(1000.0), 1.0);
  EXPECT_EQ(conv1d::silu_grad(-1000.0), 0.0);
}

TEST(ReferenceSilu, GradMatchesFiniteDifference) {
  const double h = 1e-6;
  for (double z = -12.0; z <= 12.0; z += 0.37) {
    const double fd = (conv1d::silu(z + h) - conv1d::silu(z - h)) / (2 * h);
    EXPECT_NEAR(conv1d::silu_grad(z), fd, 1e-8) << "z = " << z;
  }
}

// ---------------------------------------------------------------------------------------------
// Forward by hand. Convention: weight[k] multiplies x[t-(W-1)+k], so the last tap is the current
// input. With x = 1 2 3 4 and w = 1 2 3:
//   out[t] = 1*x[t-2] + 2*x[t-1] + 3*x[t]  =  3, 2+6, 1+4+9, 2+6+12  =  3 8 14 20

TEST(ReferenceForwardHand, Plain) {
  const Problem p = tiny({1, 2, 3, 4}, {1, 2, 3});
  expect_exact(forward(p).out, {3, 8, 14, 20}, "out");
}

TEST(ReferenceForwardHand, Bias) {
  Problem p = tiny({1, 2, 3, 4}, {1, 2, 3});
  p.bias = {10};
  expect_exact(forward(p).out, {13, 18, 24, 30}, "out");
}

TEST(ReferenceForwardHand, SiluOfHandValues) {
  Problem p = tiny({1, 0, -1}, {1, 1});  // z = 1, 1, -1
  p.silu = true;
  expect_close(forward(p).out, {0.7310585786300049, 0.7310585786300049, -0.2689414213699951}, 1e-15,
               0, "out");
}

TEST(ReferenceForwardHand, TwoChannelsTwoBatchesBothLayouts) {
  // B=2, D=2, L=3, W=2; channel d uses w[d] = (a, c): out[t] = a*x[t-1] + c*x[t].
  // x (channel first) b0: d0 = 1 2 3, d1 = 4 5 6;  b1: d0 = -1 0 1, d1 = 2 2 2
  // w: d0 = (1, 10), d1 = (2, -1); bias d0 = 0.5, d1 = 0
  // b0 d0: 10, 1+20, 2+30 = 10 21 32      b0 d1: -4, 8-5, 10-6 = -4 3 4
  // b1 d0: -10, -1+0, 0+10 = -10 -1 10    b1 d1: -2, 4-2, 4-2 = -2 2 2
  Problem p;
  p.shape = make_shape(2, 2, 3, 2);
  p.x = {1, 2, 3, 4, 5, 6, -1, 0, 1, 2, 2, 2};
  p.weight = {1, 10, 2, -1};
  p.bias = {0.5, 0};
  const std::vector<double> want_cf = {10.5, 21.5, 32.5, -4, 3, 4, -9.5, -0.5, 10.5, -2, 2, 2};
  expect_exact(forward(p).out, want_cf, "channel_first out");

  // Same data in [B, L, D].
  Problem q = p;
  q.layout = Layout::channel_last;
  q.x = {1, 4, 2, 5, 3, 6, -1, 2, 0, 2, 1, 2};
  expect_exact(forward(q).out, {10.5, -4, 21.5, 3, 32.5, 4, -9.5, -2, -0.5, 2, 10.5, 2},
               "channel_last out");
}

TEST(ReferenceForwardHand, InitialStatesAndFinalStates) {
  // initial states (5, 6) stand at s = -2, -1:
  //   out = 5+12+3, 6+2+6, 1+4+9, 2+6+12 = 20 14 14 20; final states = x[2], x[3] = 3 4
  Problem p = tiny({1, 2, 3, 4}, {1, 2, 3});
  p.init = {5, 6};
  const ForwardResult r = forward(p);
  expect_exact(r.out, {20, 14, 14, 20}, "out");
  expect_exact(r.final_states, {3, 4}, "final_states");

  // Without initial states the final states are the same (they are the last inputs).
  p.init.clear();
  expect_exact(forward(p).final_states, {3, 4}, "final_states without init");
}

TEST(ReferenceForwardHand, FinalStatesShorterThanWindow) {
  // L = 1 < W-1 = 3: final states = xin(-2), xin(-1), xin(0).
  Problem p = tiny({7}, {1, 2, 3, 4});
  p.init = {1, 2, 3};
  ForwardResult r = forward(p);
  expect_exact(r.out, {1 * 1 + 2 * 2 + 3 * 3 + 4 * 7}, "out");  // 42
  expect_exact(r.final_states, {2, 3, 7}, "final_states with init");

  p.init.clear();
  r = forward(p);
  expect_exact(r.out, {28}, "out without init");
  expect_exact(r.final_states, {0, 0, 7}, "final_states without init");

  // L = W-1 exactly: the final states are x itself.
  Problem q = tiny({7, 8, 9}, {1, 2, 3, 4});
  q.init = {1, 2, 3};
  expect_exact(forward(q).final_states, {7, 8, 9}, "final_states, L = W-1");
}

TEST(ReferenceForwardHand, WidthOne) {
  // W = 1: a per-channel scale, no states at all.
  Problem p = tiny({1, -2, 3}, {2});
  p.bias = {1};
  const ForwardResult r = forward(p);
  expect_exact(r.out, {3, -3, 7}, "out");
  EXPECT_TRUE(r.final_states.empty());
}

TEST(ReferenceForwardHand, SeqIdxWithPadding) {
  // seq = 0 0 1 1 1 -1, x = 1..6, w = 1 2 3, bias 0.5:
  //   t0 (seq 0): 3*1 = 3             t1 (seq 0): 2*1 + 3*2 = 8
  //   t2 (seq 1): 3*3 = 9 (x0, x1 are in seq 0)
  //   t3 (seq 1): 2*3 + 3*4 = 18      t4 (seq 1): 3 + 8 + 15 = 26
  //   t5: padding -> exactly 0, no bias
  Problem p = tiny({1, 2, 3, 4, 5, 6}, {1, 2, 3});
  p.bias = {0.5};
  p.seq = {0, 0, 1, 1, 1, -1};
  const ForwardResult r = forward(p);
  expect_exact(r.out, {3.5, 8.5, 9.5, 18.5, 26.5, 0}, "out");
  // The row ends in padding: no sequence to carry on, the final states are 0.
  expect_exact(r.final_states, {0, 0}, "final_states");
  // Without the padding the last sequence keeps its inputs (x4, x5); one that ends after a single
  // input keeps only that one.
  p.seq = {0, 0, 1, 1, 1, 1};
  expect_exact(forward(p).final_states, {5, 6}, "final_states, last sequence");
  p.seq = {0, 0, 1, 1, 1, 2};
  expect_exact(forward(p).final_states, {0, 6}, "final_states, last sequence of length 1");

  // Padding gives exactly 0 with SiLU too (silu(bias) would not be 0).
  p.seq = {0, 0, 1, 1, 1, -1};
  p.silu = true;
  EXPECT_EQ(forward(p).out[5], 0.0);
}

TEST(ReferenceForwardHand, SeqIdxIsEqualityNotContiguity) {
  // seq = 0 1 0: t2 sees x0 (same id) but not x1.  out = 3*1, 3*2, 1*1 + 3*3 = 3 6 10
  Problem p = tiny({1, 2, 3}, {1, 2, 3});
  p.seq = {0, 1, 0};
  expect_exact(forward(p).out, {3, 6, 10}, "out");
}

// ---------------------------------------------------------------------------------------------
// Backward by hand. x = 1 2 3 4, w = 1 2 3, initial states (5, 6), dout = 1 0 2 -1 (no SiLU, so
// dz = dout). dx[s] = sum_k w[k] dz[s+2-k]:
//   dx = 1*2 + 2*0 + 3*1, 1*(-1) + 2*2 + 3*0, 2*(-1) + 3*2, 3*(-1) = 5 3 4 -3
// xin over s = -2..3 is 5 6 1 2 3 4; dweight[k] = sum_t dz[t] xin(t-2+k):
//   k0: 5*1 + 1*2 + 2*(-1) = 5;  k1: 6*1 + 2*2 + 3*(-1) = 7;  k2: 1*1 + 3*2 + 4*(-1) = 3
// dbias = 1 + 0 + 2 - 1 = 2
// dinit[0] (s = -2) feeds t0 via k0: 1*1 = 1; dinit[1] (s = -1) feeds t1 via k0, t0 via k1: 0 + 2 = 2

TEST(ReferenceBackwardHand, InitialStates) {
  Problem p = tiny({1, 2, 3, 4}, {1, 2, 3});
  p.init = {5, 6};
  p.bias = {100};  // does not change any gradient without SiLU
  const Grads g = backward(p, {1, 0, 2, -1});
  expect_exact(g.dx, {5, 3, 4, -3}, "dx");
  expect_exact(g.dweight, {5, 7, 3}, "dweight");
  expect_exact(g.dbias, {2}, "dbias");
  expect_exact(g.dinit, {1, 2}, "dinitial_states");

  // Without initial states: dx and dinit are unchanged (they do not depend on the states), the
  // state terms leave dweight: k0: 1*2 + 2*(-1) = 0; k1: 2*2 + 3*(-1) = 1; k2 unchanged = 3.
  p.init.clear();
  const Grads h = backward(p, {1, 0, 2, -1});
  expect_exact(h.dx, {5, 3, 4, -3}, "dx without init");
  expect_exact(h.dweight, {0, 1, 3}, "dweight without init");
  expect_exact(h.dinit, {1, 2}, "dinitial_states without init");
}

TEST(ReferenceBackwardHand, SeqIdxWithPadding) {
  // x = 1 2 3 4, w = 1 2 3, seq = 0 0 1 -1, dout = 1 1 1 1 -> dz = 1 1 1 0 (padding passes nothing).
  // dx[0] (seq 0): t0 via k2 (3), t1 via k1 (2), t2 is seq 1 -> 5
  // dx[1] (seq 0): t1 via k2 (3), t2 is seq 1, t3 is padding -> 3
  // dx[2] (seq 1): t2 via k2 (3), t3 is padding -> 3;   dx[3]: only itself, padding -> 0
  // dweight: t0 sees x0 on k2; t1 sees x0 on k1, x1 on k2; t2 sees x2 on k2 only
  //   -> k0 = 0, k1 = 1, k2 = 1 + 2 + 3 = 6;  dbias = 3
  // dinit: the positions before t = 0 continue the row's first sequence (seq 0), so they feed t0 and
  // t1 as initial states would: s = -2 via k0 of t0 (1); s = -1 via k1 of t0 and k0 of t1 (2 + 1).
  Problem p = tiny({1, 2, 3, 4}, {1, 2, 3});
  p.seq = {0, 0, 1, -1};
  const Grads g = backward(p, {1, 1, 1, 1});
  expect_exact(g.dx, {5, 3, 3, 0}, "dx");
  expect_exact(g.dweight, {0, 1, 6}, "dweight");
  expect_exact(g.dbias, {3}, "dbias");
  expect_exact(g.dinit, {1, 3}, "dinitial_states");
}

TEST(ReferenceBackwardHand, Silu) {
  // W = 1, w = 2, x = 0.5, -0.5 -> z = 1, -1; dout = 1, 3.
  // dx = w * dout * silu'(z); dweight = sum dout * silu'(z) * x; dbias = sum dout * silu'(z).
  const double g1 = 0.9276705118714869, gm1 = 0.07232948812851325;
  Problem p = tiny({0.5, -0.5}, {2});
  p.silu = true;
  const Grads g = backward(p, {1, 3});
  expect_close(g.dx, {2 * g1, 2 * 3 * gm1}, 1e-15, 0, "dx");
  expect_close(g.dweight, {0.5 * g1 - 0.5 * 3 * gm1}, 1e-15, 0, "dweight");
  expect_close(g.dbias, {g1 + 3 * gm1}, 1e-15, 0, "dbias");
}

// ---------------------------------------------------------------------------------------------
// Forward against the GEMM formulation of the seed notes, built here independently:
// time-first transpose, W-1 leading rows (zeros, or the initial states), img2col
// A[b, t, k*D + c], dense expanded weights Bw[k*D + ci, co], C = A x Bw, bias, SiLU.

struct GemmForward {
  std::vector<double> out;           // in the problem's layout
  std::vector<double> final_states;  // [B, D, W-1]
};

GemmForward gemm_forward(const Problem& p) {
  const int64_t B = p.shape.batch, D = p.shape.dim, L = p.shape.seqlen;
  const int64_t W = p.shape.width, P = L + W - 1, K = W * D;

  // Padded, time-first input: padded[b][s'][c] with s' = s + (W-1).
  std::vector<double> padded(static_cast<size_t>(B * P * D), 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t c = 0; c < D; ++c) {
      for (int64_t j = 0; j < W - 1; ++j)
        padded[(b * P + j) * D + c] = p.init.empty() ? 0.0 : p.init[(b * D + c) * (W - 1) + j];
      for (int64_t t = 0; t < L; ++t)
        padded[(b * P + t + W - 1) * D + c] = p.x[idx(p.layout, p.shape, b, c, t)];
    }

  // img2col: A[b][t][k*D + c] = padded[b][t + k][c].
  std::vector<double> A(static_cast<size_t>(B * L * K));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < L; ++t)
      for (int64_t k = 0; k < W; ++k)
        for (int64_t c = 0; c < D; ++c)
          A[(b * L + t) * K + k * D + c] = padded[(b * P + t + k) * D + c];

  // Dense block-diagonal weights: Bw[k*D + ci][co] = ci == co ? w[ci, k] : 0.
  std::vector<double> Bw(static_cast<size_t>(K * D), 0.0);
  for (int64_t k = 0; k < W; ++k)
    for (int64_t c = 0; c < D; ++c) Bw[(k * D + c) * D + c] = p.weight[c * W + k];

  GemmForward r;
  r.out.assign(static_cast<size_t>(B * D * L), 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < L; ++t)
      for (int64_t co = 0; co < D; ++co) {
        double acc = 0.0;
        for (int64_t j = 0; j < K; ++j) acc += A[(b * L + t) * K + j] * Bw[j * D + co];
        if (!p.bias.empty()) acc += p.bias[co];
        if (p.silu) acc = acc / (1.0 + std::exp(-acc));
        r.out[idx(p.layout, p.shape, b, co, t)] = acc;
      }

  r.final_states.assign(static_cast<size_t>(B * D * (W - 1)), 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t c = 0; c < D; ++c)
      for (int64_t j = 0; j < W - 1; ++j)
        r.final_states[(b * D + c) * (W - 1) + j] = padded[(b * P + L + j) * D + c];
  return r;
}

void check_against_gemm(const Problem& p) {
  SCOPED_TRACE(describe(p));
  const ForwardResult got = forward(p);
  const GemmForward want = gemm_forward(p);
  expect_close(got.out, want.out, 1e-12, 1e-12, "out");
  expect_exact(got.final_states, want.final_states, "final_states");
}

TEST(ReferenceForward, MatchesGemmFormulationOnFixedShapes) {
  TestRng r(12345);
  const int64_t shapes[][3] = {{1, 1, 1}, {1, 3, 2},  {2, 5, 3}, {1, 7, 13},
                               {3, 4, 1}, {2, 9, 37}, {1, 1, 64}};
  for (const auto& s : shapes)
    for (int W = 1; W <= 5; ++W)
      for (Layout layout : {Layout::channel_first, Layout::channel_last})
        for (int flags = 0; flags < 8; ++flags) {
          const bool bias = flags & 1, silu = flags & 2, init = flags & 4;
          check_against_gemm(
              random_problem(r, make_shape(s[0], s[1], s[2], W), layout, bias, init, silu, false));
        }
}

TEST(ReferenceForward, MatchesGemmFormulationOnRandomShapes) {
  TestRng r(777);
  for (int iter = 0; iter < 200; ++iter) {
    const int W = static_cast<int>(r.range(2, 4));
    // Half of the draws have L < W (the window sticks out in front of every output).
    const int64_t L = r.range(0, 1) ? r.range(1, W - 1) : r.range(1, 40);
    const ConvShape s = make_shape(r.range(1, 3), 2 * r.range(0, 5) + 1, L, W);  // odd D
    const Layout layout = r.range(0, 1) ? Layout::channel_last : Layout::channel_first;
    check_against_gemm(
        random_problem(r, s, layout, r.range(0, 1), r.range(0, 1), r.range(0, 1), false));
  }
}

TEST(ReferenceForward, LargeInputsThroughSiluStayFinite) {
  Problem p = tiny({1000, -1000, 1000, -1000}, {1, 0});
  p.silu = true;
  // out[t] = silu(x[t-1]): z = 0 (nothing before t = 0), 1000, -1000, 1000.
  expect_exact(forward(p).out, {0, 1000, 0, 1000}, "out");
  const Grads g = backward(p, {1, 1, 1, 1});
  // dx[s] = silu'(x[s]) for s < 3: 1, 0, 1; x[3] feeds nothing through w[0].
  expect_exact(g.dx, {1, 0, 1, 0}, "dx");
}

// ---------------------------------------------------------------------------------------------
// Packed sequences: with contiguous runs of distinct ids, the packed forward/backward must equal
// running every run as its own problem without seq_idx (zeros in front), and padding runs give 0.

TEST(ReferenceSeqIdx, PackedEqualsSeparateSequences) {
  TestRng r(4242);
  for (int iter = 0; iter < 60; ++iter) {
    const int W = static_cast<int>(r.range(1, 4));
    const ConvShape s = make_shape(r.range(1, 3), r.range(1, 4), r.range(1, 30), W);
    const Layout layout = r.range(0, 1) ? Layout::channel_last : Layout::channel_first;
    const Problem p = random_problem(r, s, layout, r.range(0, 1), false, r.range(0, 1), true);
    SCOPED_TRACE(describe(p));
    const std::vector<double> dout = random_vec(r, s.elements());
    const ForwardResult packed = forward(p);
    const Grads gp = backward(p, dout);

    std::vector<double> dweight_sum(p.weight.size(), 0.0),
        dbias_sum(static_cast<size_t>(s.dim), 0.0), dinit_want(gp.dinit.size(), 0.0);
    for (int64_t b = 0; b < s.batch; ++b) {
      int64_t start = 0;
      while (start < s.seqlen) {
        const int32_t id = p.seq[b * s.seqlen + start];
        int64_t end = start;
        while (end < s.seqlen && p.seq[b * s.seqlen + end] == id) ++end;
        // Run [start, end) of batch b as a problem of its own (channel first).
        Problem q;
        q.shape = make_shape(1, s.dim, end - start, W);
        q.weight = p.weight;
        q.bias = p.bias;
        q.silu = p.silu;
        std::vector<double> qdout;
        for (int64_t d = 0; d < s.dim; ++d)
          for (int64_t t = start; t < end; ++t) {
            q.x.push_back(p.x[idx(layout, s, b, d, t)]);
            qdout.push_back(dout[idx(layout, s, b, d, t)]);
          }
        const ForwardResult alone = forward(q);
        const Grads ga = backward(q, qdout);
        for (int64_t d = 0; d < s.dim; ++d)
          for (int64_t t = start; t < end; ++t) {
            const size_t i = static_cast<size_t>(idx(layout, s, b, d, t));
            const size_t j = static_cast<size_t>(d * (end - start) + (t - start));
            const double want_out = id < 0 ? 0.0 : alone.out[j];
            const double want_dx = id < 0 ? 0.0 : ga.dx[j];
            EXPECT_NEAR(packed.out[i], want_out, 1e-14)
                << "out b=" << b << " d=" << d << " t=" << t;
            EXPECT_NEAR(gp.dx[i], want_dx, 1e-14) << "dx b=" << b << " d=" << d << " t=" << t;
          }
        if (id >= 0 && start == 0)  // the row's first sequence owns the (zero) initial states
          for (size_t i = 0; i < ga.dinit.size(); ++i)
            dinit_want[b * ga.dinit.size() + i] = ga.dinit[i];
        if (id >= 0) {
          for (size_t i = 0; i < dweight_sum.size(); ++i) dweight_sum[i] += ga.dweight[i];
          for (size_t i = 0; i < dbias_sum.size(); ++i) dbias_sum[i] += ga.dbias[i];
        }
        start = end;
      }
    }
    expect_close(gp.dweight, dweight_sum, 1e-13, 1e-13, "dweight");
    if (!p.bias.empty()) expect_close(gp.dbias, dbias_sum, 1e-13, 1e-13, "dbias");
    expect_close(gp.dinit, dinit_want, 1e-14, 1e-14, "dinitial_states");
  }
}

// ---------------------------------------------------------------------------------------------
// Backward against central finite differences of the forward's sum(out * dout).

// ... and of sum(final_states * dfinal) when dfinal is given.
double objective(const Problem& p, const std::vector<double>& dout,
                 const std::vector<double>& dfinal) {
  std::vector<double> out(static_cast<size_t>(p.shape.elements()));
  std::vector<double> fs(static_cast<size_t>(p.states()));
  conv1d::reference_forward(p.view(), out.data(), fs.data());
  double f = 0.0;
  for (size_t i = 0; i < out.size(); ++i) f += out[i] * dout[i];
  for (size_t i = 0; i < dfinal.size(); ++i) f += fs[i] * dfinal[i];
  return f;
}

// Perturbs every element of `param` (a member of `p`) and compares with `analytic`.
void check_fd(Problem& p, std::vector<double>& param, const std::vector<double>& analytic,
              const std::vector<double>& dout, const std::vector<double>& dfinal,
              const std::string& what) {
  ASSERT_EQ(param.size(), analytic.size()) << what;
  const double h = 1e-6;
  for (size_t i = 0; i < param.size(); ++i) {
    const double keep = param[i];
    param[i] = keep + h;
    const double fp = objective(p, dout, dfinal);
    param[i] = keep - h;
    const double fm = objective(p, dout, dfinal);
    param[i] = keep;
    const double fd = (fp - fm) / (2 * h);
    EXPECT_NEAR(analytic[i], fd, 1e-6 * (1.0 + std::fabs(fd))) << what << "[" << i << "]";
  }
}

void check_backward_fd(Problem p, TestRng& r) {
  SCOPED_TRACE(describe(p));
  const std::vector<double> dout = random_vec(r, p.shape.elements());
  // Half the cases also pass a gradient back through the final states.
  const std::vector<double> dfinal =
      r.range(0, 1) ? random_vec(r, p.states()) : std::vector<double>{};
  SCOPED_TRACE(dfinal.empty() ? "without dfinal_states" : "with dfinal_states");
  const Grads g = backward(p, dout, dfinal);
  check_fd(p, p.x, g.dx, dout, dfinal, "dx");
  check_fd(p, p.weight, g.dweight, dout, dfinal, "dweight");
  if (!p.bias.empty()) check_fd(p, p.bias, g.dbias, dout, dfinal, "dbias");
  if (!p.init.empty()) check_fd(p, p.init, g.dinit, dout, dfinal, "dinitial_states");
}

TEST(ReferenceBackward, MatchesFiniteDifferences) {
  TestRng r(99);
  const int64_t shapes[][3] = {{1, 1, 5}, {2, 3, 7}, {1, 2, 2}, {3, 1, 1}};
  for (const auto& s : shapes)
    for (int W = 1; W <= 4; ++W)
      for (Layout layout : {Layout::channel_first, Layout::channel_last})
        for (bool silu : {false, true})
          for (int mode = 0; mode < 4; ++mode) {  // 1: initial states, 2: seq_idx, 3: both
            // Inputs in [-3, 3] so that SiLU is far from linear.
            Problem p = random_problem(r, make_shape(s[0], s[1], s[2], W), layout, true,
                                       mode == 1 || mode == 3, silu, mode >= 2);
            for (double& v : p.x) v *= 3.0;
            check_backward_fd(p, r);
          }
}

TEST(ReferenceBackward, FiniteDifferencesAtPaddingWithSilu) {
  // Padding at the start, in the middle and at the end of a packed row, with a bias that would
  // make silu(bias) non-zero if padding were not exact.
  TestRng r(5);
  Problem p =
      random_problem(r, make_shape(2, 3, 9, 4), Layout::channel_last, true, false, true, false);
  p.seq = {-1, -1, 0, 0, 0, -1, 1, 1, -1, /* b1 */ 3, 3, 3, -2, 4, 4, 4, 4, -1};
  check_backward_fd(p, r);
}

TEST(ReferenceBackward, StatesGradientWithoutStatesEqualsZeroStates) {
  // dinitial_states without initial states is the gradient at the implicit zeros.
  TestRng r(31);
  for (bool silu : {false, true}) {
    Problem p =
        random_problem(r, make_shape(2, 3, 5, 4), Layout::channel_first, true, false, silu, false);
    const std::vector<double> dout = random_vec(r, p.shape.elements());
    const Grads without = backward(p, dout);
    p.init.assign(static_cast<size_t>(p.states()), 0.0);
    const Grads with_zeros = backward(p, dout);
    expect_exact(without.dinit, with_zeros.dinit, "dinitial_states");
    expect_exact(without.dx, with_zeros.dx, "dx");
    expect_exact(without.dweight, with_zeros.dweight, "dweight");
  }
}

TEST(ReferenceBackward, OutputsAreOverwrittenAndOptional) {
  TestRng r(8);
  const Problem p =
      random_problem(r, make_shape(2, 3, 6, 3), Layout::channel_last, true, true, true, false);
  const std::vector<double> dout = random_vec(r, p.shape.elements());
  const Grads want = backward(p, dout);  // into NaN-filled buffers

  // Garbage-filled buffers, twice in a row: same values (no accumulation into the outputs).
  Grads g;
  g.dx.assign(want.dx.size(), 1e300);
  g.dweight.assign(want.dweight.size(), -7.0);
  g.dbias.assign(want.dbias.size(), 3.0);
  g.dinit.assign(want.dinit.size(), std::numeric_limits<double>::infinity());
  RefGrads rg{g.dx.data(), g.dweight.data(), g.dbias.data(), g.dinit.data()};
  for (int rep = 0; rep < 2; ++rep) {
    conv1d::reference_backward(p.view(), dout.data(), rg);
    expect_exact(g.dx, want.dx, "dx");
    expect_exact(g.dweight, want.dweight, "dweight");
    expect_exact(g.dbias, want.dbias, "dbias");
    expect_exact(g.dinit, want.dinit, "dinitial_states");
  }

  // Each gradient alone gives the same values as all together.
  std::vector<double> buf;
  const std::vector<std::pair<const std::vector<double>*, double* RefGrads::*>> each = {
      {&want.dx, &RefGrads::dx},
      {&want.dweight, &RefGrads::dweight},
      {&want.dbias, &RefGrads::dbias},
      {&want.dinit, &RefGrads::dinitial_states}};
  for (const auto& e : each) {
    buf.assign(e.first->size(), std::nan(""));
    RefGrads one;
    one.*(e.second) = buf.data();
    conv1d::reference_backward(p.view(), dout.data(), one);
    expect_exact(buf, *e.first, "single gradient");
  }
  // None at all is allowed.
  EXPECT_NO_THROW(conv1d::reference_backward(p.view(), dout.data(), RefGrads{}));
}

// ---------------------------------------------------------------------------------------------
// Layouts: the channel-last results are the channel-first results transposed.

TEST(ReferenceLayout, ChannelLastIsChannelFirstTransposed) {
  TestRng r(2024);
  for (int iter = 0; iter < 40; ++iter) {
    const ConvShape s =
        make_shape(r.range(1, 3), r.range(1, 6), r.range(1, 20), static_cast<int>(r.range(1, 4)));
    const int mode = static_cast<int>(r.range(0, 3));  // 1: initial states, 2: seq_idx, 3: both
    const Problem cf = random_problem(r, s, Layout::channel_first, r.range(0, 1),
                                      mode == 1 || mode == 3, r.range(0, 1), mode >= 2);
    SCOPED_TRACE(describe(cf));
    const std::vector<double> dout_cf = random_vec(r, s.elements());

    Problem cl = cf;
    cl.layout = Layout::channel_last;
    std::vector<double> dout_cl(dout_cf.size());
    for (int64_t b = 0; b < s.batch; ++b)
      for (int64_t d = 0; d < s.dim; ++d)
        for (int64_t t = 0; t < s.seqlen; ++t) {
          const int64_t i = idx(Layout::channel_first, s, b, d, t),
                        j = idx(Layout::channel_last, s, b, d, t);
          cl.x[j] = cf.x[i];
          dout_cl[j] = dout_cf[i];
        }

    const ForwardResult f_cf = forward(cf), f_cl = forward(cl);
    const Grads g_cf = backward(cf, dout_cf), g_cl = backward(cl, dout_cl);
    std::vector<double> out_t(f_cl.out.size()), dx_t(g_cl.dx.size());
    for (int64_t b = 0; b < s.batch; ++b)
      for (int64_t d = 0; d < s.dim; ++d)
        for (int64_t t = 0; t < s.seqlen; ++t) {
          const int64_t i = idx(Layout::channel_first, s, b, d, t),
                        j = idx(Layout::channel_last, s, b, d, t);
          out_t[i] = f_cl.out[j];
          dx_t[i] = g_cl.dx[j];
        }
    expect_close(out_t, f_cf.out, 1e-14, 1e-14, "out");
    expect_close(dx_t, g_cf.dx, 1e-14, 1e-14, "dx");
    expect_close(f_cl.final_states, f_cf.final_states, 0, 0, "final_states");
    expect_close(g_cl.dweight, g_cf.dweight, 1e-14, 1e-14, "dweight");
    expect_close(g_cl.dbias, g_cf.dbias, 1e-14, 1e-14, "dbias");
    expect_close(g_cl.dinit, g_cf.dinit, 1e-14, 1e-14, "dinitial_states");
  }
}

// ---------------------------------------------------------------------------------------------
// Errors.

template <typename F>
std::string invalid_argument_message(F&& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  ADD_FAILURE() << "no std::invalid_argument thrown";
  return "";
}

TEST(ReferenceForwardHand, SeqIdxWithInitialStates) {
  // The initial states continue the row's first sequence. x = 1 2 3, w = 1 2 3, init = 1 1,
  // seq = 0 0 1:  t0 = 1*1 + 2*1 + 3*1 = 6,  t1 = 1*1 + 2*1 + 3*2 = 9,  t2 (seq 1) = 3*3 = 9;
  // final states: the last sequence is seq 1, so x1 (seq 0) -> 0 and x2 = 3.
  Problem p = tiny({1, 2, 3}, {1, 2, 3});
  p.seq = {0, 0, 1};
  p.init = {1, 1};
  const ForwardResult r = forward(p);
  expect_exact(r.out, {6, 9, 9}, "out");
  expect_exact(r.final_states, {0, 3}, "final_states");
  // dout = 1: dinit[0] (s = -2) feeds t0 through w0 -> 1; dinit[1] (s = -1) feeds t0 through w1
  // and t1 through w0 -> 3.  A row that starts with another sequence than its states' gets none.
  const Grads g = backward(p, {1, 1, 1});
  expect_exact(g.dinit, {1, 3}, "dinitial_states");
  p.seq = {-1, 0, 0};
  expect_exact(forward(p).out, {0, 3 * 2, 2 * 2 + 3 * 3}, "out, padding first");
  expect_exact(backward(p, {1, 1, 1}).dinit, {0, 0}, "dinitial_states, padding first");
}

TEST(ReferenceBackwardHand, FinalStatesGradient) {
  // dout = 0, so only dfinal_states = (5, 7) flows: into the inputs the final states came from.
  // x = 1 2 3 4, W = 3: the final states are x2, x3.
  Problem p = tiny({1, 2, 3, 4}, {1, 2, 3});
  const std::vector<double> zero(4, 0.0), dfinal{5, 7};
  Grads g = backward(p, zero, dfinal);
  expect_exact(g.dx, {0, 0, 5, 7}, "dx");
  expect_exact(g.dinit, {0, 0}, "dinitial_states");
  expect_exact(g.dweight, {0, 0, 0}, "dweight");
  // seq_idx: only the last sequence's inputs are final states; none when the row ends in padding.
  p.seq = {0, 0, 1, 1};
  expect_exact(backward(p, zero, dfinal).dx, {0, 0, 5, 7}, "dx, last sequence x2 x3");
  p.seq = {0, 0, 0, 1};
  expect_exact(backward(p, zero, dfinal).dx, {0, 0, 0, 7}, "dx, last sequence x3 alone");
  p.seq = {0, 0, 1, -1};
  expect_exact(backward(p, zero, dfinal).dx, {0, 0, 0, 0}, "dx, ends in padding");
  // L = 1 < W-1: the final states are (init[1], x0), so the first value goes to dinitial_states.
  Problem q = tiny({2}, {1, 2, 3});
  q.init = {1, 1};
  g = backward(q, {0}, dfinal);
  expect_exact(g.dx, {7}, "dx, L = 1");
  expect_exact(g.dinit, {0, 5}, "dinitial_states, L = 1");
}

// Chunked prefill and chunked training in the reference: a row run as K chunks, each starting from
// the previous chunk's final states, gives the one-pass outputs exactly (the same products added in
// the same order); run backwards, each chunk handing its dinitial_states to the previous chunk as
// dfinal_states, it gives the one-pass gradients (to rounding: the sums are split differently).
TEST(ReferenceChunks, ChunksEqualOnePass) {
  TestRng r(1234);
  for (int iter = 0; iter < 60; ++iter) {
    const int W = static_cast<int>(r.range(2, 4));
    const int64_t B = r.range(1, 2), D = r.range(1, 3), L = r.range(4, 24);
    Problem p = random_problem(r, make_shape(B, D, L, W), Layout::channel_first, r.range(0, 1),
                               true, r.range(0, 1), false);
    SCOPED_TRACE(describe(p));
    // Cut points: random, with pieces of 1 and 2 steps (shorter than W-1 = 3 at W = 4) among them.
    std::vector<int64_t> cuts{0, 1, 3};
    for (int64_t t = 4; t < L; ++t)
      if (r.range(0, 3) == 0) cuts.push_back(t);
    cuts.push_back(L);
    const size_t K = cuts.size() - 1;
    auto piece = [&](const std::vector<double>& v, size_t c) {  // [B, D, L] -> [B, D, len]
      std::vector<double> out;
      for (int64_t bd = 0; bd < B * D; ++bd)
        out.insert(out.end(), v.begin() + bd * L + cuts[c], v.begin() + bd * L + cuts[c + 1]);
      return out;
    };
    auto put = [&](std::vector<double>& v, size_t c, const std::vector<double>& part) {
      const int64_t len = cuts[c + 1] - cuts[c];
      for (int64_t bd = 0; bd < B * D; ++bd)
        std::copy(part.begin() + bd * len, part.begin() + (bd + 1) * len,
                  v.begin() + bd * L + cuts[c]);
    };
    std::vector<Problem> chunks(K);
    std::vector<double> out(p.x.size()), states = p.init;
    for (size_t c = 0; c < K; ++c) {
      Problem& q = chunks[c];
      q = p;
      q.shape.seqlen = cuts[c + 1] - cuts[c];
      q.x = piece(p.x, c);
      q.init = states;
      const ForwardResult f = forward(q);
      put(out, c, f.out);
      states = f.final_states;
    }
    const ForwardResult one = forward(p);
    expect_exact(out, one.out, "out, chunks against one pass");
    expect_exact(states, one.final_states, "final states, chunks against one pass");

    const std::vector<double> dout = random_vec(r, p.shape.elements()),
                              dfinal = random_vec(r, p.states());
    const Grads whole = backward(p, dout, dfinal);
    std::vector<double> dx(p.x.size()), dweight(p.weight.size(), 0.0), dbias(D, 0.0),
        dstates = dfinal;
    for (size_t c = K; c-- > 0;) {
      const Grads g = backward(chunks[c], piece(dout, c), dstates);
      put(dx, c, g.dx);
      for (size_t i = 0; i < dweight.size(); ++i) dweight[i] += g.dweight[i];
      for (size_t i = 0; i < dbias.size(); ++i) dbias[i] += g.dbias[i];
      dstates = g.dinit;
    }
    expect_close(dx, whole.dx, 1e-13, 1e-13, "dx, chunks against one pass");
    expect_close(dstates, whole.dinit, 1e-13, 1e-13, "dinitial_states, chunks against one pass");
    expect_close(dweight, whole.dweight, 1e-12, 1e-12, "dweight, chunks against one pass");
    if (!p.bias.empty()) expect_close(dbias, whole.dbias, 1e-12, 1e-12, "dbias");
  }
}

TEST(ReferenceErrors, BadSizesAndNullPointers) {
  const Problem good = tiny({1, 2, 3}, {1, 2});
  std::vector<double> out(3), dout(3, 1.0), dx(3);
  RefGrads g;
  g.dx = dx.data();
  EXPECT_NO_THROW(conv1d::reference_forward(good.view(), out.data()));
  EXPECT_NO_THROW(conv1d::reference_backward(good.view(), dout.data(), g));

  const std::vector<std::pair<std::string, std::function<void(RefProblem&)>>> breakages = {
      {"batch", [](RefProblem& p) { p.shape.batch = 0; }},
      {"dim", [](RefProblem& p) { p.shape.dim = 0; }},
      {"seqlen", [](RefProblem& p) { p.shape.seqlen = 0; }},
      {"seqlen", [](RefProblem& p) { p.shape.seqlen = -4; }},
      {"width", [](RefProblem& p) { p.shape.width = 0; }},
      {"width", [](RefProblem& p) { p.shape.width = -1; }},
      {"x", [](RefProblem& p) { p.x = nullptr; }},
      {"weight", [](RefProblem& p) { p.weight = nullptr; }},
  };
  for (const auto& br : breakages) {
    RefProblem p = good.view();
    br.second(p);
    const std::string fwd =
        invalid_argument_message([&] { conv1d::reference_forward(p, out.data()); });
    const std::string bwd =
        invalid_argument_message([&] { conv1d::reference_backward(p, dout.data(), g); });
    EXPECT_NE(fwd.find(br.first), std::string::npos)
        << "message '" << fwd << "' should name " << br.first;
    EXPECT_NE(bwd.find(br.first), std::string::npos)
        << "message '" << bwd << "' should name " << br.first;
  }
  EXPECT_NE(invalid_argument_message([&] {
              conv1d::reference_forward(good.view(), nullptr);
            }).find("out"),
            std::string::npos);
  EXPECT_NE(invalid_argument_message([&] {
              conv1d::reference_backward(good.view(), nullptr, g);
            }).find("dout"),
            std::string::npos);
}

// A random variable-length batch: N sequences (some empty) over `total` tokens of D channels,
// cache rows in reverse order of the sequences plus one row nobody uses; with no_state_one_in = k > 0,
// about one sequence in k has no row (index -1).
struct VarlenCase {
  int W = 1;
  int64_t D = 1, N = 1, S = 0, C = 1, total = 0;
  bool states = false, silu = false;
  std::vector<int32_t> cu, slots;
  std::vector<double> x, w, bias, cache;

  VarlenCase(TestRng& r, int64_t max_dim, int64_t max_seqs, int64_t max_len, bool at_least_one,
             int no_state_one_in, double x_scale) {
    W = static_cast<int>(r.range(1, 4));
    D = r.range(1, max_dim);
    N = r.range(1, max_seqs);
    S = W - 1;
    C = N + 1;
    cu = {0};
    for (int64_t n = 0; n < N; ++n)
      cu.push_back(cu.back() + static_cast<int32_t>(r.range(0, max_len)));
    if (at_least_one && cu.back() == 0) cu.back() = 1;
    total = cu.back();
    states = r.range(0, 1);
    silu = r.range(0, 1);
    x = random_vec(r, total * D, -x_scale, x_scale);
    w = random_vec(r, D * W);
    bias = random_vec(r, D);
    cache = random_vec(r, C * D * S);
    slots.resize(static_cast<size_t>(N));
    for (int64_t n = 0; n < N; ++n)
      slots[n] = no_state_one_in > 0 && r.range(0, no_state_one_in - 1) == 0
                     ? -1
                     : static_cast<int32_t>(N - n);
  }
  conv1d::RefVarlen view() const {
    conv1d::RefVarlen v;
    v.dim = D;
    v.width = W;
    v.x = x.data();
    v.weight = w.data();
    v.bias = bias.data();
    v.cu_seqlens = cu.data();
    v.sequences = N;
    v.states = states ? cache.data() : nullptr;
    v.state_indices = slots.data();
    v.silu = silu;
    return v;
  }
  std::string describe() const {
    return "W=" + std::to_string(W) + " D=" + std::to_string(D) + " N=" + std::to_string(N) +
           (states ? " states" : "") + (silu ? " silu" : "");
  }
};

}  // namespace

// ---------------------------------------------------------------------------------------------
// Variable-length batches. Without states, a varlen batch is one channel-last row whose seq_idx
// numbers the sequences. With states, each sequence is a B = 1 problem of its own, starting from
// its cache row (or zeros where its index is negative) and leaving its final state there.

TEST(ReferenceVarlen, MatchesPackedRowAndSeparateSequences) {
  TestRng r(77);
  for (int iter = 0; iter < 60; ++iter) {
    VarlenCase vc(r, 5, 6, 5, true, 3, 1.0);  // about one sequence in three without a cache row
    SCOPED_TRACE(vc.describe());
    const int W = vc.W;
    const int64_t D = vc.D, N = vc.N, S = vc.S, C = vc.C, total = vc.total;
    const bool states = vc.states, silu = vc.silu;
    const std::vector<int32_t>&cu = vc.cu, &slots = vc.slots;
    const std::vector<double>&x = vc.x, &w = vc.w, &bias = vc.bias, &cache = vc.cache;
    const conv1d::RefVarlen v = vc.view();
    std::vector<double> out(static_cast<size_t>(total * D), std::nan("")), finals = cache;
    conv1d::reference_varlen_forward(v, out.data(), finals.data());

    if (!states) {  // one packed row
      Problem row;
      row.shape = make_shape(1, D, total, W);
      row.layout = Layout::channel_last;
      row.silu = silu;
      row.x = x;
      row.weight = w;
      row.bias = bias;
      for (int64_t n = 0; n < N; ++n)
        for (int32_t t = cu[n]; t < cu[n + 1]; ++t) row.seq.push_back(static_cast<int32_t>(n));
      expect_exact(out, forward(row).out, "out against one packed row");
    }
    for (int64_t n = 0; n < N; ++n) {
      const int64_t start = cu[n], len = cu[n + 1] - cu[n];
      const int32_t slot = slots[n];
      std::vector<double> init(static_cast<size_t>(D * S), 0.0);
      if (states && slot >= 0)
        init.assign(cache.begin() + slot * D * S, cache.begin() + (slot + 1) * D * S);
      std::vector<double> want_final = init;  // an empty sequence passes its state through
      if (len > 0) {
        Problem one;
        one.shape = make_shape(1, D, len, W);
        one.layout = Layout::channel_last;
        one.silu = silu;
        one.x.assign(x.begin() + start * D, x.begin() + (start + len) * D);
        one.weight = w;
        one.bias = bias;
        if (states && slot >= 0) one.init = init;
        const ForwardResult want = forward(one);
        expect_exact(std::vector<double>(out.begin() + start * D, out.begin() + (start + len) * D),
                     want.out, "out of sequence " + std::to_string(n));
        want_final = want.final_states;
      }
      if (slot >= 0)
        expect_exact(
            std::vector<double>(finals.begin() + slot * D * S, finals.begin() + (slot + 1) * D * S),
            want_final, "final state of sequence " + std::to_string(n));
    }
    // Row 0 of the cache is nobody's, nor are the rows of sequences without an index.
    for (int64_t c = 0; c < C; ++c) {
      if (std::find(slots.begin(), slots.end(), c) != slots.end()) continue;
      for (int64_t i = 0; i < D * S; ++i)
        EXPECT_EQ(finals[c * D * S + i], cache[c * D * S + i]) << "cache row " << c;
    }
  }
}

// The varlen backward against central finite differences of
//   sum(out * dout) + sum over the cache rows the forward writes of (row * dfinal),
// with respect to x, the filters and the cache rows it reads.
TEST(ReferenceVarlen, BackwardMatchesFiniteDifferences) {
  TestRng r(78);
  for (int iter = 0; iter < 24; ++iter) {
    VarlenCase vc(r, 3, 5, 4, false, 4, 3.0);  // inputs in [-3, 3]: SiLU far from linear
    SCOPED_TRACE(vc.describe());
    const int64_t D = vc.D, N = vc.N, S = vc.S, C = vc.C, total = vc.total;
    const bool states = vc.states;
    const std::vector<int32_t>& slots = vc.slots;
    std::vector<double>&x = vc.x, &w = vc.w, &bias = vc.bias, &cache = vc.cache;
    const std::vector<double> dout = random_vec(r, total * D);
    std::vector<double> dfinal(static_cast<size_t>(C * D * S), 0.0);  // 0 on rows nobody writes
    for (int32_t slot : slots)
      if (slot >= 0)
        for (int64_t i = 0; i < D * S; ++i) dfinal[slot * D * S + i] = r.uniform(-1, 1);
    auto objective = [&] {
      std::vector<double> out(static_cast<size_t>(total * D)), finals = cache;
      conv1d::reference_varlen_forward(vc.view(), out.data(), finals.data());
      double f = 0.0;
      for (size_t i = 0; i < out.size(); ++i) f += out[i] * dout[i];
      for (size_t i = 0; i < finals.size(); ++i) f += finals[i] * dfinal[i];
      return f;
    };
    const double nan = std::nan("");
    std::vector<double> dx(x.size(), nan), dw(w.size(), nan), db(bias.size(), nan),
        dstates(cache.size(), nan);
    conv1d::RefVarlenGrads g;
    g.dx = dx.data();
    g.dweight = dw.data();
    g.dbias = db.data();
    g.dstates = dstates.data();
    conv1d::reference_varlen_backward(vc.view(), dout.data(), dfinal.data(), g);

    auto check = [&](std::vector<double>& param, const std::vector<double>& analytic,
                     const std::string& what, int64_t only_row = -1) {
      const double h = 1e-6;
      for (size_t i = 0; i < param.size(); ++i) {
        if (only_row >= 0 && int64_t(i) / (D * S) != only_row) continue;
        const double keep = param[i];
        param[i] = keep + h;
        const double fp = objective();
        param[i] = keep - h;
        const double fm = objective();
        param[i] = keep;
        const double fd = (fp - fm) / (2 * h);
        EXPECT_NEAR(analytic[i], fd, 1e-6 * (1.0 + std::fabs(fd))) << what << "[" << i << "]";
      }
    };
    check(x, dx, "dx");
    check(w, dw, "dweight");
    check(bias, db, "dbias");
    for (int64_t n = 0; n < N; ++n) {
      if (slots[n] < 0) continue;
      if (states) {
        check(cache, dstates, "dstates of sequence " + std::to_string(n), slots[n]);
      } else {  // without states: the gradient at the zeros, finite (their value is not an input)
        for (int64_t i = 0; i < D * S; ++i)
          EXPECT_TRUE(std::isfinite(dstates[slots[n] * D * S + i]));
      }
    }
    // Rows no sequence uses are left as they were.
    for (int64_t c = 0; c < C; ++c) {
      if (std::find(slots.begin(), slots.end(), c) != slots.end()) continue;
      for (int64_t i = 0; i < D * S; ++i) EXPECT_TRUE(std::isnan(dstates[c * D * S + i]));
    }
  }
}
