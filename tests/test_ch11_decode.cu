// Chapter 11 (the decoding update) against the fp64 reference: decoding loops of N steps in every
// dtype, widths 2-4, bias and SiLU, 1 to 8 tokens a step, states of W-1 and more inputs, both
// buffer layouts (the circular one wrapping many times, steps with more tokens than the state
// holds), gathered cache rows with padding rows; both kernels, graph replay and direct launches
// giving the same bits; and a loop giving chapter 10's GPU forward over the same tokens bit for
// bit. The problem's host side (flags, layouts, the caches before and after) runs without a GPU,
// checked against a literal step-by-step simulation of the two buffers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "chapters/10_packed_sequences/forward.cuh"
#include "chapters/11_decode_update/decode.h"
#include "chapters/11_decode_update/loop.cuh"
#include "common/buffers.h"
#include "common/device.h"
#include "common/reference.h"
#include "common/verify.h"
#include "tests/gpu_test_util.h"
#include "tests/shape_options.h"

using namespace conv1d;
using namespace conv1d::ch11;

namespace {

DecodeFlags decode_flags(int64_t steps, int64_t state_len, bool gather, int64_t cache_rows = 0) {
  DecodeFlags f;
  f.steps = steps;
  f.state_len = state_len;
  f.gather = gather;
  f.cache_rows = cache_rows;
  return f;
}

std::string describe(const Options& o, const DecodeFlags& f) {
  return "B=" + std::to_string(o.batch) + " D=" + std::to_string(o.dim) +
         " T=" + std::to_string(o.seqlen) + " W=" + std::to_string(o.width) + " " +
         dtype_name(o.dtype) + (o.bias ? " bias" : "") + (o.silu ? " silu" : "") +
         " N=" + std::to_string(f.steps) + " S=" + std::to_string(state_len_of(o, f)) +
         " C=" + std::to_string(cache_rows_of(o, f)) + (f.gather ? " gather" : "");
}

// What a loop left: its outputs as rows [B, D, N*T] and the cache.
struct LoopResult {
  HostArray out, cache;
};

// One loop of p.steps steps over `buffer` with kernel k, launched directly on the legacy stream
// (graph: captured on a stream of its own and replayed `replays` times, the cache restored
// before each replay), from the cache as it was before the loop, each step launched as `how`
// says (by default: the block size the launch chooses, launched early where the GPU can).
LoopResult run_loop(const Decode& p, Buffer buffer, Kernel k, bool graph = false, int replays = 1,
                    StepLaunch how = {}) {
  DecodeDevice dev(p, buffer == Buffer::linear, buffer == Buffer::circular);
  dev.out.poison();
  dispatch_storage(p.opt.dtype, [&](auto tag) {
    using T = device_t<typename decltype(tag)::type>;
    const StepArgs<T> first = dev.first_step<T>(p, buffer);
    if (!graph) return enqueue_loop(first, p.steps, p.opt.width, k, 0, how);
    Stream s;
    CapturedGraph g(s.get(), [&] { enqueue_loop(first, p.steps, p.opt.width, k, s.get(), how); });
    for (int r = 0; r < replays; ++r) {
      dev.restore(buffer, s.get());
      dev.out.poison(s.get());
      g.launch(s.get());
    }
    GPU_CHECK(cudaStreamSynchronize(s.get()));
  });
  return {dev.out_rows(p), dev.cache_of(p, buffer)};
}

// Outputs against the reference, padding rows exactly 0, the cache bit for bit as expected (rows
// no batch row names, and padding rows' would-be rows, untouched).
void expect_correct(const Decode& p, Buffer buffer, const LoopResult& r) {
  const Options& o = p.opt;
  const VerifyReport out =
      verify("out", r.out, p.ref, default_tolerance(o.dtype), {o.batch, o.dim, p.steps * o.seqlen});
  EXPECT_TRUE(out.ok()) << buffer_name(buffer) << ": " << out.summary() << "\n" << out.details();
  const int64_t row_len = o.dim * p.steps * o.seqlen;
  for (int64_t b = 0; b < o.batch; ++b)
    if (p.row_of(b) < 0)
      for (int64_t i = b * row_len; i < (b + 1) * row_len; ++i)
        ASSERT_TRUE(r.out.get(i) == 0.0 && !std::signbit(r.out.get(i)))
            << "padding row " << b << " output " << i - b * row_len << " is " << r.out.get(i);
  const HostArray& want = p.cache_after[int(buffer)];
  if (!same_bits(r.cache, want)) {
    const VerifyReport c = verify("cache", r.cache, want.to_double(), Tolerance{0, 0},
                                  {p.cache_rows, o.dim, p.state_len});
    ADD_FAILURE() << buffer_name(buffer) << " cache not bit for bit: " << c.summary() << "\n"
                  << c.details();
  }
}

// Chapter 10's rows-form forward over the same tokens ([B, D, L], from `initial_states`
// [B, D, W-1]), in layout l: its outputs (channel-first order) and final states. The one place
// this file calls chapter 10's forward.
struct ForwardResult {
  HostArray out, final_states;
};
ForwardResult chapter10_forward(const Options& rows, const RandomInputs& in,
                                const HostArray& initial_states, Layout l) {
  const bool cl = l == Layout::channel_last;
  const HostArray x = cl ? transposed(in.x, rows.batch, rows.dim, rows.seqlen) : in.x;
  const size_t states = static_cast<size_t>(rows.batch * rows.dim * (rows.width - 1));
  auto upload = [](const HostArray& h) {
    DeviceBuffer d(h.bytes());
    if (h.bytes()) GPU_CHECK(cudaMemcpy(d.get(), h.data(), h.bytes(), cudaMemcpyHostToDevice));
    return d;
  };
  DeviceBuffer dx = upload(x), dw = upload(in.weight), db = upload(in.bias),
               dinit = upload(initial_states), out(x.bytes()),
               fin(states * dtype_bytes(rows.dtype));
  out.poison();
  fin.poison();
  dispatch_storage(rows.dtype, [&](auto tag) {
    using T = device_t<typename decltype(tag)::type>;
    const T* bias = rows.bias ? db.get<const T>() : nullptr;
    const ch08::DirectArgs<T> a{dx.get<const T>(), dw.get<const T>(), bias,        out.get<T>(),
                                rows.batch,        rows.dim,          rows.seqlen, rows.silu};
    const ch10::Forward<T> f =
        ch10::rows_forward(a, l, nullptr, dinit.get<const T>(), fin.get<T>());
    ch10::launch_forward(f, rows.width, 1, 8, [](const char*, auto&& launch) { launch(); });
  });
  GPU_CHECK(cudaDeviceSynchronize());
  ForwardResult r{HostArray(rows.dtype, x.size()), HostArray(rows.dtype, states)};
  GPU_CHECK(cudaMemcpy(r.out.data(), out.get(), r.out.bytes(), cudaMemcpyDeviceToHost));
  GPU_CHECK(
      cudaMemcpy(r.final_states.data(), fin.get(), r.final_states.bytes(), cudaMemcpyDeviceToHost));
  if (cl) r.out = transposed(r.out, rows.batch, rows.seqlen, rows.dim);
  return r;
}

// The step-by-step meaning of the two buffers, literally: for each step, each row reads its window
// and writes its tokens the way the chapter's text says. Returns the cache after the loop and
// the outputs in fp64 (rows [B, D, N*T]; padding rows 0).
struct Simulated {
  HostArray cache;
  std::vector<double> out;
};
Simulated simulate(const Decode& p, Buffer buffer) {
  const Options& o = p.opt;
  const int64_t B = o.batch, D = o.dim, T = o.seqlen, S = p.state_len, W = o.width, L = p.steps * T;
  Simulated s{p.cache_before[int(buffer)], std::vector<double>(size_t(B * D * L), 0.0)};
  const std::vector<double> w = p.in.weight.to_double(), bias = p.in.bias.to_double();
  for (int64_t k = 0; k < p.steps; ++k)
    for (int64_t b = 0; b < B; ++b) {
      const int64_t r = p.row_of(b);
      if (r < 0) continue;
      const int64_t pos = p.seqlens[b] + k * T;
      for (int64_t d = 0; d < D; ++d) {
        const int64_t at = (r * D + d) * S;
        auto x = [&](int64_t i) { return p.in.x.get((b * D + d) * L + k * T + i); };
        // in(q) for q in -(W-1) .. T-1, q < 0 from the cache
        auto in = [&](int64_t q) {
          if (q >= 0) return x(q);
          return buffer == Buffer::linear ? s.cache.get(at + S + q)
                                          : s.cache.get(at + wrap(pos + q, S));
        };
        for (int64_t i = 0; i < T; ++i) {
          double z = bias.empty() ? 0.0 : bias[d];
          for (int64_t t = 0; t < W; ++t) z += w[d * W + t] * in(i - (W - 1) + t);
          s.out[(b * D + d) * L + k * T + i] = o.silu ? silu(z) : z;
        }
        if (buffer == Buffer::linear) {
          std::vector<double> row;
          for (int64_t j = 0; j < S; ++j) row.push_back(s.cache.get(at + j));
          for (int64_t i = 0; i < T; ++i) row.push_back(x(i));
          for (int64_t j = 0; j < S; ++j) s.cache.set(at + j, row[row.size() - S + j]);
        } else {
          for (int64_t i = 0; i < T; ++i) s.cache.set(at + wrap(pos + i, S), x(i));
        }
      }
    }
  return s;
}

Options random_decode_options(Rng& rng, int trial) {
  Options o =
      shape_options(rng.range(1, 5), trial % 3 == 0 ? rng.range(1, 70) : 8 * rng.range(1, 12),
                    rng.range(1, kMaxTokens), static_cast<int>(rng.range(2, 4)),
                    std::vector<Dtype>{Dtype::fp32, Dtype::fp16, Dtype::bf16}[trial % 3],
                    rng.range(0, 1) == 1, rng.range(0, 1) == 1, rng.next());
  return o;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Host side.

TEST(Ch11Host, RefusesBadFlags) {
  Options o = shape_options(4, 64, 1, 4, Dtype::bf16, false, true, 1);
  EXPECT_EQ(check_flags(o, decode_flags(64, 0, false)), "");
  o.seqlen = 9;
  EXPECT_NE(check_flags(o, decode_flags(64, 0, false)).find("--seqlen is the number of new tokens"),
            std::string::npos);
  o.seqlen = 8;
  EXPECT_EQ(check_flags(o, decode_flags(64, 0, false)), "");
  EXPECT_NE(check_flags(o, decode_flags(64, 2, false)).find("--state-len must be at least"),
            std::string::npos);
  EXPECT_EQ(check_flags(o, decode_flags(64, 3, false)), "");
  EXPECT_NE(check_flags(o, decode_flags(64, 0, false, 3)).find("--cache-rows must be at least"),
            std::string::npos);
  DecodeFlags vec = decode_flags(64, 5, false);
  vec.kernel = "vector";
  EXPECT_NE(check_flags(o, vec).find("--kernel vector needs"), std::string::npos);
  vec.state_len = 0;
  EXPECT_EQ(check_flags(o, vec), "");
  o.dim = 60;  // not a multiple of 8 (bf16)
  EXPECT_NE(check_flags(o, vec).find("--kernel vector needs"), std::string::npos);
  o.dtype = Dtype::fp32;  // a multiple of 4 is enough in fp32
  EXPECT_EQ(check_flags(o, vec), "");
  o.batch = 65535;
  o.dim = int64_t(1) << 20;
  EXPECT_NE(check_flags(o, decode_flags(65536, 0, false)).find("exceeds the limit"),
            std::string::npos);
}

TEST(Ch11Host, DefaultsOfStateAndCache) {
  const Options o = shape_options(6, 16, 1, 3, Dtype::fp32, false, false, 1);
  EXPECT_EQ(state_len_of(o, decode_flags(1, 0, false)), 2);
  EXPECT_EQ(state_len_of(o, decode_flags(1, 7, false)), 7);
  EXPECT_EQ(cache_rows_of(o, decode_flags(1, 0, false)), 6);
  EXPECT_EQ(cache_rows_of(o, decode_flags(1, 0, true)), 12);
  EXPECT_EQ(cache_rows_of(o, decode_flags(1, 0, true, 9)), 9);
  EXPECT_TRUE(vector_kernel_fits(o, decode_flags(1, 0, false)));
  EXPECT_FALSE(vector_kernel_fits(o, decode_flags(1, 3, false)));
}

TEST(Ch11Host, WrapIsAModuloForNegativePositions) {
  EXPECT_EQ(wrap(0, 3), 0);
  EXPECT_EQ(wrap(7, 3), 1);
  EXPECT_EQ(wrap(-1, 3), 2);
  EXPECT_EQ(wrap(-3, 3), 0);
  EXPECT_EQ(wrap(-4, 3), 2);
}

TEST(Ch11Host, StepsAndRowsAreTheSameTokens) {
  const Options o = shape_options(2, 3, 2, 4, Dtype::fp16, false, false, 5);
  const Decode p = make_decode(o, decode_flags(4, 0, false));
  const int64_t L = 8;
  for (int64_t k = 0; k < 4; ++k)
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t d = 0; d < 3; ++d)
        for (int64_t i = 0; i < 2; ++i)
          ASSERT_EQ(p.x_steps.get(((k * 2 + b) * 3 + d) * 2 + i),
                    p.in.x.get((b * 3 + d) * L + k * 2 + i));
  EXPECT_TRUE(same_bits(rows_of_steps(p.x_steps, o, 4), p.in.x));
}

TEST(Ch11Host, GatherPicksDistinctRowsAndPads) {
  const Options o = shape_options(20, 4, 1, 4, Dtype::fp32, false, false, 9);
  const Decode p = make_decode(o, decode_flags(2, 0, true));
  ASSERT_EQ(p.indices.size(), 20u);
  std::vector<int> used(size_t(p.cache_rows), 0);
  for (int64_t b = 0; b < 20; ++b) {
    if (b % 8 == 1) {
      EXPECT_LT(p.indices[b], 0);
      continue;
    }
    ASSERT_GE(p.indices[b], 0);
    ASSERT_LT(p.indices[b], p.cache_rows);
    EXPECT_EQ(++used[p.indices[b]], 1) << "cache row named twice";
  }
  EXPECT_EQ(p.active_rows, 17);
  EXPECT_EQ(p.seqlens[0], 0);  // row 0 starts a sequence
}

// The caches and references make_decode derives from the history and the reference forward are
// what a literal step-by-step run of the buffers gives.
TEST(Ch11Host, ExpectedCachesAreTheBuffersStepByStep) {
  Rng rng(1111);
  for (int trial = 0; trial < 60; ++trial) {
    const Options o = random_decode_options(rng, trial);
    const DecodeFlags f = decode_flags(
        rng.range(1, 12), trial % 2 ? o.width - 1 + rng.range(1, 6) : 0, trial % 4 == 3);
    SCOPED_TRACE(describe(o, f));
    const Decode p = make_decode(o, f);
    for (Buffer b : {Buffer::linear, Buffer::circular}) {
      const Simulated s = simulate(p, b);
      EXPECT_TRUE(same_bits(s.cache, p.cache_after[int(b)])) << buffer_name(b);
      const VerifyReport r = verify("out", s.out, p.ref, Tolerance{1e-12, 1e-12});
      EXPECT_TRUE(r.ok()) << buffer_name(b) << ": " << r.summary() << "\n" << r.details();
    }
  }
}

// The stage's slots (warp_runs.cuh): a permutation of each warp's span that keeps every chunk in
// its group of eight; the eight lanes of a 16-byte shared-memory access stay on eight different
// groups of banks in the order the warp reads (32v + lane); and in the runs the lanes read
// (lane·K + v) they take as many turns as the plain order gives them (K = 2, 6: two; K = 8:
// eight; odd K: none), except for runs of 4, which are flipped to take none.
namespace {
template <int K>
void expect_stage_slots(int lanes) {
  SCOPED_TRACE("runs of " + std::to_string(K) + " chunks, " + std::to_string(lanes) + " lanes");
  std::vector<int> hits(size_t(lanes) * K, 0);
  for (int p = 0; p < lanes * K; ++p) {
    const int slot = stage_slot<K>(p);
    ASSERT_GE(slot, 0);
    ASSERT_LT(slot, lanes * K);
    EXPECT_EQ(slot / 8, p / 8);
    ++hits[slot];
  }
  for (int h : hits) EXPECT_EQ(h, 1);
  auto turns = [&](auto chunk) {  // the most lanes of one 8-lane access on one group of banks
    int worst = 0;
    for (int v = 0; v < K; ++v)
      for (int first = 0; first < lanes; first += 8) {
        int per_group[8] = {};
        for (int lane = first; lane < first + 8; ++lane)
          worst = std::max(worst, ++per_group[stage_slot<K>(chunk(v, lane)) % 8]);
      }
    return worst;
  };
  EXPECT_EQ(turns([&](int v, int lane) { return v * lanes + lane; }), 1);
  const int plain_turns = K % 2 == 1 ? 1 : K == 8 ? 8 : 2;
  EXPECT_EQ(turns([&](int v, int lane) { return lane * K + v; }), K == 4 ? 1 : plain_turns);
}
}  // namespace

TEST(Ch11Host, StageSlotsSpreadTheLanesOverTheBanks) {
  for (int lanes : {32, 64}) {
    expect_stage_slots<1>(lanes);
    expect_stage_slots<2>(lanes);
    expect_stage_slots<3>(lanes);
    expect_stage_slots<4>(lanes);
    expect_stage_slots<5>(lanes);
    expect_stage_slots<6>(lanes);
    expect_stage_slots<7>(lanes);
    expect_stage_slots<8>(lanes);
  }
}

// ---------------------------------------------------------------------------------------------
// Decoding loops on the GPU against the reference.

TEST(Ch11Decode, EveryDtypeWidthAndTokenCount) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  uint64_t seed = 100;
  for (Dtype t : {Dtype::fp32, Dtype::fp16, Dtype::bf16})
    for (int w : {2, 3, 4})
      for (int64_t tokens = 1; tokens <= kMaxTokens; ++tokens) {
        ++seed;
        const Options o = shape_options(3, 24, tokens, w, t, seed % 2 == 0, seed % 3 != 1, seed);
        for (int64_t extra : {0, 3}) {
          const DecodeFlags f = decode_flags(5, extra ? w - 1 + extra : 0, false);
          SCOPED_TRACE(describe(o, f));
          const Decode p = make_decode(o, f);
          const Kernel k = extra ? Kernel::channel : Kernel::vector;
          for (Buffer b : {Buffer::linear, Buffer::circular})
            expect_correct(p, b, run_loop(p, b, k));
        }
      }
}

