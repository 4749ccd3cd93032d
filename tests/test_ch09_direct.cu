// Chapter 09 (the direct backward) against the fp64 reference: dx, dweight and dbias of every
// kernel, layout, dtype and width, with and without bias and SiLU, deterministic and atomic sums,
// at shapes that hit the awkward paths (L shorter than W or than a vector, chunks and tiles that
// end inside a row, L and D multiples of nothing, a single channel, pointers off their 16-byte
// alignment); the deterministic sums are the same bits run after run, and dx does not depend on the
// launch choices. The host-only decisions run without a GPU.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "chapters/06_channel_last_backward/backward_problem.h"
#include "chapters/09_direct_backward/kernels.cuh"
#include "common/buffers.h"
#include "common/runner.h"
#include "tests/gpu_test_util.h"
#include "tests/shape_options.h"

using namespace conv1d;
using namespace conv1d::ch09;

namespace {

// One kernel with one launch choice.
struct Kernel {
  std::string name;  // "naive", "cf_fused", "cf_staged", "cl_tiled", "cl_staged"
  Layout layout;
  bool atomic = false;
  int vectors = 2, rows = 32;  // cf_fused's choice; cl_tiled's and cl_staged's
  int access_bytes = 0;        // cl_tiled's widest access (0: the default channels)
  int64_t blocks = 0;          // cf_staged: at most this many blocks (0: as many as fit)
};

std::vector<Kernel> all_kernels() {
  std::vector<Kernel> ks{{"naive", Layout::channel_first}, {"naive", Layout::channel_last}};
  for (int v : {1, 2, 4}) ks.push_back({"cf_fused", Layout::channel_first, false, v});
  ks.push_back({"cf_fused", Layout::channel_first, true, 2});
  ks.push_back({"cf_staged", Layout::channel_first});
  ks.push_back({"cf_staged", Layout::channel_first, true});
  ks.push_back({"cf_staged", Layout::channel_first, false, 2, 32, 0, 1});  // one block: every tile
  for (int r : {16, 32, 64}) ks.push_back({"cl_tiled", Layout::channel_last, false, 2, r});
  ks.push_back({"cl_tiled", Layout::channel_last, false, 2, 16, 16});
  ks.push_back({"cl_tiled", Layout::channel_last, false, 2, 32, 4});
  ks.push_back({"cl_tiled", Layout::channel_last, true, 2, 32});
  for (int r : {16, 32, 64}) ks.push_back({"cl_staged", Layout::channel_last, false, 2, r});
  ks.push_back({"cl_staged", Layout::channel_last, true, 2, 16});
  return ks;
}

std::string describe(const Kernel& k, const Options& o) {
  return k.name + (k.atomic ? "_atomic" : "") +
         (k.name == "cf_fused" ? "@" + std::to_string(k.vectors) + "v" : "") +
         (k.name == "cf_staged" && k.blocks ? "@" + std::to_string(k.blocks) + "blocks" : "") +
         (k.name == "cl_tiled"
              ? "@" + std::to_string(k.rows) + "r@" + std::to_string(k.access_bytes) + "B"
              : "") +
         (k.name == "cl_staged" ? "@" + std::to_string(k.rows) + "r" : "") + " " +
         layout_name(k.layout) + " B=" + std::to_string(o.batch) + " D=" + std::to_string(o.dim) +
         " L=" + std::to_string(o.seqlen) + " W=" + std::to_string(o.width) + " " +
         dtype_name(o.dtype) + (o.bias ? " bias" : "") + (o.silu ? " silu" : "");
}

// The problem (channel-first, with its reference) and its channel-last copies.
struct Problem {
  ch06::BwdProblem p;
  HostArray x_last, dout_last;
};

Problem make_problem(const Options& o) {
  Problem q{ch06::make_backward_problem(o, Layout::channel_first), {}, {}};
  q.x_last = transposed(q.p.x, o.batch, o.dim, o.seqlen);
  q.dout_last = transposed(q.p.dout, o.batch, o.dim, o.seqlen);
  return q;
}

DeviceBuffer to_device(const HostArray& h, size_t offset_bytes = 0) {
  DeviceBuffer d(h.bytes() + offset_bytes + 16);
  if (h.bytes())
    GPU_CHECK(
        cudaMemcpy(d.get<char>() + offset_bytes, h.data(), h.bytes(), cudaMemcpyHostToDevice));
  return d;
}

// Runs kernel `k` (and the reduction or the memset it needs) on poisoned outputs; dx comes back in
// channel-first order. `offset` elements shift x, dout and dx off their allocation's alignment.
ch06::BwdOutputs run(const Kernel& k, const Problem& q, size_t offset = 0) {
  const Options& o = q.p.opt;
  const size_t e = dtype_bytes(o.dtype);
  const bool first = k.layout == Layout::channel_first;
  DeviceBuffer x = to_device(first ? q.p.x : q.x_last, offset * e);
  DeviceBuffer g = to_device(first ? q.p.dout : q.dout_last, offset * e);
  DeviceBuffer w = to_device(q.p.weight), b = to_device(q.p.bias);
  DeviceBuffer dx(q.p.x.bytes() + offset * e + 16), dweight(o.dim * o.width * 4), dbias(o.dim * 4);
  // Partial sums: at most one unit per 16 elements' worth of positions, and one per channel at
  // least.
  const int64_t units =
      (o.batch * o.dim * o.seqlen / 16 + o.batch * o.dim * 4 + 64) * (o.width + 1);
  DeviceBuffer partials(units * 4);
  for (DeviceBuffer* buf : {&dx, &dweight, &dbias, &partials}) buf->poison();
  dispatch_storage(o.dtype, [&](auto tag) {
    using T = device_t<typename decltype(tag)::type>;
    const BwdArgs<T> a{reinterpret_cast<const T*>(x.get<char>() + offset * e),
                       reinterpret_cast<const T*>(g.get<char>() + offset * e),
                       w.get<const T>(),
                       o.bias ? b.get<const T>() : nullptr,
                       reinterpret_cast<T*>(dx.get<char>() + offset * e),
                       partials.get<float>(),
                       dweight.get<float>(),
                       dbias.get<float>(),
                       o.batch,
                       o.dim,
                       o.seqlen,
                       o.silu,
                       k.atomic};
    if (k.atomic) {
      GPU_CHECK(cudaMemset(dweight.get(), 0, dweight.bytes()));
      GPU_CHECK(cudaMemset(dbias.get(), 0, dbias.bytes()));
    }
    if (k.name == "naive") {
      launch_naive_dx(a, k.layout, o.width);
      launch_naive_dweight(a, k.layout, o.width);
    } else if (k.name == "cf_staged") {
      launch_cf_bwd_staged(a, o.width, 0, nullptr, k.blocks);
      const int64_t chunks = cf_bwd_staged_chunks(o.seqlen, kPer16<T>);
      if (!k.atomic)
        launch_reduce_partials(partials.get<float>(),
                               cf_bwd_partials(o.batch, o.dim, chunks, o.width), o.dim, o.width,
                               dweight.get<float>(), dbias.get<float>());
    } else if (k.name == "cf_fused") {
      launch_cf_bwd(a, o.width, k.vectors);
      const int64_t chunks = cf_bwd_chunks(o.seqlen, kPer16<T>, k.vectors);
      if (!k.atomic)
        launch_reduce_partials(partials.get<float>(),
                               cf_bwd_partials(o.batch, o.dim, chunks, o.width), o.dim, o.width,
                               dweight.get<float>(), dbias.get<float>());
    } else if (k.name == "cl_staged") {
      launch_cl_bwd_staged(a, o.width, k.rows);
      const int64_t u = cl_staged_bwd_units(o.seqlen, k.rows);
      if (!k.atomic)
        launch_reduce_partials(partials.get<float>(), cl_bwd_partials(o.batch, o.dim, u, o.width),
                               o.dim, o.width, dweight.get<float>(), dbias.get<float>());
    } else {
      launch_cl_bwd(a, o.width, k.rows, k.access_bytes);
      const int64_t u = cl_bwd_units(o.seqlen, k.rows);
      if (!k.atomic)
        launch_reduce_partials(partials.get<float>(), cl_bwd_partials(o.batch, o.dim, u, o.width),
                               o.dim, o.width, dweight.get<float>(), dbias.get<float>());
    }
  });
  GPU_CHECK(cudaDeviceSynchronize());
  ch06::BwdOutputs out = ch06::empty_outputs(q.p);
  GPU_CHECK(cudaMemcpy(out.dx.data(), dx.get<char>() + offset * e, out.dx.bytes(),
                       cudaMemcpyDeviceToHost));
  GPU_CHECK(cudaMemcpy(out.dweight.data(), dweight.get(), dweight.bytes(), cudaMemcpyDeviceToHost));
  GPU_CHECK(cudaMemcpy(out.dbias.data(), dbias.get(), dbias.bytes(), cudaMemcpyDeviceToHost));
  if (!first) out.dx = transposed(out.dx, o.batch, o.seqlen, o.dim);
  return out;
}

// Does kernel k take this shape? (The channel-first staged kernel needs L a multiple of the
// vector, the channel-last one D a multiple of its 8-byte copy; they refuse the others,
// StagedTilesAndRows and ChannelLastStagedTiles below.)
bool takes(const Kernel& k, const Options& o) {
  if (k.name == "cf_staged") return o.seqlen % (16 / int64_t(dtype_bytes(o.dtype))) == 0;
  if (k.name == "cl_staged") return o.dim % (8 / int64_t(dtype_bytes(o.dtype))) == 0;
  return true;
}

::testing::AssertionResult matches_reference(const Kernel& k, const Problem& q,
                                             const ch06::BwdOutputs& got) {
  const CheckResult c = ch06::check_backward(q.p, got);
  if (c.ok) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << describe(k, q.p.opt) << ":\n" << c.text;
}

}  // namespace

