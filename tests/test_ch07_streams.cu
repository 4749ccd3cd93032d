// Chapter 07: the chunk plan (no GPU needed), the two layout kernels against the host
// preprocessing, the whole pipeline against the fp64 reference for several stream and chunk counts
// (odd L and D, chunks shorter than the halo), bitwise agreement of every chunking with the serial
// run and of the graph replay with the direct run, and PhaseRecorder::async on several streams.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "chapters/07_stream_pipeline/pipeline.cuh"
#include "common/preprocess.h"
#include "common/verify.h"
#include "tests/gpu_test_util.h"

using namespace conv1d;
using namespace conv1d::ch07;

namespace {

FwdProblem problem(int64_t B, int64_t D, int64_t L, int W, bool bias, bool silu, uint64_t seed) {
  Options o;
  o.batch = B;
  o.dim = D;
  o.seqlen = L;
  o.width = W;
  o.dtype = Dtype::fp16;
  o.bias = bias;
  o.silu = silu;
  o.seed = seed;
  return make_forward_problem(o);
}

// `runs` runs of one pipeline (the first a verification run on poisoned buffers); the last output.
std::vector<uint16_t> run_pipeline(const FwdProblem& p, int streams, int64_t per_row, bool graph,
                                   bool pinned = true, int runs = 2) {
  std::unique_ptr<HostData> h = host_data(p, pinned);
  Pipeline pipe(p.shape, p.opt.silu, streams, per_row);
  PhaseRecorder rec;
  for (int i = 0; i < runs; ++i) {
    std::memset(h->io.out, 0xFF, h->out_bytes);
    rec.begin_iteration(i);
    pipe.run(h->io, rec, i == 0, graph);
    rec.end_iteration();
  }
  std::vector<uint16_t> out(p.x.size());
  std::memcpy(out.data(), h->io.out, h->out_bytes);
  return out;
}

void expect_matches_reference(const FwdProblem& p, const std::vector<uint16_t>& out) {
  HostArray got(Dtype::fp16, out.size());
  std::memcpy(got.data(), out.data(), out.size() * 2);
  const VerifyReport r = verify("out", got, p.ref, default_tolerance(Dtype::fp16),
                                {p.opt.batch, p.opt.dim, p.opt.seqlen});
  EXPECT_TRUE(r.ok()) << r.summary() << "\n" << r.details();
}

}  // namespace

TEST(Ch07Plan, ChunksCoverEverySequenceOnceRoundRobin) {
  for (int64_t B : {1, 3, 16})
    for (int64_t L : {1, 2, 101, 4096})
      for (int64_t per_row : {0, 1, 3, 7, 5000})
        for (int S : {1, 4}) {
          const ChunkPlan plan = plan_chunks(B, L, S, per_row);
          std::vector<int> covered(B * L, 0);
          for (size_t i = 0; i < plan.chunks.size(); ++i) {
            const Chunk& c = plan.chunks[i];
            ASSERT_LT(c.t0, c.t1);  // never empty
            ASSERT_LE(c.t1 - c.t0, plan.len);
            EXPECT_EQ(c.stream, static_cast<int>(i % S));
            for (int64_t t = c.t0; t < c.t1; ++t) ++covered[c.b * L + t];
          }
          for (int v : covered)
            ASSERT_EQ(v, 1) << "B=" << B << " L=" << L << " per_row=" << per_row;
          if (per_row == 0)
            EXPECT_GE(static_cast<int64_t>(plan.chunks.size()), std::min<int64_t>(8, B * L));
        }
}