TEST(Ch11Decode, RandomShapesBothKernelsSameBits) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  Rng rng(2222);
  for (int trial = 0; trial < 40; ++trial) {
    const Options o = random_decode_options(rng, trial);
    const DecodeFlags f = decode_flags(
        rng.range(1, 20), trial % 3 == 1 ? o.width - 1 + rng.range(1, 9) : 0, trial % 2 == 1);
    SCOPED_TRACE(describe(o, f));
    const Decode p = make_decode(o, f);
    const LoopResult lin = run_loop(p, Buffer::linear, Kernel::channel);
    const LoopResult circ = run_loop(p, Buffer::circular, Kernel::channel);
    expect_correct(p, Buffer::linear, lin);
    expect_correct(p, Buffer::circular, circ);
    EXPECT_TRUE(same_bits(lin.out, circ.out)) << "linear and circular outputs differ";
    if (vector_kernel_fits(o, f))
      for (Buffer b : {Buffer::linear, Buffer::circular}) {
        const LoopResult v = run_loop(p, b, Kernel::vector);
        expect_correct(p, b, v);
        EXPECT_TRUE(same_bits(v.out, lin.out)) << "vector and channel kernels differ";
      }
  }
}

// Many laps of the circular buffer, steps that bring more tokens than the state holds, a state
// of exactly W-1 and a long one.
TEST(Ch11Decode, WrapsManyTimesAndStepsLongerThanTheState) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  uint64_t seed = 300;
  for (int w : {2, 4})
    for (int64_t state : {int64_t(0), int64_t(5)})
      for (int64_t tokens : {int64_t(1), int64_t(7), int64_t(8)}) {
        const Options o = shape_options(4, 40, tokens, w, Dtype::bf16, true, true, ++seed);
        const DecodeFlags f = decode_flags(60, state, true);
        SCOPED_TRACE(describe(o, f));
        const Decode p = make_decode(o, f);
        for (Buffer b : {Buffer::linear, Buffer::circular}) {
          expect_correct(p, b, run_loop(p, b, Kernel::channel));
          if (vector_kernel_fits(o, f)) expect_correct(p, b, run_loop(p, b, Kernel::vector));
        }
      }
}