// Every kernel at shapes chosen to hit every path: L < W; L shorter than a vector; L = 600 and 4095
// (several chunks and tiles per row, the last one partial, the lane-31 halo across chunks); D odd
// or a multiple of 8 (the channel-last access widths); a single channel.
TEST(Ch09Direct, EveryKernelMatchesTheReference) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  for_each_awkward_shape(900, 600, [](const Options& o) {
    const Problem q = make_problem(o);
    for (const Kernel& k : all_kernels())
      if (takes(k, o)) EXPECT_TRUE(matches_reference(k, q, run(k, q)));
  });
}

// Random shapes, every dtype and width, bias and SiLU both ways.
TEST(Ch09Direct, RandomShapesMatchTheReference) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  Rng rng(909);
  for (int trial = 0; trial < 18; ++trial) {
    const Options o = random_shape_options(rng, trial, 2000);
    const Problem q = make_problem(o);
    for (const Kernel& k : all_kernels())
      if (takes(k, o)) EXPECT_TRUE(matches_reference(k, q, run(k, q)));
  }
}

// The deterministic sums are the same bits on every run (the atomic ones need not be); dx does not
// depend on the launch choices within a layout.
TEST(Ch09Direct, DeterministicSumsAndLaunchIndependentDx) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  for (Dtype t : {Dtype::fp32, Dtype::bf16}) {
    const Problem q = make_problem(shape_options(4, 72, 3000, 4, t, true, true, 99));
    const ch06::BwdOutputs cf = run({"cf_fused", Layout::channel_first}, q);
    const ch06::BwdOutputs cl = run({"cl_tiled", Layout::channel_last}, q);
    for (const Kernel& k : all_kernels()) {
      if (k.name == "naive" || !takes(k, q.p.opt)) continue;
      const ch06::BwdOutputs a = run(k, q), b = run(k, q);
      const ch06::BwdOutputs& same_layout = k.layout == Layout::channel_first ? cf : cl;
      EXPECT_TRUE(same_bits(a.dx, same_layout.dx)) << describe(k, q.p.opt) << ": dx";
      if (!k.atomic) {
        EXPECT_TRUE(same_bits(a.dweight, b.dweight) && same_bits(a.dbias, b.dbias))
            << describe(k, q.p.opt);
      }
    }
  }
}

