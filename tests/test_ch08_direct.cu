// Chapter 08 (the direct forward) against the fp64 reference: every kernel, layout, dtype, width,
// with and without bias and SiLU, at random shapes that include the awkward ones (L shorter than W
// or than a vector, L and D not multiples of the vector width, B = 1, a single channel); every
// launch choice (vectors per thread, rows per thread, access widths); the kernels of one layout
// give the same bits; misaligned pointers are refused or handled. The host-only decisions run
// without a GPU.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "chapters/08_direct_forward/kernels.cuh"
#include "common/buffers.h"
#include "common/runner.h"
#include "common/verify.h"
#include "tests/gpu_test_util.h"
#include "tests/shape_options.h"

using namespace conv1d;
using namespace conv1d::ch08;

namespace {

// One kernel with one launch choice.
struct Kernel {
  std::string name;
  Layout layout;
  int vectors = 0, rows = 0;  // cf_chunked's and cl_tiled's (cl_staged's) choices
  int access_bytes = 16;      // the channel-last kernels' widest access
  int64_t blocks = 0;         // cf_staged: at most this many blocks (0: as many as fit)
};

std::vector<Kernel> all_kernels() {
  std::vector<Kernel> ks{{"naive", Layout::channel_first},
                         {"cf_vector", Layout::channel_first},
                         {"naive", Layout::channel_last},
                         {"cl_vector", Layout::channel_last},
                         {"cl_vector", Layout::channel_last, 0, 0, 8}};
  for (int v : {1, 2, 4, 8}) ks.push_back({"cf_chunked", Layout::channel_first, v, 0});
  ks.push_back({"cf_staged", Layout::channel_first});
  ks.push_back({"cf_staged", Layout::channel_first, 0, 0, 16, 1});  // one block: every tile in turn
  for (int r : {8, 16, 32}) ks.push_back({"cl_tiled", Layout::channel_last, 0, r});
  ks.push_back({"cl_tiled", Layout::channel_last, 0, 16, 8});
  ks.push_back({"cl_tiled", Layout::channel_last, 0, 32, 4});
  for (int r : {16, 32, 64}) ks.push_back({"cl_staged", Layout::channel_last, 0, r});
  return ks;
}

std::string describe(const Kernel& k, const Options& o) {
  return k.name + (k.vectors ? "@" + std::to_string(k.vectors) : "") +
         (k.blocks ? "@" + std::to_string(k.blocks) + "blocks" : "") +
         (k.rows ? "@" + std::to_string(k.rows) : "") +
         (k.access_bytes != 16 ? "@" + std::to_string(k.access_bytes) + "B" : "") + " " +
         layout_name(k.layout) + " B=" + std::to_string(o.batch) + " D=" + std::to_string(o.dim) +
         " L=" + std::to_string(o.seqlen) + " W=" + std::to_string(o.width) + " " +
         dtype_name(o.dtype) + (o.bias ? " bias" : "") + (o.silu ? " silu" : "");
}

// The problem in both layouts on the device, and the reference.
struct Problem {
  Options o;
  RandomInputs in;
  HostArray x_last;
  std::vector<double> ref;  // [B, D, L]
};

Problem make_problem(const Options& o) {
  Problem p{o, draw_inputs(o), {}, {}};
  const RefInputs ri(p.in);
  p.ref.resize(o.batch * o.dim * o.seqlen);
  reference_forward(
      ri.problem(ConvShape{o.batch, o.dim, o.seqlen, o.width}, Layout::channel_first, o.silu),
      p.ref.data());
  p.x_last = transposed(p.in.x, o.batch, o.dim, o.seqlen);
  return p;
}

DeviceBuffer to_device(const HostArray& h, size_t offset_bytes = 0) {
  DeviceBuffer d(h.bytes() + offset_bytes + 16);
  if (h.bytes())
    GPU_CHECK(
        cudaMemcpy(d.get<char>() + offset_bytes, h.data(), h.bytes(), cudaMemcpyHostToDevice));
  return d;
}

// Runs kernel `k` on poisoned outputs; returns out in the kernel's layout. `offset` elements shift
// x and out off their allocation's alignment.
HostArray run(const Kernel& k, const Problem& p, size_t offset = 0) {
  const Options& o = p.o;
  const size_t e = dtype_bytes(o.dtype);
  DeviceBuffer x = to_device(k.layout == Layout::channel_first ? p.in.x : p.x_last, offset * e);
  DeviceBuffer w = to_device(p.in.weight), b = to_device(p.in.bias);
  DeviceBuffer out(p.in.x.bytes() + offset * e + 16);
  out.poison();
  dispatch_storage(o.dtype, [&](auto tag) {
    using T = device_t<typename decltype(tag)::type>;
    const DirectArgs<T> a{reinterpret_cast<const T*>(x.get<char>() + offset * e),
                          w.get<const T>(),
                          o.bias ? b.get<const T>() : nullptr,
                          reinterpret_cast<T*>(out.get<char>() + offset * e),
                          o.batch,
                          o.dim,
                          o.seqlen,
                          o.silu};
    if (k.name == "naive")
      launch_naive(a, k.layout, o.width);
    else if (k.name == "cf_vector")
      launch_cf_vector(a, o.width);
    else if (k.name == "cf_chunked")
      launch_cf_chunked(a, o.width, k.vectors);
    else if (k.name == "cf_staged")
      launch_cf_staged(a, o.width, 0, nullptr, k.blocks);
    else if (k.name == "cl_vector")
      launch_cl_vector(a, o.width, k.access_bytes);
    else if (k.name == "cl_staged")
      launch_cl_staged(a, o.width, k.rows);
    else
      launch_cl_tiled(a, o.width, k.rows, k.access_bytes);
  });
  GPU_CHECK(cudaDeviceSynchronize());
  HostArray got(o.dtype, p.in.x.size());
  GPU_CHECK(
      cudaMemcpy(got.data(), out.get<char>() + offset * e, got.bytes(), cudaMemcpyDeviceToHost));
  return got;
}

// Does kernel k take this shape? (The staged kernels need L, channel-first, or D, channel-last, a
// multiple of the vector; they refuse the rest with a clear message, which is checked instead.)
bool takes(const Kernel& k, const Options& o) {
  const int64_t per = 16 / dtype_bytes(o.dtype);
  if (k.name == "cf_staged") return o.seqlen % per == 0;
  if (k.name == "cl_staged") return o.dim % per == 0;
  return true;
}

// The output in channel-first order, checked against the reference.
::testing::AssertionResult matches_reference(const Kernel& k, const Problem& p,
                                             const HostArray& got) {
  const Options& o = p.o;
  const HostArray first =
      k.layout == Layout::channel_first ? got : transposed(got, o.batch, o.seqlen, o.dim);
  const VerifyReport r =
      verify("out", first, p.ref, default_tolerance(o.dtype), {o.batch, o.dim, o.seqlen});
  if (r.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << describe(k, o) << ": " << r.summary() << "\n"
                                       << r.details();
}

}  // namespace

// Every kernel at shapes chosen to hit every path: L < W, L shorter than a vector (vectors span
// rows), L and D multiples of nothing, D a multiple of 8 (16-byte channel-last accesses), a single
// channel.
TEST(Ch08Direct, EveryKernelMatchesTheReference) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  for_each_awkward_shape(1, 300, [](const Options& o) {
    const Problem p = make_problem(o);
    for (const Kernel& k : all_kernels()) {
      if (takes(k, o))
        EXPECT_TRUE(matches_reference(k, p, run(k, p)));
      else
        EXPECT_THROW(run(k, p), std::invalid_argument) << describe(k, o);
    }
  });
}