// Padding rows: outputs exactly 0; cache rows nobody names, bit for bit as before (expect_correct
// checks the whole cache against the expected one, which keeps them; here they are counted).
TEST(Ch11Decode, GatherLeavesOtherRowsUntouched) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  for (Dtype t : {Dtype::fp32, Dtype::bf16}) {
    const Options o = shape_options(17, 64, 2, 4, t, true, false, 77);
    const DecodeFlags f = decode_flags(9, 0, true, 50);
    const Decode p = make_decode(o, f);
    std::vector<bool> named(size_t(p.cache_rows), false);
    for (int64_t b = 0; b < o.batch; ++b)
      if (p.row_of(b) >= 0) named[p.row_of(b)] = true;
    for (Buffer b : {Buffer::linear, Buffer::circular})
      for (Kernel k : {Kernel::vector, Kernel::channel}) {
        SCOPED_TRACE(describe(o, f) + " " + buffer_name(b) + " " + kernel_name(k));
        const LoopResult r = run_loop(p, b, k);
        expect_correct(p, b, r);
        const int64_t row = o.dim * p.state_len;
        int64_t untouched_rows = 0;
        for (int64_t c = 0; c < p.cache_rows; ++c) {
          if (named[c]) continue;
          ++untouched_rows;
          for (int64_t i = c * row; i < (c + 1) * row; ++i)
            ASSERT_EQ(r.cache.get(i), p.cache_before[int(b)].get(i)) << "cache row " << c;
        }
        EXPECT_EQ(untouched_rows, p.cache_rows - p.active_rows);
      }
  }
}