// Pointers one element off a 16-byte boundary: cf_fused falls back to element loads, cl_tiled to
// narrower accesses, and both still compute the right thing; the staged kernels, whose copies need
// 16-byte (channel-first) or 8-byte (channel-last) alignment, refuse them with a clear message.
TEST(Ch09Direct, MisalignedPointers) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  const Problem q = make_problem(shape_options(2, 48, 520, 3, Dtype::bf16, true, true, 5));
  for (const Kernel& k : all_kernels()) {
    if (k.name == "cf_staged" || k.name == "cl_staged")
      EXPECT_THROW(run(k, q, 1), std::invalid_argument) << "offset by one";
    else
      EXPECT_TRUE(matches_reference(k, q, run(k, q, 1))) << "offset by one";
  }
}

// The staged kernel's tiles (at most 512 vectors of x and of dout) against the rows: rows longer
// than a tile with a short last tile, exactly one tile, shorter than a tile, a single vector; whole
// rows a tile (rows of 32, 64 and 96 vectors: 16, 8 and 5 a tile, the last tile short); every
// width, with one block (every tile in turn through the stages), two, and as many as fit. Its dx is
// the same bits as cf_fused's (the same arithmetic a position); L not a multiple of the vector is
// refused.
TEST(Ch09Direct, StagedTilesAndRows) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  struct Shape {
    int64_t b, d, l;
    Dtype t;
  };
  const Shape shapes[] = {
      {2, 3, 6000, Dtype::bf16}, {3, 40, 104, Dtype::fp16}, {1, 7, 4104, Dtype::bf16},
      {1, 1, 4096, Dtype::bf16}, {1, 1, 4100, Dtype::fp32}, {2, 5, 2048, Dtype::fp32},
      {1, 2, 8, Dtype::bf16},    {5, 30, 4, Dtype::fp32},   {3, 40, 256, Dtype::bf16},
      {5, 30, 256, Dtype::fp32}, {2, 9, 768, Dtype::fp16}};
  for (const Shape& sh : shapes)
    for (int width : {2, 3, 4}) {
      const Problem q =
          make_problem(shape_options(sh.b, sh.d, sh.l, width, sh.t, true, width != 3, 13));
      const ch06::BwdOutputs fused = run({"cf_fused", Layout::channel_first}, q);
      for (int64_t blocks : {int64_t(1), int64_t(2), int64_t(0)}) {
        const Kernel k{"cf_staged", Layout::channel_first, false, 2, 32, 0, blocks};
        const ch06::BwdOutputs got = run(k, q);
        EXPECT_TRUE(matches_reference(k, q, got));
        EXPECT_TRUE(same_bits(got.dx, fused.dx)) << describe(k, q.p.opt) << ": dx";
      }
    }
  const Problem odd = make_problem(shape_options(1, 2, 4097, 3, Dtype::bf16, false, false, 12));
  EXPECT_THROW(run({"cf_staged", Layout::channel_first}, odd), std::invalid_argument);
}

