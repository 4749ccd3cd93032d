// Chapter 03: one launch for all batches. The batched preprocess_input against the host img2col
// (the padding must restart at every batch), the pipeline against the reference with exactly one
// launch per kernel, the largest batch the command line allows, and bit-identical output to chapter
// 02.
#include <gtest/gtest.h>

#include "chapters/03_batch_fusion/pipeline.cuh"
#include "tests/chapter_test_util.h"
#include "tests/gpu_test_util.h"

using namespace conv1d;
using namespace conv1d::testing;

TEST(Ch03Batch, OneLaunchOfPreprocessInputMatchesHostBitForBit) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  Rng rng(303);
  for (int trial = 0; trial < 24; ++trial) {
    Options o = random_options(rng, trial);
    o.batch = trial == 0 ? 1 : rng.range(2, 9);
    const int offset = trial % 5 == 4 ? 1 : 0;
    auto check = [&](auto tag) {
      using T = typename decltype(tag)::type;
      const std::vector<T> xt = random_elements<T>(rng, o.batch * o.seqlen * o.dim);
      std::vector<T> got;
      gpu_img2col(xt, o.batch, o.seqlen, o.dim, o.width, false, offset, &got);
      const int64_t bad =
          first_difference(got, host_img2col(xt, o.batch, o.seqlen, o.dim, o.width));
      EXPECT_EQ(bad, -1) << describe(o) << " offset " << offset << ": first difference at A index "
                         << bad;
    };
    dispatch_storage(o.dtype, check);
  }
}

TEST(Ch03Pipeline, MatchesReferenceWithOneLaunchPerKernel) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  sweep_chapter(ch03::chapter(), 304, 16, [](const Options& o, const VariantRun& r) {
    for (const char* k : {"preprocess_input", "expand_weights", "naive_gemm"})
      EXPECT_EQ(launches(r, k), 1) << k;
    EXPECT_EQ(launches(r), 3) << describe(o);
  });
}

TEST(Ch03Pipeline, LargestBatchInOneLaunch) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  // --batch stops at 65535, the grid's z limit: the preprocessing puts the batch there.
  Options o;
  o.batch = Limits::max_batch;
  o.dim = 3;
  o.seqlen = 2;  // shorter than the filter: every output sees padding
  o.width = 4;
  const FwdProblem p = make_forward_problem(o);
  const VariantRun r = run_verified(ch03::chapter().variants(o).at(0), p);
  EXPECT_EQ(launches(r), 3);
}

TEST(Ch03Pipeline, SameBitsAsChapter02) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  // Same kernels, same arithmetic per element: only the launches differ, so must the output not.
  Rng rng(305);
  for (int trial = 0; trial < 6; ++trial) {
    const Options o = random_options(rng, trial);
    const FwdProblem p = make_forward_problem(o);
    const VariantRun per_batch = run_once(ch02::chapter().variants(o).at(0), p);
    const VariantRun batched = run_once(ch03::chapter().variants(o).at(0), p);
    ASSERT_EQ(per_batch.out.bytes(), batched.out.bytes());
    EXPECT_EQ(std::memcmp(per_batch.out.data(), batched.out.data(), batched.out.bytes()), 0)
        << describe(o);
  }
}