// The block size only changes which block a thread is in: every size gives the same bits, with D
// not a multiple of any block (the last block of a row has threads past D).
// D = 1000 leaves the last warp of a row with a part of its lanes (125 groups of 8 bf16 channels,
// 250 of 4 fp32 ones). The vector kernel runs with spans (a step this small would not get them
// from the launch), and 8 tokens in blocks of 512 then take 64 KB of shared memory, more than a
// kernel gets without asking.
TEST(Ch11Decode, EveryBlockSizeGivesTheSameBits) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  for (Dtype t : {Dtype::fp32, Dtype::bf16})
    for (int64_t tokens : {int64_t(2), int64_t(8)}) {
      const Options o = shape_options(3, 1000, tokens, 4, t, true, true, 450);
      const DecodeFlags f = decode_flags(5, 0, true);
      const Decode p = make_decode(o, f);
      for (Buffer b : {Buffer::linear, Buffer::circular})
        for (Kernel k : {Kernel::vector, Kernel::channel}) {
          const LoopResult first = run_loop(p, b, k, false, 1, {64, true, Spans::on});
          expect_correct(p, b, first);
          for (int threads : {128, 256, 512}) {
            SCOPED_TRACE(describe(o, f) + " " + buffer_name(b) + " " + kernel_name(k) + " " +
                         std::to_string(threads) + " threads");
            const LoopResult r = run_loop(p, b, k, false, 1, {threads, true, Spans::on});
            EXPECT_TRUE(same_bits(r.out, first.out));
            EXPECT_TRUE(same_bits(r.cache, first.cache));
          }
        }
    }
}

