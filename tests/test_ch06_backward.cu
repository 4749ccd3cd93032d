// Chapter 06 (the channel-last backward) against the fp64 reference: every dtype x width x bias x
// SiLU combination at random shapes that include the awkward ones (D not a multiple of 8 or 64, L
// shorter than W, L not a multiple of the 64-row tile, B = 1); deterministic sums bitwise identical
// across runs; atomics within tolerance; more tiles than the grid's y dimension holds; a second
// tile shape. The host-only tests (plan, presets, tolerance) run everywhere; the GPU tests skip
// without a GPU.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "chapters/06_channel_last_backward/pipeline.cuh"
#include "common/verify.h"
#include "tests/gpu_test_util.h"
#include "tests/shape_options.h"

using namespace conv1d;
using namespace conv1d::ch06;

namespace {

// One backward on the GPU from poisoned outputs, results copied back.
template <class TileT = DefaultTile>
BwdOutputs run_on_gpu(const BwdProblem& p, Reduction r, int64_t tiles_per_block = 0,
                      BwdPlan* plan_out = nullptr) {
  const BwdPlan plan = plan_backward<TileT>(p.shape, r, tiles_per_block);
  if (plan_out) *plan_out = plan;
  BwdBuffers buf = upload_problem(p, plan.partial_floats(p.shape.width, p.shape.dim));
  poison_outputs(buf);
  PhaseRecorder rec;
  rec.begin_iteration(1);
  run_backward<TileT>(buf, p, plan, rec);
  rec.end_iteration();
  BwdOutputs out = empty_outputs(p);
  download_outputs(buf, out);
  return out;
}

std::string describe(const Options& o) {
  return "B=" + std::to_string(o.batch) + " D=" + std::to_string(o.dim) +
         " L=" + std::to_string(o.seqlen) + " W=" + std::to_string(o.width) + " " +
         dtype_name(o.dtype) + (o.bias ? " bias" : "") + (o.silu ? " silu" : "");
}

// All three outputs within their tolerances; the failures in the message.
::testing::AssertionResult matches_reference(const BwdProblem& p, const BwdOutputs& got) {
  const Options& o = p.opt;
  const VerifyReport rx = verify("dx", got.dx, p.dx, p.dx_tol, {o.batch, o.seqlen, o.dim});
  const VerifyReport rw =
      verify("dweight", std::vector<double>(got.dweight.begin(), got.dweight.end()), p.dweight,
             p.dweight_tol, {o.dim, o.width});
  const VerifyReport rb = verify("dbias", std::vector<double>(got.dbias.begin(), got.dbias.end()),
                                 p.dbias, p.dbias_tol, {o.dim});
  if (rx.ok() && rw.ok() && rb.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << describe(o) << "\n"
                                       << rx.summary() << "\n"
                                       << rx.details() << rw.summary() << "\n"
                                       << rw.details() << rb.summary() << "\n"
                                       << rb.details();
}

}  // namespace

// ---- host only ----

TEST(Ch06Plan, ChoosesTilesPerBlockFromTheShape) {
  // The benchmark shape: 64 channel chunks x 512 tiles; 4 tiles per block keep 8192 blocks.
  const BwdPlan big = plan_backward(ConvShape{8, 4096, 4096, 4}, Reduction::deterministic);
  EXPECT_EQ(big.blocks_x, 64);
  EXPECT_EQ(big.tiles_per_seq, 64);
  EXPECT_EQ(big.tiles_per_block, 4);
  EXPECT_EQ(big.blocks_y, 128);
  EXPECT_EQ(big.sink, GradSink::partials);
  EXPECT_EQ(big.partial_floats(4, 4096), 128 * 5 * 4096);
  // Small shapes keep one tile per block (latency), and one block row writes the sums itself.
  const BwdPlan small = plan_backward(ConvShape{2, 64, 256, 4}, Reduction::deterministic);
  EXPECT_EQ(small.tiles_per_block, 1);
  EXPECT_EQ(small.blocks_y, 8);
  const BwdPlan tiny = plan_backward(ConvShape{1, 32, 64, 4}, Reduction::deterministic);
  EXPECT_EQ(tiny.blocks_y, 1);
  EXPECT_EQ(tiny.sink, GradSink::final_values);
  EXPECT_EQ(tiny.partial_floats(4, 32), 0);
  EXPECT_EQ(plan_backward(ConvShape{1, 32, 64, 4}, Reduction::atomic).sink, GradSink::atomics);
  // An explicit request is kept, but never beyond the tiles there are.
  EXPECT_EQ(plan_backward(ConvShape{8, 4096, 4096, 4}, Reduction::deterministic, 3).tiles_per_block,
            3);
  EXPECT_EQ(plan_backward(ConvShape{1, 8, 100, 4}, Reduction::deterministic, 50).tiles_per_block,
            2);
}

TEST(Ch06Plan, StaysWithinTheGridLimit) {
  for (int64_t request : {0, 1, 2}) {
    const BwdPlan p =
        plan_backward(ConvShape{1, 3, 65535 * 64 * 2 + 65, 4}, Reduction::deterministic, request);
    EXPECT_LE(p.blocks_y, 65535);
    EXPECT_GE(p.tiles_per_block * p.blocks_y, p.tiles_per_seq);
    EXPECT_GE(p.tiles_per_block, 3) << "131072 tiles need 3 per block";
  }
}

TEST(Ch06Flags, PresetsSetTheShapeAndLaterFlagsOverride) {
  const ChapterSpec spec = chapter_spec();
  auto parse = [&](std::vector<const char*> args, Options* o, BwdFlags* f) {
    args.insert(args.begin(), "ch06");
    return parse_command_line(static_cast<int>(args.size()), args.data(), spec, o,
                              chapter_flags(o, f));
  };
  for (const Preset& pr : presets()) {
    Options o;
    BwdFlags f;
    ASSERT_EQ(parse({"--preset", pr.name}, &o, &f).status, ParseStatus::ok) << pr.name;
    EXPECT_EQ(o.batch, pr.batch);
    EXPECT_EQ(o.dim, pr.dim);
    EXPECT_EQ(o.seqlen, pr.seqlen);
    EXPECT_EQ(o.width, 4);
    EXPECT_EQ(o.bias, pr.bias);
    EXPECT_EQ(o.silu, pr.silu);
    EXPECT_EQ(f.preset, pr.name);
  }
  Options o;
  BwdFlags f;
  ASSERT_EQ(parse({"--batch", "7", "--preset", "small", "--seqlen", "100", "--reduction", "atomic"},
                  &o, &f)
                .status,
            ParseStatus::ok);
  EXPECT_EQ(o.batch, 2);  // the preset came after --batch
  EXPECT_EQ(o.seqlen, 100);
  EXPECT_EQ(f.reduction, "atomic");
  const ParseResult bad = parse({"--preset", "huge"}, &o, &f);
  EXPECT_EQ(bad.status, ParseStatus::error);
  EXPECT_NE(bad.message.find("--preset must be one of tiny, small"), std::string::npos)
      << bad.message;
  EXPECT_EQ(parse({"--reduction", "sometimes"}, &o, &f).status, ParseStatus::error);
  EXPECT_EQ(parse({"--dtype", "bf16"}, &o, &f).status,
            ParseStatus::ok);  // bf16 arrives in chapter 06
}

TEST(Ch06Tolerance, CatchesALostTileButNotRounding) {
  for (bool silu : {false, true}) {
    const Options o = shape_options(2, 16, 512, 4, Dtype::fp32, true, silu, 99);
    const BwdProblem p = make_backward_problem(o);
    // The contribution of one 64-row tile (batch 0, rows 128..191): the reference with dout zero
    // elsewhere.
    std::vector<double> x = p.x.to_double(), g(p.dout.size(), 0.0), w = p.weight.to_double(),
                        b = p.bias.to_double();
    for (int64_t t = 128; t < 192; ++t)
      for (int64_t d = 0; d < o.dim; ++d) g[t * o.dim + d] = p.dout.get(t * o.dim + d);
    RefProblem rp;
    rp.shape = p.shape;
    rp.layout = Layout::channel_last;
    rp.x = x.data();
    rp.weight = w.data();
    rp.bias = b.data();
    rp.silu = silu;
    std::vector<double> tile_dw(o.dim * o.width), tile_db(o.dim);
    reference_backward(rp, g.data(), RefGrads{nullptr, tile_dw.data(), tile_db.data(), nullptr});

    std::vector<double> lost_dw = p.dweight, lost_db = p.dbias, rounded_dw = p.dweight,
                        rounded_db = p.dbias;
    for (size_t i = 0; i < lost_dw.size(); ++i) {
      lost_dw[i] -= tile_dw[i];
      rounded_dw[i] = static_cast<float>(p.dweight[i]) * (1 + 1e-6);
    }
    for (size_t i = 0; i < lost_db.size(); ++i) {
      lost_db[i] -= tile_db[i];
      rounded_db[i] = static_cast<float>(p.dbias[i]) * (1 - 1e-6);
    }
    const VerifyReport lw = verify("dweight", lost_dw, p.dweight, p.dweight_tol);
    const VerifyReport lb = verify("dbias", lost_db, p.dbias, p.dbias_tol);
    EXPECT_GT(lw.bad, lw.count / 2) << lw.summary();
    EXPECT_GT(lb.bad, lb.count / 2) << lb.summary();
    EXPECT_TRUE(verify("dweight", rounded_dw, p.dweight, p.dweight_tol).ok());
    EXPECT_TRUE(verify("dbias", rounded_db, p.dbias, p.dbias_tol).ok());
  }
}

// ---- on the GPU ----

TEST(Ch06Backward, MatchesReferenceForEveryCombination) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  Rng rng(606);
  int combo = 0;
  for (Dtype t : {Dtype::fp32, Dtype::fp16, Dtype::bf16})
    for (int w = 2; w <= 4; ++w)
      for (bool bias : {false, true})
        for (bool silu : {false, true}) {
          // Cycle through the awkward cases; the rest of the shape is random.
          int64_t b = rng.range(1, 3), d = rng.range(1, 150), l = rng.range(1, 300);
          switch (combo++ % 4) {
            case 0: l = rng.range(1, w - 1); break;  // L < W
            case 1:
              b = 1;
              l = 64 * rng.range(1, 3) + rng.range(1, 63);
              break;  // B = 1, L not a multiple of 64
            case 2:
              d = 8 * rng.range(1, 15);
              d += d % 64 == 0 ? 8 : 0;
              break;                                       // vectorized, D not a multiple of 64
            case 3: d = 2 * rng.range(33, 80) + 1; break;  // odd D > 64: element-wise path
          }
          const BwdProblem p =
              make_backward_problem(shape_options(b, d, l, w, t, bias, silu, rng.next()));
          for (Reduction r : {Reduction::deterministic, Reduction::atomic})
            EXPECT_TRUE(matches_reference(p, run_on_gpu(p, r)))
                << (r == Reduction::atomic ? "atomic" : "deterministic");
        }
}