// Random shapes, every dtype and width, bias and SiLU both ways.
TEST(Ch08Direct, RandomShapesMatchTheReference) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  Rng rng(808);
  for (int trial = 0; trial < 24; ++trial) {
    const Options o = random_shape_options(rng, trial, 700);
    const Problem p = make_problem(o);
    for (const Kernel& k : all_kernels()) {
      if (takes(k, o))
        EXPECT_TRUE(matches_reference(k, p, run(k, p)));
      else
        EXPECT_THROW(run(k, p), std::invalid_argument) << describe(k, o);
    }
  }
}

// A thread's arithmetic does not depend on how the work is split: the channel-first vector kernels
// agree bit for bit whatever the vectors per thread, and the channel-last ones whatever the rows
// and the access width.
TEST(Ch08Direct, KernelsOfALayoutGiveTheSameBits) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  for (Dtype t : {Dtype::fp32, Dtype::bf16})
    for (int64_t len : {333, 336}) {  // (the staged kernel takes the second only)
      const Problem p = make_problem(shape_options(2, 72, len, 4, t, true, true, 77));
      const HostArray cf = run({"cf_vector", Layout::channel_first}, p);
      const HostArray cl = run({"cl_vector", Layout::channel_last}, p);
      for (const Kernel& k : all_kernels()) {
        if (!takes(k, p.o)) continue;
        if (k.name == "cf_chunked" || k.name == "cf_staged")
          EXPECT_TRUE(same_bits(run(k, p), cf)) << describe(k, p.o);
        if (k.name == "cl_tiled" || k.name == "cl_staged")
          EXPECT_TRUE(same_bits(run(k, p), cl)) << describe(k, p.o);
      }
    }
}