// Warps that read whole spans and deal them out through shared memory, against lanes that read
// their own runs: the same bits, for every dtype, width and a range of token counts, rows whose
// last warp is partly past the row (D = 1000: 125 groups of 8 16-bit channels, 250 of 4 fp32
// ones), gathered rows with padding, both buffers; and the launch's own choice follows the step's
// size.
TEST(Ch11Decode, SpansGiveTheLanesOwnRunsBits) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  uint64_t seed = 470;
  for (Dtype t : {Dtype::fp32, Dtype::fp16, Dtype::bf16})
    for (int w = 2; w <= 4; ++w)
      for (int64_t tokens : {int64_t(1), int64_t(2), int64_t(3), int64_t(8)}) {
        const Options o = shape_options(3, 1000, tokens, w, t, true, true, ++seed);
        const DecodeFlags f = decode_flags(4, 0, seed % 2 == 0);
        const Decode p = make_decode(o, f);
        for (Buffer b : {Buffer::linear, Buffer::circular}) {
          SCOPED_TRACE(describe(o, f) + " " + buffer_name(b));
          const LoopResult runs = run_loop(p, b, Kernel::vector, false, 1, {0, true, Spans::off});
          expect_correct(p, b, runs);
          const LoopResult spans = run_loop(p, b, Kernel::vector, false, 1, {0, true, Spans::on});
          EXPECT_TRUE(same_bits(spans.out, runs.out));
          EXPECT_TRUE(same_bits(spans.cache, runs.cache));
        }
      }
  EXPECT_FALSE(use_spans(Spans::automatic, kSpansFrom - 1));
  EXPECT_TRUE(use_spans(Spans::automatic, kSpansFrom));
  EXPECT_TRUE(use_spans(Spans::on, 1));
  EXPECT_FALSE(use_spans(Spans::off, kSpansFrom));
}