TEST(Ch06Backward, DeterministicSumsAreBitwiseIdenticalAcrossRuns) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  // Many block rows (one tile per block), so the reduction really adds many partial sums.
  const BwdProblem p =
      make_backward_problem(shape_options(3, 200, 1000, 4, Dtype::bf16, true, true, 5));
  BwdPlan plan;
  const BwdOutputs first = run_on_gpu(p, Reduction::deterministic, 1, &plan);
  ASSERT_EQ(plan.sink, GradSink::partials);
  ASSERT_GT(plan.blocks_y, 40);
  ASSERT_TRUE(matches_reference(p, first));
  for (int run = 0; run < 5; ++run) {
    const BwdOutputs again = run_on_gpu(p, Reduction::deterministic, 1);
    EXPECT_TRUE(same_bits(first.dweight, again.dweight)) << "run " << run;
    EXPECT_TRUE(same_bits(first.dbias, again.dbias)) << "run " << run;
    EXPECT_TRUE(same_bits(first.dx, again.dx)) << "run " << run;
  }
}

TEST(Ch06Backward, AtomicSumsAgreeWithDeterministicWithinTolerance) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  const BwdProblem p =
      make_backward_problem(shape_options(4, 96, 777, 3, Dtype::fp16, false, true, 6));
  const BwdOutputs det = run_on_gpu(p, Reduction::deterministic, 1);
  for (int run = 0; run < 3; ++run) {
    const BwdOutputs atom = run_on_gpu(p, Reduction::atomic, 1);
    EXPECT_TRUE(matches_reference(p, atom));
    EXPECT_TRUE(same_bits(det.dx, atom.dx)) << "dx does not depend on how the sums are added";
    for (size_t i = 0; i < det.dweight.size(); ++i)
      EXPECT_TRUE(within_tolerance(atom.dweight[i], det.dweight[i], p.dweight_tol)) << i;
    for (size_t i = 0; i < det.dbias.size(); ++i)
      EXPECT_TRUE(within_tolerance(atom.dbias[i], det.dbias[i], p.dbias_tol)) << i;
  }
}

