// Verification: NaN and Inf always fail, the tolerance edge is inclusive, an unwritten (poisoned)
// element is found and reported with its index.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "common/verify.h"

using namespace conv1d;

TEST(Verify, NanAndInfNeverPass) {
  const Tolerance loose{1e30, 1e30};
  EXPECT_FALSE(within_tolerance(std::nan(""), 1.0, loose));
  EXPECT_FALSE(within_tolerance(std::numeric_limits<double>::infinity(), 1.0, loose));
  EXPECT_FALSE(within_tolerance(-std::numeric_limits<double>::infinity(), 1.0, loose));
  // Even when the reference itself is NaN, a NaN result is a failure.
  EXPECT_FALSE(within_tolerance(std::nan(""), std::nan(""), loose));
}

TEST(Verify, ToleranceEdges) {
  const Tolerance tol{0.5, 0.25};  // binary fractions: the edge is exact
  EXPECT_TRUE(within_tolerance(2.0 + 0.5 + 0.25 * 2.0, 2.0, tol));  // exactly on the edge passes
  EXPECT_FALSE(within_tolerance(2.0 + 0.5 + 0.25 * 2.0 + 1e-9, 2.0, tol));
  EXPECT_TRUE(within_tolerance(-0.5, 0.0, tol));  // atol alone at zero
  EXPECT_FALSE(within_tolerance(-0.5000001, 0.0, tol));
  EXPECT_TRUE(within_tolerance(-10.0 - 0.5 - 2.5, -10.0, tol));  // rtol scales with |want|
}

TEST(Verify, UnwrittenElementIsFoundWithItsIndex) {
  const int64_t B = 2, D = 3, L = 4;
  HostArray got(Dtype::fp32, B * D * L);
  std::vector<double> want(got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    want[i] = 0.25 * static_cast<double>(i);
    got.set(i, want[i]);
  }
  const size_t hole = (1 * D + 2) * L + 3;  // [1, 2, 3]
  got.set(hole, std::nan(""));
  const VerifyReport r = verify("out", got, want, default_tolerance(Dtype::fp32), {B, D, L});
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.bad, 1u);
  EXPECT_EQ(r.non_finite, 1u);
  ASSERT_EQ(r.first_bad.size(), 1u);
  EXPECT_EQ(r.first_bad[0].index, hole);
  EXPECT_NE(r.details().find("out[1, 2, 3]"), std::string::npos) << r.details();
  EXPECT_NE(r.summary().find("FAIL"), std::string::npos);
}

TEST(Verify, AllPoisonFailsEveryElement) {
  HostArray got(Dtype::fp16, 10);
  got.fill_nan();
  const VerifyReport r =
      verify("out", got, std::vector<double>(10, 0.0), default_tolerance(Dtype::fp16));
  EXPECT_EQ(r.bad, 10u);
  EXPECT_EQ(r.first_bad.size(), 5u);  // only the first few are kept
  EXPECT_NE(r.details().find("and 5 more"), std::string::npos);
}

TEST(Verify, ReportsMaxErrorsAndPasses) {
  std::vector<double> want{1.0, -2.0, 4.0}, got{1.0005, -2.0, 4.001};
  const VerifyReport r = verify("y", got, want, default_tolerance(Dtype::fp32));
  EXPECT_TRUE(r.ok()) << r.summary();
  EXPECT_NEAR(r.max_abs, 1e-3, 1e-12);
  EXPECT_NEAR(r.max_rel, 5e-4, 1e-12);
  EXPECT_NE(r.summary().find("PASS"), std::string::npos);
}

TEST(Verify, SizeMismatchAndEmptyFail) {
  EXPECT_FALSE(verify("a", std::vector<double>{1.0}, std::vector<double>{1.0, 2.0}, {1, 1}).ok());
  EXPECT_FALSE(verify("a", std::vector<double>{}, std::vector<double>{}, {1, 1}).ok());
}

TEST(Verify, PerDtypeTolerancesAreTheReferenceLibrarys) {
  const Tolerance f32 = default_tolerance(Dtype::fp32), f16 = default_tolerance(Dtype::fp16),
                  bf = default_tolerance(Dtype::bf16);
  EXPECT_DOUBLE_EQ(f32.rtol, 3e-4);
  EXPECT_DOUBLE_EQ(f32.atol, 1e-3);
  EXPECT_DOUBLE_EQ(f16.rtol, 3e-3);
  EXPECT_DOUBLE_EQ(f16.atol, 5e-3);
  EXPECT_DOUBLE_EQ(bf.rtol, 1e-2);
  EXPECT_DOUBLE_EQ(bf.atol, 5e-2);
  // One fp16 ulp of error near 1 (2^-10) passes fp16's tolerance, ten do not.
  EXPECT_TRUE(within_tolerance(1.0 + std::ldexp(1.0, -10), 1.0, f16));
  EXPECT_FALSE(within_tolerance(1.0 + 10 * std::ldexp(1.0, -10), 1.0, f16));
}
