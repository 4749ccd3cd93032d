// Chapter 08, step 4 (`staged`, channel-first): the vectors reach the threads through shared
// memory, fetched several tiles ahead. The chunked kernel's threads hold their bytes in flight in
// registers: the loads a thread issues before it computes are all the memory it asks for, and
// while it computes it asks for nothing. Here a block is persistent. It takes tiles of the tensor
// (8 KB each: a piece of a row, or several whole short rows), one after another, and while it
// computes one, the copies of the next kStagedStages - 1 are already on their way into shared
// memory (cp.async, common/async_copy.cuh: a copy lands in shared memory without a register to hold
// it). So the bytes in flight no longer depend on a thread's registers or on how long its
// arithmetic takes: they are the stages, 24 KB a block. A vector's halo is the end of the vector
// before it in the tile (for the tile's first vector, a vector copied in front of the tile): no
// shuffles. Tiles follow rows, so a row must start on a 16-byte boundary: L a multiple of the
// vector (8 elements in 16 bits, 4 in fp32); the chunked kernel takes any L.
#pragma once

#include <algorithm>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "chapters/08_direct_forward/direct_common.cuh"
#include "common/async_copy.cuh"
#include "common/fast_divmod.h"
#include "common/launch.cuh"

namespace conv1d::ch08 {

constexpr int kStagedThreads = 128;  // a block
constexpr int kStagedStages = 4;     // tiles a block has in shared memory or on their way
constexpr int kStagedVectors = 512;  // 16-byte vectors a tile at most: 8 KB
constexpr int kStagedMine = kStagedVectors / kStagedThreads;  // a thread's vectors of a tile
// A stage: the vector before the tile (its first vector's halo), then the tile. (A Hopper
// multiprocessor's 228 KB of shared memory hold six such blocks, an A100's 164 KB four.)
constexpr int kStagedStageVectors = 1 + kStagedVectors;
constexpr size_t kStagedSmemBytes = size_t(kStagedStages) * kStagedStageVectors * 16;

// How the tensor is cut into tiles (staged_tiles): a row of L elements into `per_row` tiles of at
// most kStagedVectors vectors, or, rows shorter than half a tile, `rows_per_tile` whole rows a
// tile.
struct StagedTiles {
  int64_t tiles = 0, per_row = 1, rows_per_tile = 1;
  FastDivmod by_per_row, by_row_vectors, by_dim;
};

// [docs:ch08_cf_staged]
template <class T, int W>
__global__ void __launch_bounds__(kStagedThreads)
    conv_fwd_cf_staged(DirectArgs<T> a, StagedTiles g, int64_t blocks) {
  constexpr int kPer = kPer16<T>;
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

  // [docs:ch08_cf_staged_pipeline]
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
    // Before the tile lands: each vector's row and place in it, and the tile's filter.
    const Tile tl = tile_of(i);
    int64_t row[kStagedMine], t0[kStagedMine];
    // A tile of whole short rows finds each vector's row by division; a piece of one row has it
    // from the tile.
    auto places = [&](auto whole_rows) {
#pragma unroll
      for (int j = 0; j < kStagedMine; ++j) {
        const int v = threadIdx.x + j * kStagedThreads;
        const int64_t r = whole_rows ? g.by_row_vectors.div(v) : 0;
        row[j] = tl.row + r;
        t0[j] = tl.p0 + (v - r * row_vectors) * kPer;
      }
    };
    if (g.rows_per_tile > 1)
      places(std::true_type{});
    else
      places(std::false_type{});
    const Filter<W> tile_filter = load_filter<W>(a, tl.row - g.by_dim.div(tl.row) * a.dim);

    // The tile has landed when this thread's copies of it have, and every other thread's too;
    // the stage the block finished with last is free, and takes the tile kStagedStages-1 ahead.
    async_wait<kStagedStages - 2>();
    __syncthreads();
    fetch(i + kStagedStages - 1);
    // [/docs:ch08_cf_staged_pipeline]

    // [docs:ch09_base_cf_vectors]
    const Bytes16* stage = stage_of(i);
#pragma unroll
    for (int j = 0; j < kStagedMine; ++j) {
      const int v = threadIdx.x + j * kStagedThreads;
      if (v >= tl.vectors) continue;
      const Filter<W> f =
          row[j] == tl.row ? tile_filter : load_filter<W>(a, row[j] - g.by_dim.div(row[j]) * a.dim);
      // The W-1 inputs before the vector: the vector before it, zeros before a row (they count
      // for nothing, so every output takes the unmasked form).
      Vec<T, kPer> prev = zero_vec<T, kPer>();
      if (t0[j] > 0) prev = bit_cast<Vec<T, kPer>>(stage[v]);
      const CfWindow<T, W> win = cf_window<T, W>(prev, bit_cast<Vec<T, kPer>>(stage[1 + v]));
      float y[kPer];
#pragma unroll
      for (int o = 0; o < kPer; ++o) y[o] = conv_output<W, false>(f, &win.v[o], 0, a.silu);
      store16_unordered(a.out + row[j] * a.seqlen + t0[j], from_floats<T, kPer>(y));
    }
    // [/docs:ch09_base_cf_vectors]
  }
  async_wait_all();  // (the groups past the last tile are empty)
}
// [/docs:ch08_cf_staged]