// The staged kernel's tiles (at most 512 vectors of 16 bytes) against the rows: rows longer than a
// tile and not a multiple of it (a row's last tile shorter), exactly one tile, rows of a few
// vectors (many whole rows a tile, the last tile fewer), rows of one vector; with one block, two,
// and as many as fit, so that a block takes many tiles in turn and every stage is reused. A row
// that is not a whole number of vectors is refused.
TEST(Ch08Direct, StagedTilesAndRows) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  struct Shape {
    int64_t b, d, l;
    Dtype t;
  };
  const Shape shapes[] = {
      {2, 3, 6000, Dtype::bf16}, {3, 40, 104, Dtype::fp16}, {1, 7, 4104, Dtype::bf16},
      {1, 1, 4096, Dtype::bf16}, {1, 1, 4100, Dtype::fp32}, {2, 5, 2048, Dtype::fp32},
      {4, 33, 516, Dtype::fp32}, {1, 2, 8, Dtype::bf16},    {5, 300, 16, Dtype::bf16}};
  for (const Shape& sh : shapes)
    for (int width : {2, 4}) {
      const Problem p =
          make_problem(shape_options(sh.b, sh.d, sh.l, width, sh.t, true, width == 4, 11));
      for (int64_t blocks : {int64_t(1), int64_t(2), int64_t(0)}) {
        const Kernel k{"cf_staged", Layout::channel_first, 0, 0, 16, blocks};
        EXPECT_TRUE(matches_reference(k, p, run(k, p)));
      }
    }
  const Problem odd = make_problem(shape_options(1, 2, 4097, 3, Dtype::bf16, false, false, 12));
  EXPECT_THROW(run({"cf_staged", Layout::channel_first}, odd), std::invalid_argument);
}

// The channel-last staged kernel's tiles and ring: rows that are not a multiple of a tile or of a
// batch (a tile's last batches past the end, copied as zeros), rows shorter than W-1 and than a
// batch, exactly one tile, a tile of more batches than the ring holds (its slots reused), one
// column of 16 bytes and many; every width, rows per thread 16, 32 and 64. A D that is not whole
// vectors is refused.
TEST(Ch08Direct, ClStagedTilesAndRows) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  struct Shape {
    int64_t b, d, l;
    Dtype t;
  };
  const Shape shapes[] = {{2, 8, 200, Dtype::bf16},   {3, 16, 64, Dtype::fp16},
                          {1, 24, 2, Dtype::bf16},    {4, 8, 7, Dtype::fp16},
                          {2, 4, 131, Dtype::fp32},   {1, 520, 96, Dtype::bf16},
                          {5, 12, 1000, Dtype::fp32}, {1, 8, 1, Dtype::bf16}};
  for (const Shape& sh : shapes)
    for (int width : {2, 3, 4}) {
      const Problem p =
          make_problem(shape_options(sh.b, sh.d, sh.l, width, sh.t, width != 3, width == 4, 21));
      for (int rows : {16, 32, 64}) {
        const Kernel k{"cl_staged", Layout::channel_last, 0, rows};
        EXPECT_TRUE(matches_reference(k, p, run(k, p))) << describe(k, p.o);
      }
    }
  const Problem odd = make_problem(shape_options(2, 12, 40, 4, Dtype::bf16, false, false, 22));
  EXPECT_THROW(run({"cl_staged", Layout::channel_last, 0, 64}, odd), std::invalid_argument);
}

