// Chapter 02: the GPU preprocessing kernels against the host preprocessing of common/preprocess.h,
// bit for bit, on both access paths (16-byte words and single elements, the latter for odd D and
// for misaligned pointers); the launch geometry against the grid limits; the pipeline against the
// reference, with one launch per batch.
#include <gtest/gtest.h>

#include <set>

#include "chapters/02_gpu_preprocess/pipeline.cuh"
#include "tests/chapter_test_util.h"
#include "tests/gpu_test_util.h"

using namespace conv1d;
using namespace conv1d::testing;

TEST(Ch02Geometry, RowLaunchStaysInsideTheGridLimits) {
  for (int64_t rows : {int64_t(1), int64_t(37), int64_t(65535) * 256 + 1, int64_t(1) << 30})
    for (int64_t words :
         {int64_t(1), int64_t(3), int64_t(16), int64_t(128), int64_t(129), int64_t(1) << 18})
      for (int64_t planes : {int64_t(1), int64_t(4), int64_t(65535), int64_t(70000)}) {
        const RowLaunch g = row_launch(rows, words, planes);
        EXPECT_EQ(g.block.x * g.block.y * g.block.z, 256u);
        EXPECT_GE(int64_t(g.grid.x) * g.block.x, words) << "every word of a row has a thread";
        EXPECT_LE(int64_t(g.block.x), std::max<int64_t>(words, 1) * 2)
            << "no block twice as wide as a row";
        EXPECT_GE(g.grid.y, 1u);
        EXPECT_LE(g.grid.y, 65535u);
        EXPECT_GE(g.grid.z, 1u);
        EXPECT_LE(g.grid.z, 65535u);
      }
}

TEST(Ch02Geometry, WordPathNeedsRowLengthAndAlignment) {
  alignas(16) static char buf[64];
  EXPECT_TRUE(rows_fit_bytes16(32, {buf, buf + 16}));
  EXPECT_TRUE(rows_fit_bytes16(16, {buf, nullptr}));   // an absent bias is no obstacle
  EXPECT_FALSE(rows_fit_bytes16(24, {buf}));           // D*size not a multiple of 16
  EXPECT_FALSE(rows_fit_bytes16(32, {buf, buf + 2}));  // one pointer off by an fp16 element
}

namespace {

// One comparison of preprocess_input with the host img2col; returns the access width used.
template <class T>
int check_input(Rng& rng, int64_t B, int64_t L, int64_t D, int W, bool per_batch, int offset) {
  const std::vector<T> xt = random_elements<T>(rng, B * L * D);
  std::vector<T> got;
  const int bytes = gpu_img2col(xt, B, L, D, W, per_batch, offset, &got);
  const std::vector<T> want = host_img2col(xt, B, L, D, W);
  const int64_t bad = first_difference(got, want);
  EXPECT_EQ(bad, -1) << "B=" << B << " L=" << L << " D=" << D << " W=" << W << " offset " << offset
                     << " element size " << sizeof(T) << ": first difference at A index " << bad;
  return bytes;
}

template <class T>
int check_weights(Rng& rng, int64_t D, int W, int offset) {
  using DevT = device_t<T>;
  const std::vector<T> w = random_elements<T>(rng, D * W);
  std::vector<T> want(W * D * D);
  expand_weights(w.data(), want.data(), D, W);
  DeviceBuffer d_w = to_device(w.data(), w.size() * sizeof(T)),
               d_bw((want.size() + offset) * sizeof(T));
  d_bw.poison();
  DevT* bw = d_bw.get<DevT>() + offset;
  const int bytes = launch_expand_weights(d_w.get<DevT>(), bw, D, W);
  GPU_CHECK(cudaDeviceSynchronize());
  const int64_t bad = first_difference(from_device<T>(bw, want.size()), want);
  EXPECT_EQ(bad, -1) << "D=" << D << " W=" << W << " offset " << offset << " element size "
                     << sizeof(T) << ": first difference at Bw index " << bad;
  return bytes;
}

}  // namespace