// The channel-last staged kernel's tiles against the rows and the channels: rows shorter than W, than
// a batch, than a tile, and longer with a short last tile; tiles past a row's end in a block (warps
// with nothing to walk); D a multiple of the copy but not of a warp's channels (lanes past D), a
// single lane, several blocks across; every width, with and without SiLU, each number of rows a
// warp. Its dx is the same bits as cl_tiled's (the same arithmetic in the same order); D not a
// multiple of the copy is refused.
TEST(Ch09Direct, ChannelLastStagedTiles) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  struct Shape {
    int64_t b, d, l;
    Dtype t;
  };
  const Shape shapes[] = {{2, 4, 3, Dtype::bf16},    {3, 8, 7, Dtype::fp16},
                          {1, 132, 70, Dtype::bf16}, {2, 260, 300, Dtype::fp32},
                          {1, 2, 1000, Dtype::fp32}, {3, 136, 257, Dtype::bf16},
                          {1, 512, 64, Dtype::bf16}, {2, 40, 1100, Dtype::fp16}};
  for (const Shape& sh : shapes)
    for (int width : {2, 3, 4})
      for (bool silu : {false, true}) {
        const Problem q =
            make_problem(shape_options(sh.b, sh.d, sh.l, width, sh.t, true, silu, 17));
        const ch06::BwdOutputs tiled = run({"cl_tiled", Layout::channel_last}, q);
        for (int rows : {16, 32, 64}) {
          const Kernel k{"cl_staged", Layout::channel_last, false, 2, rows};
          const ch06::BwdOutputs got = run(k, q);
          EXPECT_TRUE(matches_reference(k, q, got));
          EXPECT_TRUE(same_bits(got.dx, tiled.dx)) << describe(k, q.p.opt) << ": dx";
        }
      }
  const Problem odd = make_problem(shape_options(1, 6, 100, 3, Dtype::bf16, false, false, 12));
  EXPECT_THROW(run({"cl_staged", Layout::channel_last}, odd), std::invalid_argument);
}