TEST(Ch11Decode, GraphReplayGivesTheDirectLaunchesBits) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  uint64_t seed = 400;
  for (Dtype t : {Dtype::fp32, Dtype::fp16, Dtype::bf16})
    for (int64_t tokens : {int64_t(1), int64_t(4)}) {
      const Options o = shape_options(5, 48, tokens, 4, t, true, true, ++seed);
      const DecodeFlags f = decode_flags(16, 0, true);
      const Decode p = make_decode(o, f);
      for (Buffer b : {Buffer::linear, Buffer::circular})
        for (Kernel k : {Kernel::vector, Kernel::channel}) {
          SCOPED_TRACE(describe(o, f) + " " + buffer_name(b) + " " + kernel_name(k));
          const LoopResult direct = run_loop(p, b, k);
          const LoopResult replayed = run_loop(p, b, k, true, 3);
          expect_correct(p, b, replayed);
          EXPECT_TRUE(same_bits(replayed.out, direct.out));
          EXPECT_TRUE(same_bits(replayed.cache, direct.cache));
        }
    }
}

// Launched early, a step waits for the one before it before it touches x, the indices or the
// cache: the same bits as ordinary launches, directly and from a graph, on a shape big enough for
// steps to overlap (B*D/8 = 16384 threads of the vector kernel). On a GPU of compute capability 9.0
// or later the test also checks that the kernels are launched early (a build for older
// architectures only fails there: it would not test what this test says).
TEST(Ch11Decode, EarlyLaunchGivesTheOrdinaryLaunchesBits) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  uint64_t seed = 460;
  for (Dtype t : {Dtype::fp32, Dtype::bf16})
    for (int64_t tokens : {int64_t(1), int64_t(3)}) {
      const Options o = shape_options(64, 2048, tokens, 4, t, true, true, ++seed);
      const DecodeFlags f = decode_flags(12, 0, true);
      const Decode p = make_decode(o, f);
      for (Buffer b : {Buffer::linear, Buffer::circular})
        for (Kernel k : {Kernel::vector, Kernel::channel}) {
          SCOPED_TRACE(describe(o, f) + " " + buffer_name(b) + " " + kernel_name(k));
          const LoopResult ordinary = run_loop(p, b, k, false, 1, {0, false});
          expect_correct(p, b, ordinary);
          for (bool graph : {false, true}) {
            const LoopResult early = run_loop(p, b, k, graph, graph ? 3 : 1, {0, true});
            EXPECT_TRUE(same_bits(early.out, ordinary.out)) << (graph ? "graph" : "direct");
            EXPECT_TRUE(same_bits(early.cache, ordinary.cache)) << (graph ? "graph" : "direct");
          }
        }
    }
  if (query_device().major >= 9) {
    const Decode p = make_decode(shape_options(2, 64, 1, 4, Dtype::bf16, false, false, 1),
                                 decode_flags(1, 0, false));
    DecodeDevice d(p, true, false);
    for (Kernel k : {Kernel::vector, Kernel::channel}) {
      KernelFacts facts;
      launch_decode_step(d.first_step<__nv_bfloat16>(p, Buffer::linear), 4, k, 0, &facts);
      EXPECT_TRUE(facts.early) << kernel_name(k) << " is not launched early on this GPU";
    }
  }
}