TEST(Ch06Backward, TilesPerBlockChangeOnlyTheOrderOfTheSums) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  const BwdProblem p =
      make_backward_problem(shape_options(3, 72, 1100, 4, Dtype::fp32, true, false, 7));
  const BwdOutputs one = run_on_gpu(p, Reduction::deterministic, 1);
  for (int64_t n : {2, 3, 7, 18, 64}) {  // 18 tiles per sequence: runs cross the batch boundary
    BwdPlan plan;
    const BwdOutputs other = run_on_gpu(p, Reduction::deterministic, n, &plan);
    EXPECT_TRUE(matches_reference(p, other)) << n << " tiles per block";
    EXPECT_TRUE(same_bits(one.dx, other.dx)) << n << " tiles per block";
  }
}

TEST(Ch06Backward, MoreTilesThanTheGridHoldsInY) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  // 65537 tiles of 64 rows in one sequence: at least two per block, however many are asked for.
  const BwdProblem p =
      make_backward_problem(shape_options(1, 3, 65536 * 64 + 17, 2, Dtype::fp32, true, true, 8));
  for (Reduction r : {Reduction::deterministic, Reduction::atomic}) {
    BwdPlan plan;
    const BwdOutputs out = run_on_gpu(p, r, 1, &plan);
    EXPECT_LE(plan.blocks_y, 65535);
    EXPECT_EQ(plan.tiles_per_block, 2);
    EXPECT_TRUE(matches_reference(p, out));
  }
}

TEST(Ch06Backward, AnotherTileShape) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  using Small = Tile<32, 32, 64>;  // 16 pairs x 4 row groups of 8 rows
  Rng rng(31);
  for (Dtype t : {Dtype::fp32, Dtype::bf16})
    for (bool silu : {false, true}) {
      const BwdProblem p = make_backward_problem(shape_options(
          rng.range(1, 3), rng.range(1, 100), rng.range(1, 200), 4, t, true, silu, rng.next()));
      EXPECT_TRUE(matches_reference(p, run_on_gpu<Small>(p, Reduction::deterministic, 2)));
      EXPECT_TRUE(matches_reference(p, run_on_gpu<Small>(p, Reduction::atomic)));
    }
}