// The tolerance catches a lost unit of the partial sums: the result with one unit's sums zeroed
// must fail (otherwise the comparisons above could not see a kernel that skips work).
TEST(Ch09Direct, ALostUnitIsCaught) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  const Problem q = make_problem(shape_options(2, 16, 2048, 4, Dtype::fp32, false, false, 6));
  ch06::BwdOutputs got = run({"cf_fused", Layout::channel_first}, q);
  ASSERT_TRUE(ch06::check_backward(q.p, got).ok);
  // One chunk of 2 * 32 * 4 = 256 time steps of channel 3 in batch 0, taken out of its sums.
  const std::vector<double> x = q.p.x.to_double(), g = q.p.dout.to_double();
  const int64_t L = 2048, W = 4, row = 3;
  for (int64_t t = 256; t < 512; ++t) {
    for (int64_t k = 0; k < W; ++k) {
      const int64_t s = t - (W - 1) + k;
      got.dweight[3 * W + k] -=
          static_cast<float>(g[row * L + t] * (s >= 0 ? x[row * L + s] : 0.0));
    }
    got.dbias[3] -= static_cast<float>(g[row * L + t]);
  }
  EXPECT_FALSE(ch06::check_backward(q.p, got).ok);
}

// Host-only: the launch choices.
TEST(Ch09Launch, VectorsPerLaneAndChunks) {
  EXPECT_EQ(cf_bwd_vectors(4096, 8), 4);     // bf16: 4 * 32 * 8 = 1024 elements per chunk
  EXPECT_EQ(cf_bwd_vectors(1023, 8), 2);     // 16 bits, a row shorter than a chunk of 4
  EXPECT_EQ(cf_bwd_vectors(511, 8), 1);      // ... and than a chunk of 2
  EXPECT_EQ(cf_bwd_vectors(4096, 4), 2);     // fp32: at most 2
  EXPECT_EQ(cf_bwd_vectors(4096, 8, 4), 4);  // asked for
  EXPECT_EQ(cf_bwd_chunks(4096, 8, 2), 8);
  EXPECT_EQ(cf_bwd_chunks(4097, 8, 2), 9);
  EXPECT_EQ(cf_bwd_chunks(1, 4, 1), 1);
}

TEST(Ch09Launch, StagedTiles) {
  EXPECT_EQ(cf_bwd_staged_chunks(4096, 8), 1);  // 512 vectors: one tile a row
  EXPECT_EQ(cf_bwd_staged_chunks(4104, 8), 2);
  EXPECT_EQ(cf_bwd_staged_chunks(4096, 4), 2);  // fp32: 1024 vectors
  EXPECT_EQ(cf_bwd_staged_chunks(8, 8), 1);
  EXPECT_EQ(bwd_staged_rows_per_tile(512, 8), 8);   // 64 vectors
  EXPECT_EQ(bwd_staged_rows_per_tile(256, 8), 16);  // 32
  EXPECT_EQ(bwd_staged_rows_per_tile(2048, 8), 2);  // 256: half a tile
  EXPECT_EQ(bwd_staged_rows_per_tile(4096, 8), 1);  // a whole tile
  EXPECT_EQ(bwd_staged_rows_per_tile(768, 8), 5);   // 96 vectors: 5 rows, 480 vectors a tile
  EXPECT_EQ(bwd_staged_rows_per_tile(104, 8), 1);   // 13 vectors: not whole warps
  EXPECT_EQ(bwd_staged_rows_per_tile(512, 4), 4);   // fp32: 128 vectors
}

