// Chapter 10: chapter 09's staged backward (chapters/09_direct_backward/cf_staged.cuh) for rows
// that start from their states and, with seq_idx, hold several sequences, channel-first, of a
// length the vector divides. A row's first vector reads its initial states where chapter 09's
// reads zeros, its last vector adds the final states' gradient into the dx of the inputs they
// are, and the thread that holds a row's first vector writes the initial states' gradient. With
// seq_idx, the forward's words of taps (tap_words.cuh), made by a launch before this one, say
// which taps of each output count: a tap that does not count adds nothing to dz, to dx or to the
// sums, and an output none of whose taps count (padding) has dz 0.
#pragma once

#include <algorithm>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "chapters/09_direct_backward/cf_staged.cuh"
#include "chapters/10_packed_sequences/policy.cuh"
#include "common/async_copy.cuh"
#include "common/fast_divmod.h"
#include "common/launch.cuh"

namespace conv1d::ch10 {

using ch08::kStagedMine;
using ch08::kStagedThreads;
using ch08::kStagedVectors;
using ch09::bwd_staged_takes;
using ch09::bwd_staged_tiles;
using ch09::BwdStagedTiles;
using ch09::kBwdStageVectors;

// Two stages, not chapter 09's three: the states' loads and the words take registers, and with
// two stages of shared memory a multiprocessor holds five blocks instead of four.
constexpr int kRowsBwdStages = 2;
constexpr size_t kRowsBwdSmemBytes = size_t(kRowsBwdStages) * kBwdStageVectors * 16;

// The rows' states (RowStatesBwd, RowTapsBwd in backward.cuh): for row r, state<W>(r) (its initial
// states, or nullptr: zeros), dfinal<W>(r) (the gradient, or nullptr) and dinit<W>(r, f, dz,
// reaches), which writes the initial states' gradient from dz at the row's first W-1 positions
// (reaches(t): whether output t sees the states). With kTapWords, for rows of several sequences:
// word(b, v) (= words_of(b)[v]), which taps of each output of vector v of batch row b count (bit
// e*W + k: tap k of the vector's output e, the state's taps included). For such rows the kernel
// without SiLU is compiled apart (kSilu off: no SiLU code in it, and a warp vote); with SiLU it
// asks at each position (kSilu runtime), as chapter 09's kernel does.
// [docs:ch10_cf_staged_bwd]
template <class T, int W, bool kWholeRows, class States, Silu kSilu>
__global__ void __launch_bounds__(kStagedThreads)
    conv_bwd_cf_staged(BwdArgs<T> a, BwdStagedTiles g, int64_t blocks, States states) {
  constexpr int kPer = kPer16<T>, kWarps = kStagedThreads / kWarpLanes;
  constexpr int kGroups = kStagedVectors / kWarpLanes;  // a tile's groups of 32 vectors: a warp's
  constexpr int kStages = kRowsBwdStages;
  extern __shared__ Bytes16 staged[];  // kStages stages of kBwdStageVectors vectors
  __shared__ float group_sums[kGroups][W + 1];
  const int64_t rows = a.batch * a.dim, row_vectors = a.seqlen / kPer;
  const int64_t block = blockIdx.x, count = block < g.tiles ? ceil_div(g.tiles - block, blocks) : 0;
  constexpr bool whole_rows = kWholeRows;  // (g.rows_per_tile > 1: two kernels, see the launch)
  struct Tile {
    int64_t row, chunk, p0;  // its first row, the piece of that row, the piece's first position
    int vectors;
  };
  auto tile_of = [&](int64_t i) {
    const int64_t t = block + i * blocks;
    Tile tl;
    if constexpr (!whole_rows) {
      tl.row = g.by_per_row.div(t);
      tl.chunk = t - tl.row * g.per_row;
      tl.p0 = tl.chunk * kStagedVectors * kPer;
      tl.vectors = int(std::min<int64_t>(kStagedVectors, (a.seqlen - tl.p0) / kPer));
    } else {
      tl.row = t * g.rows_per_tile;
      tl.chunk = tl.p0 = 0;
      tl.vectors = int(std::min(g.rows_per_tile, rows - tl.row) * row_vectors);
    }
    return tl;
  };
  // A stage's x: [0] the vector before the tile, [1 + v] the tile's vector v, [1 + vectors] the one
  // after it; its dout: [v] and [vectors].
  auto x_stage = [&](int64_t i) { return staged + (i % kStages) * kBwdStageVectors; };
  auto dout_stage = [&](int64_t i) { return x_stage(i) + 1 + kStagedVectors + 1; };

  // The copies of this block's tile i (none past its last tile): one group a call. A halo outside
  // the row is a copy of no bytes: zeros.
  auto fetch = [&](int64_t i) {
    if (i < count) {
      const Tile tl = tile_of(i);
      const int64_t at = tl.row * a.seqlen + tl.p0;
      const T *x = a.x + at, *dout = a.dout + at;
      Bytes16 *xs = x_stage(i), *gs = dout_stage(i);
#pragma unroll
      for (int j = 0; j < kStagedMine; ++j) {
        const int v = threadIdx.x + j * kStagedThreads;
        if (v < tl.vectors) {
          copy16_async(&xs[1 + v], x + v * kPer, 16);
          copy16_async(&gs[v], dout + v * kPer, 16);
        }
      }
      const int64_t end = int64_t(tl.vectors) * kPer;
      const int inside_after = tl.p0 + end < a.seqlen ? 16 : 0;
      if (threadIdx.x == 0) copy16_async(&xs[0], tl.p0 > 0 ? x - kPer : x, tl.p0 > 0 ? 16 : 0);
      if (threadIdx.x == kWarpLanes) {  // (another warp's thread: a warp's copies are its own)
        copy16_async(&xs[1 + tl.vectors], inside_after ? x + end : x, inside_after);
        copy16_async(&gs[tl.vectors], inside_after ? dout + end : dout, inside_after);
      }
    }
    async_commit();
  };
  for (int s = 0; s < kStages - 1; ++s) fetch(s);
  // The words are made by the launch before this one: from here on they are read.
  if constexpr (States::kTapWords) wait_for_previous_launch();

  for (int64_t i = 0; i < count; ++i) {
    // Before the tile lands: each vector's row and place in it, its words and states, its filter.
    const Tile tl = tile_of(i);
    int64_t row[kStagedMine], t0[kStagedMine];
#pragma unroll
    for (int j = 0; j < kStagedMine; ++j) {
      const int64_t v = threadIdx.x + j * kStagedThreads;
      const int64_t r = whole_rows ? g.by_row_vectors.div(v) : 0;
      row[j] = tl.row + r;
      t0[j] = tl.p0 + (v - r * row_vectors) * kPer;
    }
    auto channel = [&](int64_t r) { return r - g.by_dim.div(r) * a.dim; };
    // Each vector's filter. With tap words it is loaded last, after the words and the states
    // (loaded first, the warp waited for it before asking for them: two trips to memory a tile
    // where the plain kernel has one). Without words, first: there is nothing to overlap it with,
    // and asked last it only comes later (the states alone ran 1.9 % slower so).
    Filter<W> f[whole_rows ? kStagedMine : 1];  // (a piece of a row: one)
    auto load_filters = [&] {
#pragma unroll
      for (int j = 0; j < (whole_rows ? kStagedMine : 1); ++j)
        f[j] = load_filter<W>(a.weight, a.bias, channel(row[j] < rows ? row[j] : tl.row));
    };
    if constexpr (!States::kTapWords) load_filters();
    // The taps that count of each vector's outputs and of the W-1 after them (every tap unless the
    // rows have several sequences: then the words of the vector and of the next); a row's first
    // vector's state (the x before t = 0) and its last vector's final states' gradient (where the
    // row's last output sees those inputs); zeros for every other vector.
    constexpr int kWords = States::kTapWords ? kStagedMine : 1;
    uint32_t own_word[kWords] = {}, next_word[kWords] = {};
    if constexpr (States::kTapWords) {
      // (In a piece of a row, vector u's word is the u-th after the tile's first.)
      const uint32_t* my_words =
          whole_rows ? nullptr : states.words_of(g.by_dim.div(tl.row)) + tl.p0 / kPer + threadIdx.x;
#pragma unroll
      for (int j = 0; j < kStagedMine; ++j) {
        own_word[j] = next_word[j] = ~0u;  // (past L: every tap; dout is 0 there)
        const int u = threadIdx.x + j * kStagedThreads;
        if (u >= tl.vectors) continue;
        if constexpr (whole_rows) {
          const int64_t b = g.by_dim.div(row[j]), v = t0[j] / kPer;
          own_word[j] = states.word(b, v);
          if (t0[j] + kPer < a.seqlen) next_word[j] = states.word(b, v + 1);
        } else {
          own_word[j] = my_words[j * kStagedThreads];
          if (t0[j] + kPer < a.seqlen) next_word[j] = my_words[j * kStagedThreads + 1];
        }
      }
    }
    auto taps = [&](int j, int e) -> unsigned {  // of output t0[j] + e, e < kPer + W-1
      if constexpr (!States::kTapWords) return kAllTaps<W>;
      return (e < kPer ? own_word[j] >> (e * W) : next_word[j] >> ((e - kPer) * W)) & kAllTaps<W>;
    };
    // (With tap words a state is kept as loaded and converted where it is used: converted here,
    // the warp would wait for it before the filter is asked for.)
    using Kept = std::conditional_t<States::kTapWords, T, float>;
    auto keep = [](T v) -> Kept {
      if constexpr (std::is_same_v<Kept, T>)
        return v;
      else
        return to_float(v);
    };
    Kept state[kStagedMine][W - 1];
    float dfinal[kStagedMine][W - 1] = {};
#pragma unroll
    for (int j = 0; j < kStagedMine; ++j)
#pragma unroll
      for (int q = 0; q < W - 1; ++q) state[j][q] = from_float<Kept>(0.0f);
#pragma unroll
    for (int j = 0; j < kStagedMine; ++j) {
      if (int(threadIdx.x) + j * kStagedThreads >= tl.vectors) continue;
      if (t0[j] == 0)
        if (const T* st = states.template state<W>(row[j]))
#pragma unroll
          for (int q = 0; q < W - 1; ++q) state[j][q] = keep(st[q]);
      if (t0[j] + kPer == a.seqlen)
        if (const float* df = states.template dfinal<W>(row[j]))
#pragma unroll
          for (int q = 0; q < W - 1; ++q)  // (input L-(W-1)+q: tap q+1 of output L-1)
            if (taps(j, kPer - 1) >> (q + 1) & 1u) dfinal[j][q] = df[q];
    }

    if constexpr (States::kTapWords) load_filters();

    // The tile has landed when every thread's copies of it have; the stage the block finished with
    // last takes the tile kStages - 1 ahead.
    async_wait<kStages - 2>();
    __syncthreads();
    fetch(i + kStages - 1);

    const Bytes16 *xs = x_stage(i), *gs = dout_stage(i);
    GradSums<W> sums[whole_rows ? kStagedMine : 1];  // whole rows: a group of 32 vectors each
#pragma unroll
    for (int j = 0; j < kStagedMine; ++j) {
      const int v = threadIdx.x + j * kStagedThreads;
      // (Rows with seq_idx, without SiLU: a warp whose vectors all count every tap, those of the
      // W-1 outputs after them too, takes chapter 09's arithmetic, without the words; a vote, so
      // that the warp runs one. With SiLU the arithmetic is long enough that its second copy costs
      // more than it saves, and every warp takes the words.)
      constexpr bool kVote = States::kTapWords && kSilu == Silu::off;
      constexpr uint32_t kOwnAll = uint32_t((uint64_t(1) << (kPer * W)) - 1),
                         kNextAll = (1u << ((W - 1) * W)) - 1;
      bool every_tap = false;
      if constexpr (kVote)
        every_tap = warp_all(v >= tl.vectors || ((own_word[j] & kOwnAll) == kOwnAll &&
                                                 (next_word[j] & kNextAll) == kNextAll));
      if (v >= tl.vectors) continue;
      const Filter<W>& fv = f[whole_rows ? j : 0];
      // x[t0 - (W-1) .. t0 + kPer + W-2] and dout[t0 .. t0 + kPer + W-2], t0 the vector's first
      // position; zeros before t = 0 and from L on (whole rows a tile: the stage holds the next
      // row's first vector there).
      Bytes16 prev16 = xs[v], x_next16 = xs[2 + v], g_next16 = gs[1 + v];
      if constexpr (whole_rows) {
        if (t0[j] == 0) prev16 = Bytes16{};
        if (t0[j] + kPer == a.seqlen) x_next16 = g_next16 = Bytes16{};
      }
      const Vec<T, kPer> x_prev = bit_cast<Vec<T, kPer>>(prev16),
                         x_own = bit_cast<Vec<T, kPer>>(xs[1 + v]),
                         x_next = bit_cast<Vec<T, kPer>>(x_next16),
                         g_own = bit_cast<Vec<T, kPer>>(gs[v]),
                         g_next = bit_cast<Vec<T, kPer>>(g_next16);
      float xw[(W - 1) + kPer + (W - 1)], gw[kPer + (W - 1)];
#pragma unroll
      for (int q = 0; q < W - 1; ++q) {
        xw[q] = to_float(x_prev.v[kPer - (W - 1) + q]);
        xw[(W - 1) + kPer + q] = to_float(x_next.v[q]);
        gw[kPer + q] = to_float(g_next.v[q]);
      }
#pragma unroll
      for (int e = 0; e < kPer; ++e) {
        xw[(W - 1) + e] = to_float(x_own.v[e]);
        gw[e] = to_float(g_own.v[e]);
      }
      if (t0[j] == 0)
#pragma unroll
        for (int q = 0; q < W - 1; ++q) xw[q] = to_float(state[j][q]);
      auto arithmetic = [&](auto masked) {
        auto taps_here = [&](int e) -> unsigned {  // (without the words: every tap)
          if constexpr (decltype(masked)::value) return taps(j, e);
          return kAllTaps<W>;
        };
        // dz at the vector's positions and the W-1 after them (0 past L: dout is 0 there).
        float dz[kPer + (W - 1)];
#pragma unroll
        for (int e = 0; e < kPer + (W - 1); ++e) {
          const float d = dz_masked<W>(fv, &xw[e], taps_here(e), gw[e], silu_in<kSilu>(a));
          dz[e] = taps_here(e) ? d : 0.0f;  // (padding: no tap counts)
        }
        // dx, and the vector's terms of the sums (x before t = 0 is 0 in xw, or the row's state).
        // (A position whose input is one of the final states receives that state's gradient
        // first, so the sum runs in the order one pass over a longer row would take.)
        float y[kPer];
#pragma unroll
        for (int e = 0; e < kPer; ++e) {
          float acc = 0.0f;
          if (e >= kPer - (W - 1)) acc = dfinal[j][e - (kPer - (W - 1))];
#pragma unroll
          for (int k = 0; k < W; ++k)  // (dz[t] reaches dx here through tap k of output t)
            if (taps_here(e + (W - 1) - k) >> k & 1u) acc += fv.w[k] * dz[e + (W - 1) - k];
          y[e] = acc;
#pragma unroll
          for (int k = 0; k < W; ++k)
            if (taps_here(e) >> k & 1u) sums[whole_rows ? j : 0].v[k] += dz[e] * xw[e + k];
          sums[whole_rows ? j : 0].v[W] += dz[e];
        }
        if (t0[j] == 0)  // (output t sees the states when it sees x[0])
          states.template dinit<W>(row[j], fv, dz,
                                   [&](int t) { return (taps_here(t) >> (W - 1 - t) & 1u) != 0; });
        store16_unordered(a.dx + row[j] * a.seqlen + t0[j], from_floats<T, kPer>(y));
      };
      if constexpr (!States::kTapWords)
        arithmetic(std::false_type{});  // (every tap counts: no words)
      else if (kVote && every_tap)
        arithmetic(std::false_type{});
      else
        arithmetic(std::true_type{});
    }

    // The units, in a fixed order: a piece of a row takes one butterfly over each warp; whole rows
    // take a butterfly for each group of 32 vectors (a group lies in one row). Then each row's
    // groups in order. (The next tile's barrier keeps group_sums until they are read.)
    const int warp = threadIdx.x / kWarpLanes, lane = threadIdx.x % kWarpLanes;
    if constexpr (!whole_rows) {
      warp_sum<W>(sums[0], kWarpLanes - 1);
      if (lane == 0)
#pragma unroll
        for (int k = 0; k <= W; ++k) group_sums[warp][k] = sums[0].v[k];
    } else {
#pragma unroll
      for (int j = 0; j < kStagedMine; ++j) {
        warp_sum<W>(sums[j], kWarpLanes - 1);
        if (lane == 0)
#pragma unroll
          for (int k = 0; k <= W; ++k) group_sums[j * kWarps + warp][k] = sums[j].v[k];
      }
    }
    __syncthreads();
    const int64_t tile_rows = whole_rows ? tl.vectors / row_vectors : 1;
    if (const int me = int(threadIdx.x); me < tile_rows) {  // thread r: the tile's row r
      const int row_groups = whole_rows ? int(row_vectors / kWarpLanes) : kWarps;
      GradSums<W> unit;
      for (int q = me * row_groups; q < (me + 1) * row_groups; ++q)
#pragma unroll
        for (int k = 0; k <= W; ++k) unit.v[k] += group_sums[q][k];
      const int64_t r = tl.row + me;
      emit_sums<W>(a, r * g.per_row + tl.chunk, channel(r), unit);
    }
  }
  async_wait_all();  // (the groups past the last tile are empty)
}
// [/docs:ch10_cf_staged_bwd]

// As many blocks as the GPU holds at once, at most `max_blocks` when that is set (the tests give a
// block many tiles). With tap words the kernel may start while the launch before it, which makes
// them, finishes (common/launch.cuh).
template <class T, class States>
void launch_cf_bwd_staged(const BwdArgs<T>& a, int width, cudaStream_t s, KernelFacts* facts,
                          int64_t max_blocks, const States& states) {
  if (!bwd_staged_takes(a))
    throw std::invalid_argument(
        "conv_bwd_cf_staged: needs L a multiple of " + std::to_string(kPer16<T>) +
        " elements (rows on 16-byte boundaries) and x, dout and dx 16-byte aligned (cf_fused "
        "takes any L)");
  const BwdStagedTiles g = bwd_staged_tiles(a);
  dispatch_width(width, [&](auto w) {
    constexpr int W = decltype(w)::value;
    auto pick = [&](auto silu) {
      constexpr Silu S = decltype(silu)::value;
      return g.rows_per_tile > 1 ? conv_bwd_cf_staged<T, W, true, States, S>
                                 : conv_bwd_cf_staged<T, W, false, States, S>;
    };
    using Runtime = std::integral_constant<Silu, Silu::runtime>;
    using Off = std::integral_constant<Silu, Silu::off>;
    auto kernel = States::kTapWords && !a.silu ? pick(Off{}) : pick(Runtime{});
    int64_t blocks =
        resident_blocks(reinterpret_cast<const void*>(kernel), kStagedThreads, kRowsBwdSmemBytes);
    if (max_blocks > 0) blocks = std::min(blocks, max_blocks);
    blocks = std::max<int64_t>(1, std::min(blocks, g.tiles));
    launch_early_or_describe("conv_bwd_cf_staged", kernel, blocks, kStagedThreads,
                             kRowsBwdSmemBytes, s, facts, States::kTapWords, a, g, blocks, states);
  });
}

}  // namespace conv1d::ch10
