// Chapter 09, step 3 (`staged`, channel-first): chapter 08's staged tiles (step 4 there) for the
// backward. cf_fused holds a chunk's x and dout in registers: what a warp has in flight is what its
// registers hold, and at 8x4096x4096 bf16 it stayed near 80 % of the copy ceiling. Here a block is
// persistent and takes tiles one after another (a piece of a row: at most 512 vectors of 16 bytes
// of x, and the same of dout; or several whole short rows); while it computes one, the copies of
// the next kBwdStagedStages - 1 tiles are on their way into shared memory (cp.async). Everything a
// vector needs lies beside it in the stage:
//
//   x     [before] [the tile's vectors ...] [after]   before: the vector in front of the tile
//   dout            [the tile's vectors ...] [after]          (zeros at t = 0); after: the vector
//                                                              behind it (zeros at L)
//
// so a thread reads the vector before its own for the x behind (z and dweight's taps), and the
// vector after it for dz at the W-1 positions ahead (dx[s] reads dz up to s + W-1): no shuffles, no
// "last lane" special case, and the zeros copied at the row's ends take care of t < 0 and t >= L.
// dz ahead is computed twice (by this vector's thread and the next one's): W-1 extra dz per kPer,
// arithmetic the kernel has to spare. Each piece of a row is a unit of the deterministic sums: a
// fixed butterfly in each warp, then the warps in order. Rows must start on 16-byte boundaries (L
// a multiple of the vector), as in the forward.
#pragma once

#include <algorithm>
#include <stdexcept>
#include <string>

#include "chapters/08_direct_forward/cf_staged.cuh"
#include "chapters/09_direct_backward/bwd_common.cuh"
#include "common/async_copy.cuh"
#include "common/fast_divmod.h"
#include "common/launch.cuh"