TEST(Ch02Preprocess, InputMatchesHostBitForBit) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  Rng rng(202);
  std::set<int> paths;  // access widths seen: both must have run
  for (int trial = 0; trial < 24; ++trial) {
    const Options o = random_options(rng, trial);
    const int offset = trial % 5 == 4 ? 1 : 0;  // now and then misaligned on purpose
    const int bytes =
        o.dtype == Dtype::fp16
            ? check_input<Half>(rng, o.batch, o.seqlen, o.dim, o.width, true, offset)
            : check_input<float>(rng, o.batch, o.seqlen, o.dim, o.width, true, offset);
    paths.insert(bytes == 16 ? 16 : 1);
  }
  EXPECT_EQ(paths, (std::set<int>{1, 16}));
}

TEST(Ch02Preprocess, MisalignedPointersTakeTheElementPath) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  Rng rng(203);
  for (int W = 2; W <= 4; ++W) {
    EXPECT_EQ(check_input<float>(rng, 2, 33, 64, W, true, 0), 16);
    EXPECT_EQ(check_input<float>(rng, 2, 33, 64, W, true, 1), 4);
    EXPECT_EQ(check_input<Half>(rng, 2, 33, 64, W, true, 0), 16);
    EXPECT_EQ(check_input<Half>(rng, 2, 33, 64, W, true, 3), 2);
    EXPECT_EQ(check_input<Half>(rng, 1, 5, 12, W, true, 0), 2);  // 24-byte rows: no 16-byte words
  }
}

TEST(Ch02Preprocess, InputStridesOverRowsBeyondGridY) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  // D = 1 puts 256 rows in a block, so L above 65535 * 256 needs more than one pass of the grid.
  Rng rng(204);
  check_input<Half>(rng, 1, int64_t(65535) * 256 + 37, 1, 2, true, 0);
}

TEST(Ch02Preprocess, ExpandWeightsMatchesHostBitForBit) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  Rng rng(205);
  std::set<int> paths;
  for (int trial = 0; trial < 24; ++trial) {
    const int64_t D = trial % 3 == 2 ? 8 * rng.range(1, 40) : rng.range(1, 300);
    const int W = static_cast<int>(rng.range(2, 4));
    const int offset = trial % 5 == 4 ? 1 : 0;
    const int bytes = trial % 2 ? check_weights<Half>(rng, D, W, offset)
                                : check_weights<float>(rng, D, W, offset);
    paths.insert(bytes == 16 ? 16 : 1);
  }
  EXPECT_EQ(paths, (std::set<int>{1, 16}));
  EXPECT_EQ(check_weights<Half>(rng, 1, 4, 0), 2);  // D = 1: Bw is W x 1, all diagonal
  EXPECT_EQ(check_weights<float>(rng, 1024, 4, 0), 16);
}

TEST(Ch02Pipeline, MatchesReferenceWithOneLaunchPerBatch) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  sweep_chapter(ch02::chapter(), 206, 16, [](const Options& o, const VariantRun& r) {
    EXPECT_EQ(launches(r, "preprocess_input"), o.batch) << describe(o);
    EXPECT_EQ(launches(r, "expand_weights"), 1) << describe(o);
    EXPECT_EQ(launches(r, "naive_gemm"), o.batch) << describe(o);
    EXPECT_EQ(launches(r), 2 * o.batch + 1) << describe(o);
  });
}

TEST(Ch02Chapter, RefusesBiasUntilChapter04) {
  Options o;
  const char* argv[] = {"ch02", "--bias"};
  const ParseResult r = parse_command_line(2, argv, ch02::chapter().spec, &o);
  EXPECT_EQ(r.status, ParseStatus::error);
  EXPECT_NE(r.message.find("arrives in chapter 04"), std::string::npos) << r.message;
}