// Both paths of each layout kernel: 16-byte accesses (D a multiple of 8, rows padded as the
// pipeline pads them) and one element at a time (odd D, or rows of exactly the chunk's length).
TEST(Ch07Kernels, Img2colChannelFirstMatchesHostImg2col) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  for (int64_t D : {5, 64, 130, 136})
    for (int W : {2, 3, 4})
      for (int64_t t0 : {0, 1, 70})
        for (int64_t n : {67, 130})
          for (bool padded : {false, true}) {
            // One chunk [t0, t0 + n) of a single sequence, with the halo as the pipeline copies it.
            const int64_t L = 210, halo = std::min<int64_t>(W - 1, t0), skip = W - 1 - halo;
            const FwdProblem p = problem(1, D, L, W, false, false, 40 + D + W + t0);
            const uint16_t* x = static_cast<const uint16_t*>(p.x.data());
            const int64_t pitch = padded ? img2col_pitch(n) : n + W - 1;
            std::vector<uint16_t> chunk(D * pitch,
                                        0x7E00);  // NaN where the kernel must not take values from
            for (int64_t c = 0; c < D; ++c)
              for (int64_t j = skip; j < n + W - 1; ++j)
                chunk[c * pitch + j] = x[c * L + t0 - (W - 1) + j];
            // Host: transpose, pad and img2col the whole sequence, then take rows t0 .. t0 + n.
            std::vector<Half> xt(L * D), xp((L + W - 1) * D), a(L * W * D);
            transpose_batched(static_cast<const Half*>(p.x.data()), xt.data(), 1, D, L);
            pad_time(xt.data(), xp.data(), 1, L, D, W);
            img2col(xp.data(), a.data(), 1, L, D, W);
            DeviceBuffer dx(chunk.size() * 2), da(n * W * D * 2);
            GPU_CHECK(cudaMemcpy(dx.get(), chunk.data(), dx.bytes(), cudaMemcpyHostToDevice));
            da.poison();
            const int bytes = launch_img2col_channel_first(
                dx.get<uint16_t>(), pitch, static_cast<int>(skip), da.get<uint16_t>(), n, D, W, 0);
            EXPECT_EQ(bytes, padded && D % 8 == 0 ? 16 : 2) << "D=" << D << " padded=" << padded;
            std::vector<uint16_t> got(n * W * D);
            GPU_CHECK(cudaMemcpy(got.data(), da.get(), da.bytes(), cudaMemcpyDeviceToHost));
            for (int64_t i = 0; i < n * W * D; ++i)
              ASSERT_EQ(got[i], a[t0 * W * D + i].bits)
                  << "D=" << D << " W=" << W << " t0=" << t0 << " n=" << n << " padded=" << padded
                  << " at " << i;
          }
}

TEST(Ch07Kernels, TimeToChannelFirstMatchesHostTranspose) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  for (int64_t n : {1, 33, 100, 130})
    for (int64_t D : {1, 37, 64, 136})
      for (bool padded : {false, true}) {
        const int64_t pitch = padded ? out_pitch(n) : n + 3;
        std::vector<Half> c(n * D), want(n * D);
        for (int64_t i = 0; i < n * D; ++i) c[i].bits = static_cast<uint16_t>(i * 7919 + 13);
        transpose_batched(c.data(), want.data(), 1, n, D);
        DeviceBuffer dc(c.size() * 2), dout(D * pitch * 2);
        GPU_CHECK(cudaMemcpy(dc.get(), c.data(), dc.bytes(), cudaMemcpyHostToDevice));
        dout.poison();
        const int bytes =
            launch_time_to_channel_first(dc.get<uint16_t>(), dout.get<uint16_t>(), pitch, n, D, 0);
        EXPECT_EQ(bytes, padded && D % 8 == 0 && pitch % 8 == 0 ? 16 : 2)
            << "n=" << n << " D=" << D;
        std::vector<uint16_t> got(D * pitch);
        GPU_CHECK(cudaMemcpy(got.data(), dout.get(), dout.bytes(), cudaMemcpyDeviceToHost));
        for (int64_t ch = 0; ch < D; ++ch)
          for (int64_t r = 0; r < n; ++r)
            ASSERT_EQ(got[ch * pitch + r], want[ch * n + r].bits)
                << "n=" << n << " D=" << D << " padded=" << padded;
      }
}