// Can the staged kernel take this problem? Its copies need rows on 16-byte boundaries: x and out
// 16-byte aligned and L a multiple of the vector. (The chunked kernel takes the rest.)
template <class T>
bool staged_takes(const DirectArgs<T>& a) {
  return a.seqlen % kPer16<T> == 0 && aligned_to(a.x, 16) && aligned_to(a.out, 16);
}

// The tiles: pieces of rows, or whole rows by the tile when a row is at most half a tile.
template <class T>
StagedTiles staged_tiles(const DirectArgs<T>& a) {
  const int64_t row_vectors = a.seqlen / kPer16<T>, rows = a.batch * a.dim;
  StagedTiles g;
  g.per_row = ceil_div(row_vectors, int64_t(kStagedVectors));
  g.rows_per_tile = row_vectors * 2 <= kStagedVectors ? kStagedVectors / row_vectors : 1;
  g.tiles = g.per_row > 1 ? rows * g.per_row : ceil_div(rows, g.rows_per_tile);
  g.by_per_row = FastDivmod(g.per_row);
  g.by_row_vectors = FastDivmod(row_vectors);
  g.by_dim = FastDivmod(a.dim);
  return g;
}

// At most `max_blocks` blocks when that is set (the tests give a block many tiles), else as many
// as the GPU holds at once (a persistent grid: more would only wait for a place).
template <class T>
void launch_cf_staged(const DirectArgs<T>& a, int width, cudaStream_t s = 0,
                      KernelFacts* facts = nullptr, int64_t max_blocks = 0) {
  if (!staged_takes(a))
    throw std::invalid_argument(
        "conv_fwd_cf_staged: needs L a multiple of " + std::to_string(kPer16<T>) +
        " elements (rows on 16-byte boundaries) and x and out 16-byte aligned (cf_chunked takes "
        "any L)");
  const StagedTiles g = staged_tiles(a);
  dispatch_width(width, [&](auto w) {
    auto kernel = conv_fwd_cf_staged<T, decltype(w)::value>;
    int64_t blocks =
        resident_blocks(reinterpret_cast<const void*>(kernel), kStagedThreads, kStagedSmemBytes);
    if (max_blocks > 0) blocks = std::min(blocks, max_blocks);
    blocks = std::max<int64_t>(1, std::min(blocks, g.tiles));
    launch_smem_or_describe("conv_fwd_cf_staged", kernel, blocks, kStagedThreads, kStagedSmemBytes,
                            s, facts, a, g, blocks);
  });
}

}  // namespace conv1d::ch08