// Pointers one element off a 16-byte boundary: the channel-last kernels narrow their accesses and
// still compute the right thing; the vector kernels of 16 bytes (channel-first, cl_staged) refuse
// with a clear message.
TEST(Ch08Direct, MisalignedPointers) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  const Problem p = make_problem(shape_options(2, 48, 50, 3, Dtype::bf16, true, false, 5));
  for (const Kernel& k : all_kernels()) {
    if (k.name == "cf_vector" || k.name == "cf_chunked" || k.name == "cf_staged" ||
        k.name == "cl_staged") {
      EXPECT_THROW(run(k, p, 1), std::invalid_argument) << describe(k, p.o);
    } else {
      EXPECT_TRUE(matches_reference(k, p, run(k, p, 1))) << "offset by one element";
    }
  }
}

// Host-only: the access width the channel-last kernels choose, and the rows per thread.
TEST(Ch08Launch, ChannelLastAccessWidth) {
  alignas(16) static char buf[64];
  auto args = [&](int64_t dim, int offset) {
    return DirectArgs<float>{reinterpret_cast<const float*>(buf + offset),
                             nullptr,
                             nullptr,
                             reinterpret_cast<float*>(buf + offset),
                             1,
                             dim,
                             1,
                             false};
  };
  EXPECT_EQ(cl_access_elements(args(1024, 0)), 4);  // fp32: 16 bytes
  EXPECT_EQ(cl_access_elements(args(1022, 0)), 2);  // D even, not a multiple of 4
  EXPECT_EQ(cl_access_elements(args(1023, 0)), 1);
  EXPECT_EQ(cl_access_elements(args(1024, 8)), 2);  // 8-byte aligned only
  EXPECT_EQ(cl_access_elements(args(1024, 4)), 1);
  const DirectArgs<__nv_bfloat16> h{reinterpret_cast<const __nv_bfloat16*>(buf),
                                    nullptr,
                                    nullptr,
                                    reinterpret_cast<__nv_bfloat16*>(buf),
                                    1,
                                    4096,
                                    1,
                                    false};
  EXPECT_EQ(cl_access_elements(h), 8);
  EXPECT_EQ(cl_access_elements(h, 8), 4);  // --access-bytes 8
  EXPECT_EQ(cl_access_elements(h, 4), 2);
}

TEST(Ch08Launch, VectorsPerThread) {
  EXPECT_EQ(chunked_vectors(int64_t(1) << 24, 132), 2);  // 8x4096x4096 bf16: 2^24 vectors
  EXPECT_EQ(chunked_vectors(32768, 132), 1);             // 4x64x1024 bf16
  EXPECT_EQ(chunked_vectors(32768, 132, 4), 4);          // asked for
}

TEST(Ch08Launch, RowsPerThreadFillTheGpu) {
  // 132 multiprocessors: 32 rows when that still leaves 2048 threads' worth of items per SM.
  EXPECT_EQ(cl_tiled_rows(8, 4096, 512, 132), 32);  // 8 * 128 * 512 = 524288 items
  EXPECT_EQ(cl_tiled_rows(32, 1024, 256, 132),
            16);  // at 32 rows 32 * 32 * 256 = 262144 < 132 * 2048
  EXPECT_EQ(cl_tiled_rows(32, 512, 256, 132),
            kTileBatch);  // 32x2048x512 bf16: 16 rows would leave 262144
  EXPECT_EQ(cl_tiled_rows(4, 1024, 8, 132), kTileBatch);
  EXPECT_EQ(cl_tiled_rows(4, 1024, 8, 132, 16), 16);       // asked for
  EXPECT_EQ(cl_tiled_rows(8, 4096, 512, 132, 0, 16), 16);  // at most 16 (the 16-bit types)
  // The staged kernel: 64 rows while that leaves 2 blocks of 128 threads for each of 132
  // multiprocessors (33792 items), then 32, then 16.
  EXPECT_EQ(cl_staged_rows(8, 4096, 512, 132), 64);  // 8 * 64 * 512 = 262144
  EXPECT_EQ(cl_staged_rows(32, 512, 256, 132), 64);  // 65536
  EXPECT_EQ(cl_staged_rows(8, 2048, 128, 132), 32);  // at 64 rows 32768, at 32 65536
  EXPECT_EQ(cl_staged_rows(4, 1024, 8, 132), 16);
  EXPECT_EQ(cl_staged_rows(4, 1024, 8, 132, 64), 64);  // asked for
}
