// FastDivmod (common/fast_divmod.h) against the `/` operator: edge cases around powers of two and
// the limits, then random dividends and divisors of every size the kernels use (D, L, B*D up to the
// command line's limits) and beyond.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "common/fast_divmod.h"
#include "common/tensor.h"

namespace {

using conv1d::FastDivmod;

void expect_divides(int64_t n, int64_t d) {
  const FastDivmod f(d);
  int64_t q = 0, r = 0;
  f.divmod(n, &q, &r);
  ASSERT_EQ(q, n / d) << n << " / " << d;
  ASSERT_EQ(r, n % d) << n << " % " << d;
}

TEST(FastDivmod, EdgeCases) {
  const int64_t big = (int64_t(1) << 62) + ((int64_t(1) << 62) - 1);  // 2^63 - 1
  std::vector<int64_t> divisors{1,
                                2,
                                3,
                                5,
                                7,
                                8,
                                9,
                                255,
                                256,
                                257,
                                4095,
                                4096,
                                4097,
                                65535,
                                65536,
                                524289,
                                (int64_t(1) << 30) - 1,
                                int64_t(1) << 30,
                                (int64_t(1) << 31) + 1,
                                0xFFFFFFFF};
  for (int64_t d : divisors) {
    const int64_t square = d < (int64_t(1) << 31) ? d * d : big;  // d * d as long as it fits
    for (int64_t n : {int64_t(0), int64_t(1), d - 1, d, d + 1, 2 * d - 1, 2 * d, square - 1, square,
                      (int64_t(1) << 36) - 1, int64_t(1) << 36, big / 2, big - 1, big})
      expect_divides(n, d);
  }
}

TEST(FastDivmod, RandomValues) {
  conv1d::Rng rng(2024);
  for (int i = 0; i < 200000; ++i) {
    const int64_t d = rng.range(1, int64_t(1) << rng.range(1, 32)) & 0xFFFFFFFF;
    const int64_t n = rng.range(0, (int64_t(1) << rng.range(1, 62)));
    if (d >= 1) expect_divides(n, d);
  }
}

TEST(FastDivmod, RefusesDivisorsOutOfRange) {
  EXPECT_THROW(FastDivmod(0), std::invalid_argument);
  EXPECT_THROW(FastDivmod(int64_t(1) << 32), std::invalid_argument);
}

}  // namespace
