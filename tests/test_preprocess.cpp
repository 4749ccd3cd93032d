// Host preprocessing of the GEMM formulation: each step against its definition, and the whole chain
// (transpose, pad, img2col, expand, dense GEMM in fp64, transpose back) against the reference.
#include <gtest/gtest.h>

#include <vector>

#include "common/preprocess.h"
#include "common/reference.h"
#include "common/tensor.h"

using namespace conv1d;

namespace {

std::vector<float> iota_values(size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = static_cast<float>(i) + 1.0f;  // no zeros: padding must be visible
  return v;
}

}  // namespace

TEST(Preprocess, TransposeMatchesDefinitionAndInverts) {
  const int64_t B = 2, R = 37, C = 45;  // not multiples of the 32-tile
  const std::vector<float> x = iota_values(B * R * C);
  std::vector<float> t(x.size()), back(x.size());
  transpose_batched(x.data(), t.data(), B, R, C);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t r = 0; r < R; ++r)
      for (int64_t c = 0; c < C; ++c) ASSERT_EQ(t[(b * C + c) * R + r], x[(b * R + r) * C + c]);
  transpose_batched(t.data(), back.data(), B, C, R);
  EXPECT_EQ(back, x);
}

TEST(Preprocess, PadPutsWMinusOneZeroRowsInFront) {
  const int64_t B = 2, L = 5, D = 3;
  const int W = 4;
  const std::vector<float> xt = iota_values(B * L * D);
  std::vector<float> xp(B * (L + W - 1) * D, -7.0f);
  pad_time(xt.data(), xp.data(), B, L, D, W);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t s = 0; s < L + W - 1; ++s)
      for (int64_t c = 0; c < D; ++c) {
        const float want = s < W - 1 ? 0.0f : xt[(b * L + s - (W - 1)) * D + c];
        ASSERT_EQ(xp[(b * (L + W - 1) + s) * D + c], want) << b << " " << s << " " << c;
      }
}

TEST(Preprocess, Img2colMatchesDefinition) {
  for (int W = 2; W <= 4; ++W) {
    const int64_t B = 2, L = 3, D = 5;  // L < W for W = 4
    const std::vector<float> xt = iota_values(B * L * D);
    std::vector<float> xp(B * (L + W - 1) * D), a(B * L * W * D, -1.0f);
    pad_time(xt.data(), xp.data(), B, L, D, W);
    img2col(xp.data(), a.data(), B, L, D, W);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t < L; ++t)
        for (int k = 0; k < W; ++k)
          for (int64_t c = 0; c < D; ++c) {
            const int64_t s = t - (W - 1) + k;  // A[b,t,k*D+c] = x[b,c,s], zero for s < 0
            const float want = s < 0 ? 0.0f : xt[(b * L + s) * D + c];
            ASSERT_EQ(a[(b * L + t) * W * D + k * D + c], want);
          }
  }
}

TEST(Preprocess, ExpandWeightsIsBlockDiagonal) {
  const int64_t D = 6;
  const int W = 3;
  const std::vector<float> w = iota_values(D * W);
  std::vector<float> bw(W * D * D, -1.0f);
  expand_weights(w.data(), bw.data(), D, W);
  for (int k = 0; k < W; ++k)
    for (int64_t ci = 0; ci < D; ++ci)
      for (int64_t co = 0; co < D; ++co)
        ASSERT_EQ(bw[(k * D + ci) * D + co], ci == co ? w[ci * W + k] : 0.0f);
}

TEST(Preprocess, WorksOnSixteenBitStorage) {
  // The templates move bits: a Half array goes through unchanged.
  const int64_t B = 1, D = 3, L = 4;
  std::vector<Half> x(B * D * L), t(x.size());
  for (size_t i = 0; i < x.size(); ++i) x[i].bits = static_cast<uint16_t>(0x3C00 + i);
  transpose_batched(x.data(), t.data(), B, D, L);
  EXPECT_EQ(t[1 * D + 2].bits, x[2 * L + 1].bits);
}

TEST(Preprocess, GemmFormulationEqualsReference) {
  Rng rng(42);
  for (int trial = 0; trial < 12; ++trial) {
    const int64_t B = rng.range(1, 3), D = rng.range(1, 19), L = rng.range(1, 23);
    const int W = static_cast<int>(rng.range(2, 4));
    std::vector<double> x(B * D * L), w(D * W), out(x.size());
    for (double& v : x) v = rng.uniform(-1, 1);
    for (double& v : w) v = rng.uniform(-1, 1);
    std::vector<double> xt(x.size()), xp(B * (L + W - 1) * D), a(B * L * W * D), bw(W * D * D),
        c(B * L * D), got(x.size());
    transpose_batched(x.data(), xt.data(), B, D, L);
    pad_time(xt.data(), xp.data(), B, L, D, W);
    img2col(xp.data(), a.data(), B, L, D, W);
    expand_weights(w.data(), bw.data(), D, W);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t < L; ++t)
        for (int64_t n = 0; n < D; ++n) {
          double acc = 0;
          for (int64_t k = 0; k < W * D; ++k) acc += a[(b * L + t) * W * D + k] * bw[k * D + n];
          c[(b * L + t) * D + n] = acc;
        }
    transpose_batched(c.data(), got.data(), B, L, D);
    RefProblem p;
    p.shape = {B, D, L, W};
    p.x = x.data();
    p.weight = w.data();
    reference_forward(p, out.data());
    for (size_t i = 0; i < out.size(); ++i)
      ASSERT_NEAR(got[i], out[i], 1e-12) << "trial " << trial << " i " << i;
  }
}