// The chapter's proof: N decoding steps give chapter 10's forward over the same N*T tokens, from
// the same states, bit for bit — outputs, and the last W-1 inputs as its final states.
TEST(Ch11Decode, EqualsChapter10ForwardBitForBit) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  uint64_t seed = 500;
  for (Dtype t : {Dtype::fp32, Dtype::fp16, Dtype::bf16})
    for (int w : {2, 3, 4})
      for (int64_t tokens : {int64_t(1), int64_t(3), int64_t(8)}) {
        ++seed;
        const Options o =
            shape_options(2, w == 3 ? 37 : 40, tokens, w, t, seed % 2 == 0, seed % 3 != 0, seed);
        const DecodeFlags f = decode_flags(7, w == 4 ? 6 : 0, false);
        SCOPED_TRACE(describe(o, f));
        const Decode p = make_decode(o, f);
        const int64_t S = p.state_len, D = o.dim, B = o.batch;
        HostArray init(t, size_t(B * D * (w - 1))), decoded_final(t, init.size());
        const LoopResult lin = run_loop(p, Buffer::linear, Kernel::channel);
        for (int64_t r = 0; r < B * D; ++r)
          for (int64_t k = 0; k < w - 1; ++k) {
            init.set(r * (w - 1) + k,
                     p.cache_before[int(Buffer::linear)].get(r * S + S - (w - 1) + k));
            decoded_final.set(r * (w - 1) + k, lin.cache.get(r * S + S - (w - 1) + k));
          }
        Options rows = o;
        rows.seqlen = p.steps * tokens;
        for (Layout l : {Layout::channel_first, Layout::channel_last}) {
          const ForwardResult fwd = chapter10_forward(rows, p.in, init, l);
          EXPECT_TRUE(same_bits(lin.out, fwd.out)) << layout_name(l) << ": outputs differ";
          EXPECT_TRUE(same_bits(decoded_final, fwd.final_states))
              << layout_name(l) << ": final states differ";
        }
      }
}

// Refused launches: a vector launch the shape does not allow, more tokens than a step takes.
TEST(Ch11Decode, LauncherRefusesWhatItCannotRun) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  const Options o = shape_options(2, 12, 1, 4, Dtype::bf16, false, false, 1);
  const Decode p = make_decode(o, decode_flags(1, 0, false));
  DecodeDevice dev(p, true, false);
  StepArgs<__nv_bfloat16> a = dev.first_step<__nv_bfloat16>(p, Buffer::linear);
  EXPECT_FALSE(vector_fits(a, 4));  // D = 12 is not a multiple of 8
  EXPECT_EQ(choose_kernel(a, 4, "auto"), Kernel::channel);
  EXPECT_THROW(launch_decode_step(a, 4, Kernel::vector), std::invalid_argument);
  a.tokens = 9;
  EXPECT_THROW(launch_decode_step(a, 4, Kernel::channel), std::invalid_argument);
}