TEST(Ch09Launch, RowsPerLaneFillTheGpu) {
  // 132 multiprocessors want 132 * 2048 = 270336 lanes.
  EXPECT_EQ(cl_bwd_rows(8, 4096, 4096, 2, 132), 64);      // 8 * 64 * 2048 lanes at 64 rows
  EXPECT_EQ(cl_bwd_rows(1, 4096, 1024, 2, 132), 16);      // 1 * 64 * 512 at 64, 1 * 128 * 512 at 32
  EXPECT_EQ(cl_bwd_rows(8, 4096, 1024, 2, 132), 32);      // 8 * 64 * 512 = 262144 at 64: too few
  EXPECT_EQ(cl_bwd_rows(8, 4096, 1024, 2, 132, 16), 16);  // asked for
  EXPECT_EQ(cl_bwd_rows(8, 4096, 4096, 4, 132, 0, 32), 32);  // at most 32 (the 16-bit types)
  EXPECT_EQ(cl_bwd_units(4096, 64), 16);
  EXPECT_EQ(cl_bwd_units(4097, 16), 65);
}

TEST(Ch09Launch, ChannelLastStagedRows) {
  // 132 multiprocessors, 4 blocks each, two waves: 1056 blocks of 4 tiles.
  EXPECT_EQ(cl_staged_bwd_rows(8, 4096, 4096, 4, 132), 64);      // 8 * 16 * 32 = 4096 blocks
  EXPECT_EQ(cl_staged_bwd_rows(32, 512, 2048, 4, 132), 32);      // 32 * 2 * 16 = 1024 at 64 rows
  EXPECT_EQ(cl_staged_bwd_rows(1, 1024, 512, 4, 132), 16);       // 1 * 8 * 4 = 32 at 32 rows
  EXPECT_EQ(cl_staged_bwd_rows(8, 4096, 4096, 4, 132, 16), 16);  // asked for
  EXPECT_EQ(cl_staged_bwd_units(4096, 64), 16);
  EXPECT_EQ(cl_staged_bwd_units(4097, 16), 65);
  EXPECT_EQ(cl_staged_bwd_units(0, 16), 1);
}

TEST(Ch09Launch, ChannelsPerLane) {
  alignas(16) static char buf[64];
  auto args = [&](int64_t dim, int offset) {
    const float* p = reinterpret_cast<const float*>(buf + offset);
    return BwdArgs<float>{p,       p,       nullptr, nullptr, const_cast<float*>(p),
                          nullptr, nullptr, nullptr, 1,       dim,
                          1,       false,   false};
  };
  EXPECT_EQ(cl_bwd_channels(args(1024, 0)), 2);      // the default
  EXPECT_EQ(cl_bwd_channels(args(1024, 0), 16), 4);  // --access-bytes 16: 4 fp32 channels
  EXPECT_EQ(cl_bwd_channels(args(1024, 0), 4), 1);
  EXPECT_EQ(cl_bwd_channels(args(1023, 0)), 1);      // D odd
  EXPECT_EQ(cl_bwd_channels(args(1024, 4), 16), 1);  // 4-byte aligned only
  const __nv_bfloat16* h = reinterpret_cast<const __nv_bfloat16*>(buf);
  const BwdArgs<__nv_bfloat16> half{
      h,    h, nullptr, nullptr, const_cast<__nv_bfloat16*>(h), nullptr, nullptr, nullptr, 1,
      4096, 1, false,   false};
  EXPECT_EQ(cl_bwd_channels(half), 4);     // 16 bits: 4 by default
  EXPECT_EQ(cl_bwd_channels(half, 4), 2);  // --access-bytes 4
}