// Every stream and chunk count gives the reference, and the same bits as the serial run: a chunk's
// outputs are computed by the same arithmetic wherever its boundaries fall. Odd L and D, chunks of
// one position (shorter than the W-1 halo), more streams than chunks.
TEST(Ch07Pipeline, StreamAndChunkCountsMatchReferenceAndSerialBitwise) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  struct Case {
    int64_t B, D, L;
    int W;
    bool bias, silu;
  };
  for (const Case& c : {Case{3, 37, 101, 4, true, true}, Case{2, 64, 257, 3, false, true},
                        Case{1, 130, 9, 2, true, false}, Case{2, 8, 3, 4, false, false}}) {
    const FwdProblem p = problem(c.B, c.D, c.L, c.W, c.bias, c.silu, 100 + c.L);
    const std::vector<uint16_t> serial = run_pipeline(p, 1, 1, false);
    expect_matches_reference(p, serial);
    for (int S : {1, 2, 4, 7})
      for (int64_t per_row : {int64_t(0), int64_t(2), int64_t(7), c.L}) {
        const std::vector<uint16_t> out = run_pipeline(p, S, per_row, false);
        ASSERT_EQ(out, serial) << "L=" << c.L << " streams=" << S << " chunks per row=" << per_row;
      }
  }
}

TEST(Ch07Pipeline, PageableHostMemoryGivesTheSameBits) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  const FwdProblem p = problem(2, 48, 150, 4, true, true, 77);
  EXPECT_EQ(run_pipeline(p, 3, 4, false, /*pinned=*/false),
            run_pipeline(p, 3, 4, false, /*pinned=*/true));
}

TEST(Ch07Pipeline, GraphReplayEqualsDirectRunBitwise) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  for (int S : {1, 4}) {
    const FwdProblem p = problem(3, 40, 77, 4, true, true, 55 + S);
    const std::vector<uint16_t> direct = run_pipeline(p, S, 3, false);
    const std::vector<uint16_t> graph =
        run_pipeline(p, S, 3, true, true, 3);  // captured once, replayed 3 times
    expect_matches_reference(p, graph);
    EXPECT_EQ(graph, direct) << "streams=" << S;
  }
}

// async(): records carry their stream id and category, and their start is where the work ran on the
// device: the second of two steps on one stream starts after the first ends, even though both were
// enqueued at once.
TEST(Ch07Recorder, AsyncRecordsDeviceTimesOnSeveralStreams) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  Streams streams(2);
  DeviceBuffer big(size_t(64) << 20);
  PhaseRecorder rec;
  rec.begin_iteration(1);
  const int64_t before = host_now_ns();
  for (int i = 0; i < 2; ++i)
    rec.async(Category::d2h, "memset", streams[0], 0,
              [&] { GPU_CHECK(cudaMemsetAsync(big.get(), i, big.bytes(), streams[0])); });
  rec.async(Category::h2d, "other stream", streams[1], 1,
            [&] { GPU_CHECK(cudaMemsetAsync(big.get(), 3, 1024, streams[1])); });
  rec.end_iteration();
  const std::vector<PhaseRecord>& r = rec.records();
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].stream, 0);
  EXPECT_EQ(r[2].stream, 1);
  EXPECT_EQ(r[0].category, Category::d2h);
  EXPECT_EQ(r[2].category, Category::h2d);
  for (const PhaseRecord& x : r) {
    EXPECT_GE(x.start_ns, before);
    EXPECT_GT(x.end_ns, x.start_ns);
  }
  EXPECT_GE(r[1].start_ns + 1000, r[0].end_ns);  // within the events' rounding (1 us)
  // Still usable after a kernel() record and in a second iteration (a fresh origin each time).
  rec.begin_iteration(2);
  rec.async(Category::kernel, "again", streams[1], 1,
            [&] { GPU_CHECK(cudaMemsetAsync(big.get(), 1, 1024, streams[1])); });
  rec.end_iteration();
  ASSERT_EQ(rec.records().size(), 4u);
  EXPECT_GE(rec.records()[3].start_ns, r[2].end_ns - 1000);
}
