// Chapter 10: chapter 08's staged kernel (chapters/08_direct_forward/cf_staged.cuh) for packed
// rows of a length the vector divides, taught the sequence policy through words of taps
// (tap_words.cuh): a word a vector, made by a small kernel before this one, says which taps of each
// of its outputs count. A warp whose vectors count every tap takes chapter 08's unmasked form; any
// other takes each output by its taps (padding: exactly 0). A row's first vector reads its initial
// states where chapter 08's reads zeros, and its last vector writes the row's final states: the
// staged kernel takes every vector itself, with no second launch.
#pragma once

#include <algorithm>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "chapters/08_direct_forward/cf_staged.cuh"
#include "chapters/10_packed_sequences/policy.cuh"
#include "common/async_copy.cuh"
#include "common/launch.cuh"
#include "common/warp.cuh"

namespace conv1d::ch10 {

using ch08::cf_window;
using ch08::CfWindow;
using ch08::kStagedMine;
using ch08::kStagedSmemBytes;
using ch08::kStagedStages;
using ch08::kStagedStageVectors;
using ch08::kStagedThreads;
using ch08::kStagedVectors;
using ch08::staged_takes;
using ch08::staged_tiles;
using ch08::StagedTiles;

// Taps (TapWords, tap_words.cuh): word(b, v), the taps of vector v of batch row b as one word,
// bit o*W + k for tap k of output o (all set: every tap counts; none for an output: padding,
// exactly 0); state<W>(row), the W-1 inputs before a row (nullptr: zeros); final_states<W>(row),
// where its last W-1 inputs go (nullptr: nowhere). SiLU is compiled in or out (kSilu on, off).
// [docs:ch10_cf_staged]
template <class T, int W, class Taps, Silu kSilu>
__global__ void __launch_bounds__(kStagedThreads)
    conv_fwd_cf_staged(DirectArgs<T> a, StagedTiles g, Taps taps, int64_t blocks) {
  constexpr int kPer = kPer16<T>;
  const bool silu = silu_in<kSilu>(a);
  constexpr uint32_t kEveryTap = kPer * W >= 32 ? ~0u : (1u << (kPer * W)) - 1u;  // a word's bits
  extern __shared__ Bytes16 staged[];  // kStagedStages stages of kStagedStageVectors vectors
  const int64_t rows = a.batch * a.dim, row_vectors = a.seqlen / kPer;
  const int64_t block = blockIdx.x, count = block < g.tiles ? ceil_div(g.tiles - block, blocks) : 0;
  // Tile i of this block: its first row, its first position in that row, its vectors.
  struct Tile {
    int64_t row, p0;
    int vectors;
  };
  auto tile_of = [&](int64_t i) {
    const int64_t t = block + i * blocks;
    Tile tl;
    if (g.per_row > 1) {  // a piece of one row
      const int64_t chunk = t - g.by_per_row.div(t) * g.per_row;
      tl.row = g.by_per_row.div(t);
      tl.p0 = chunk * kStagedVectors * kPer;
      tl.vectors = int(std::min<int64_t>(kStagedVectors, (a.seqlen - tl.p0) / kPer));
    } else {  // whole rows
      tl.row = t * g.rows_per_tile;
      tl.p0 = 0;
      tl.vectors = int(std::min(g.rows_per_tile, rows - tl.row) * row_vectors);
    }
    return tl;
  };
  auto stage_of = [&](int64_t i) { return staged + (i % kStagedStages) * kStagedStageVectors; };

  // The copies of this block's tile i (none past its last tile): one group a call.
  auto fetch = [&](int64_t i) {
    if (i < count) {
      const Tile tl = tile_of(i);
      const T* src = a.x + tl.row * a.seqlen + tl.p0;
      Bytes16* stage = stage_of(i);
#pragma unroll
      for (int j = 0; j < kStagedMine; ++j) {
        const int v = threadIdx.x + j * kStagedThreads;
        if (v < tl.vectors) copy16_async(&stage[1 + v], src + v * kPer, 16);
      }
      if (threadIdx.x == 0 && tl.p0 > 0) copy16_async(&stage[0], src - kPer, 16);
    }
    async_commit();
  };
  for (int s = 0; s < kStagedStages - 1; ++s) fetch(s);

  for (int64_t i = 0; i < count; ++i) {
    // Before the tile lands: each vector's row and place in it, its taps, the filter.
    const Tile tl = tile_of(i);
    int64_t row[kStagedMine], t0[kStagedMine];
    uint32_t taps_word[kStagedMine];
    if (i == 0) wait_for_previous_launch();  // (the words are made by the launch before this one)
    const int64_t tile_b = g.by_dim.div(tl.row);  // the batch row of the tile's first row
    const int64_t tile_v0 = tl.p0 / kPer;         // and its first vector's place in the row
    // A tile of whole short rows finds each vector's row and batch row by division; a piece of
    // one row (every tile of rows at least half a tile long) has them from the tile, once.
    auto places = [&](auto whole_rows) {
#pragma unroll
      for (int j = 0; j < kStagedMine; ++j) {
        const int v = threadIdx.x + j * kStagedThreads;
        const int64_t r = whole_rows ? g.by_row_vectors.div(v) : 0;
        row[j] = tl.row + r;
        t0[j] = tl.p0 + (v - r * row_vectors) * kPer;
        const int64_t b = whole_rows ? g.by_dim.div(row[j]) : tile_b;
        // In a piece of a row, vector v's word is the v-th after the tile's first: one address a
        // tile, the four loads at offsets from it.
        taps_word[j] = v < tl.vectors ? taps.word(b, whole_rows ? t0[j] / kPer : tile_v0 + v) : 0u;
      }
    };
    if (g.rows_per_tile > 1)
      places(std::true_type{});
    else
      places(std::false_type{});
    const Filter<W> tile_filter = load_filter<W>(a, tl.row - tile_b * a.dim);

    // The tile has landed when this thread's copies of it have, and every other thread's too;
    // the stage the block finished with last is free, and takes the tile kStagedStages-1 ahead.
    async_wait<kStagedStages - 2>();
    __syncthreads();
    fetch(i + kStagedStages - 1);

    const Bytes16* stage = stage_of(i);
#pragma unroll
    for (int j = 0; j < kStagedMine; ++j) {
      const int v = threadIdx.x + j * kStagedThreads;
      // One form for the whole warp: unmasked when every tap of every output of every lane's
      // vector counts, else each output by its taps. A warp whose lanes took both forms would run
      // both, one after the other.
      const bool every_tap = warp_all(v >= tl.vectors || (taps_word[j] & kEveryTap) == kEveryTap);
      if (v >= tl.vectors) continue;
      const Filter<W> f =
          row[j] == tl.row ? tile_filter : load_filter<W>(a, row[j] - g.by_dim.div(row[j]) * a.dim);
      // The W-1 inputs before the vector: the vector before it, or before a row, its state.
      Vec<T, kPer> prev = zero_vec<T, kPer>();
      if (t0[j] > 0) {
        prev = bit_cast<Vec<T, kPer>>(stage[v]);
      } else if (const T* st = taps.template state<W>(row[j])) {
#pragma unroll
        for (int q = 0; q < W - 1; ++q) prev.v[kPer - (W - 1) + q] = st[q];
      }
      const CfWindow<T, W> win = cf_window<T, W>(prev, bit_cast<Vec<T, kPer>>(stage[1 + v]));
      const uint32_t m = taps_word[j];
      float y[kPer];
      if (every_tap) {
#pragma unroll
        for (int o = 0; o < kPer; ++o) y[o] = conv_output<W, false>(f, &win.v[o], 0, silu);
      } else {  // each output by its taps; none: padding, exactly 0
#pragma unroll
        for (int o = 0; o < kPer; ++o)
          y[o] = output_or_padding<W>(f, &win.v[o], m >> (o * W) & kAllTaps<W>, silu);
      }
      store16_unordered(a.out + row[j] * a.seqlen + t0[j], from_floats<T, kPer>(y));
      // A row's last W-1 inputs of its last sequence: tap q+1 of its last output.
      if (t0[j] + kPer == a.seqlen)
        if (T* fin = taps.template final_states<W>(row[j]))
#pragma unroll
          for (int q = 0; q < W - 1; ++q)
            fin[q] = m >> ((kPer - 1) * W + q + 1) & 1u ? from_float<T>(win.v[kPer + q])
                                                        : from_float<T>(0.0f);
    }
  }
  async_wait_all();  // (the groups past the last tile are empty)
}
// [/docs:ch10_cf_staged]

// At most `max_blocks` blocks when that is set (the tests give a block many tiles), else as many
// as the GPU holds at once. Launched early (common/launch.cuh): behind the kernel that makes the
// words, the kernel's first copies start while that one finishes.
template <class T, class Taps>
void launch_cf_staged(const DirectArgs<T>& a, int width, cudaStream_t s, KernelFacts* facts,
                      const Taps& taps, int64_t max_blocks = 0) {
  if (!staged_takes(a))
    throw std::invalid_argument(
        "conv_fwd_cf_staged: needs L a multiple of " + std::to_string(kPer16<T>) +
        " elements (rows on 16-byte boundaries) and x and out 16-byte aligned (cf_chunked takes "
        "any L)");
  const StagedTiles g = staged_tiles(a);
  dispatch_width(width, [&](auto w) {
    constexpr int W = decltype(w)::value;
    auto kernel = a.silu ? conv_fwd_cf_staged<T, W, Taps, Silu::on>
                         : conv_fwd_cf_staged<T, W, Taps, Silu::off>;
    int64_t blocks =
        resident_blocks(reinterpret_cast<const void*>(kernel), kStagedThreads, kStagedSmemBytes);
    if (max_blocks > 0) blocks = std::min(blocks, max_blocks);
    blocks = std::max<int64_t>(1, std::min(blocks, g.tiles));
    launch_early_or_describe("conv_fwd_cf_staged", kernel, blocks, kStagedThreads, kStagedSmemBytes,
                             s, facts, taps.words != nullptr, a, g, taps, blocks);
  });
}

}  // namespace conv1d::ch10