namespace conv1d::ch09 {

using ch08::kStagedMine;     // a thread's vectors of a tile (4)
using ch08::kStagedThreads;  // a block (128)
using ch08::kStagedVectors;  // vectors of x (and of dout) a tile at most (512)

// Three stages of 16 KB (x and dout make a tile twice the forward's): 48 KB a block, four blocks a
// Hopper multiprocessor, two tiles on their way while a block computes the third.
constexpr int kBwdStagedStages = 3;
constexpr int kBwdStageVectors = (1 + kStagedVectors + 1) + (kStagedVectors + 1);
constexpr size_t kBwdStagedSmemBytes = size_t(kBwdStagedStages) * kBwdStageVectors * 16;

// The tiles (bwd_staged_tiles): `per_row` pieces of each row (the last one may be shorter), tile t
// piece t % per_row of row t / per_row; or, for rows of at most half a tile whose vectors fill
// whole warps (a multiple of 32 vectors), `rows_per_tile` whole rows a tile. Either way each
// piece of a row is one unit of the sums: unit row * per_row + piece.
struct BwdStagedTiles {
  int64_t tiles = 0, per_row = 1, rows_per_tile = 1;
  FastDivmod by_per_row, by_row_vectors, by_dim;
};

// [docs:ch09_cf_staged]
template <class T, int W, bool kWholeRows>
__global__ void __launch_bounds__(kStagedThreads)
    conv_bwd_cf_staged(BwdArgs<T> a, BwdStagedTiles g, int64_t blocks) {
  constexpr int kPer = kPer16<T>, kWarps = kStagedThreads / kWarpLanes;
  constexpr int kGroups = kStagedVectors / kWarpLanes;  // a tile's groups of 32 vectors: a warp's
  constexpr int kStages = kBwdStagedStages;
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

  for (int64_t i = 0; i < count; ++i) {
    // Before the tile lands: each vector's row and place in it, and its filter.
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
    Filter<W> f[whole_rows ? kStagedMine : 1];  // (a piece of a row: one)
#pragma unroll
    for (int j = 0; j < (whole_rows ? kStagedMine : 1); ++j)
      f[j] = load_filter<W>(a.weight, a.bias, channel(row[j] < rows ? row[j] : tl.row));

    // The tile has landed when every thread's copies of it have; the stage the block finished with
    // last takes the tile kStages - 1 ahead.
    async_wait<kStages - 2>();
    __syncthreads();
    fetch(i + kStages - 1);

    // [docs:ch09_cf_staged_vectors]
    const Bytes16 *xs = x_stage(i), *gs = dout_stage(i);
    GradSums<W> sums[whole_rows ? kStagedMine : 1];  // whole rows: a group of 32 vectors each
#pragma unroll
    for (int j = 0; j < kStagedMine; ++j) {
      const int v = threadIdx.x + j * kStagedThreads;
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
      // dz at the vector's positions and the W-1 after them (0 past L: dout is 0 there).
      float dz[kPer + (W - 1)];
#pragma unroll
      for (int e = 0; e < kPer + (W - 1); ++e) dz[e] = dz_at<W>(fv, &xw[e], gw[e], a.silu);
      // dx, and the vector's terms of the sums (x before t = 0 is 0 in xw).
      float y[kPer];
#pragma unroll
      for (int e = 0; e < kPer; ++e) {
        float acc = 0.0f;
#pragma unroll
        for (int k = 0; k < W; ++k) acc += fv.w[k] * dz[e + (W - 1) - k];
        y[e] = acc;
#pragma unroll
        for (int k = 0; k < W; ++k) sums[whole_rows ? j : 0].v[k] += dz[e] * xw[e + k];
        sums[whole_rows ? j : 0].v[W] += dz[e];
      }
      store16_unordered(a.dx + row[j] * a.seqlen + t0[j], ch08::from_floats<T, kPer>(y));
    }
    // [/docs:ch09_cf_staged_vectors]

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
// [/docs:ch09_cf_staged]

// Can the staged kernel take this problem? Rows on 16-byte boundaries: L a multiple of the vector,
// x, dout and dx 16-byte aligned. (cf_fused takes the rest.)
template <class T>
bool bwd_staged_takes(const BwdArgs<T>& a) {
  return a.seqlen % kPer16<T> == 0 && aligned_to(a.x, 16) && aligned_to(a.dout, 16) &&
         aligned_to(a.dx, 16);
}

// Pieces of a row: the units of the deterministic sums a row (cf_bwd_partials lays them out).
inline int64_t cf_bwd_staged_chunks(int64_t seqlen, int per16) {
  return std::max<int64_t>(1, ceil_div(seqlen / per16, int64_t(kStagedVectors)));
}

// Whole rows a tile: rows of at most half a tile that fill whole warps; otherwise 1 (pieces).
inline int64_t bwd_staged_rows_per_tile(int64_t seqlen, int per16) {
  const int64_t row_vectors = seqlen / per16;
  return row_vectors % kWarpLanes == 0 && row_vectors * 2 <= kStagedVectors
             ? kStagedVectors / row_vectors
             : 1;
}

template <class T>
BwdStagedTiles bwd_staged_tiles(const BwdArgs<T>& a) {
  BwdStagedTiles g;
  const int64_t rows = a.batch * a.dim;
  g.per_row = cf_bwd_staged_chunks(a.seqlen, kPer16<T>);
  g.rows_per_tile = bwd_staged_rows_per_tile(a.seqlen, kPer16<T>);
  g.tiles = g.rows_per_tile > 1 ? ceil_div(rows, g.rows_per_tile) : rows * g.per_row;
  g.by_per_row = FastDivmod(g.per_row);
  g.by_row_vectors = FastDivmod(a.seqlen / kPer16<T>);
  g.by_dim = FastDivmod(a.dim);
  return g;
}

// As many blocks as the GPU holds at once (a persistent grid), at most `max_blocks` when that is
// set (the tests give a block many tiles).
template <class T>
void launch_cf_bwd_staged(const BwdArgs<T>& a, int width, cudaStream_t s = 0,
                          KernelFacts* facts = nullptr, int64_t max_blocks = 0) {
  if (!bwd_staged_takes(a))
    throw std::invalid_argument(
        "conv_bwd_cf_staged: needs L a multiple of " + std::to_string(kPer16<T>) +
        " elements (rows on 16-byte boundaries) and x, dout and dx 16-byte aligned (cf_fused "
        "takes any L)");
  const BwdStagedTiles g = bwd_staged_tiles(a);
  dispatch_width(width, [&](auto w) {
    constexpr int W = decltype(w)::value;
    auto kernel =
        g.rows_per_tile > 1 ? conv_bwd_cf_staged<T, W, true> : conv_bwd_cf_staged<T, W, false>;
    int64_t blocks =
        resident_blocks(reinterpret_cast<const void*>(kernel), kStagedThreads, kBwdStagedSmemBytes);
    if (max_blocks > 0) blocks = std::min(blocks, max_blocks);
    blocks = std::max<int64_t>(1, std::min(blocks, g.tiles));
    launch_smem_or_describe("conv_bwd_cf_staged", kernel, blocks, kStagedThreads,
                            kBwdStagedSmemBytes, s, facts, a, g, blocks);
  });
}

}  // namespace conv1d::ch09
