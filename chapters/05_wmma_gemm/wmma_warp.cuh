// Chapter 05, variant `warp`: one warp per 16 x 16 tile of C, every fragment read from global
// memory (wmma_common.cuh has the fragment types and the tile loads).
#pragma once

#include <cstdint>

#include "chapters/05_wmma_gemm/wmma_common.cuh"
#include "common/check.h"
#include "common/util.h"

namespace conv1d::ch05 {

constexpr int kWarpKernelWarps = 4;  // warps per block; each owns one output tile

// [docs:wmma_warp]
__global__ void wmma_gemm_warp(GemmArgs g) {
  __shared__ __align__(32) __half stage[kWarpKernelWarps][kTile * kTile];
  __shared__ __align__(32) float scratch[kWarpKernelWarps][kTile * kTile];
  const int warp = threadIdx.x / kWarpLanes;
  const int64_t tiles_n = ceil_div(g.n, kTile);
  const int64_t tile = int64_t(blockIdx.x) * kWarpKernelWarps + warp;
  if (tile >= tiles_n * ceil_div(g.m, kTile)) return;  // whole warp leaves together
  const int64_t row0 = (tile / tiles_n) * kTile, col0 = (tile % tiles_n) * kTile;

  FragC acc;
  wmma::fill_fragment(acc, 0.0f);
  FragA fa;
  FragB fb;
  for (int64_t k0 = 0; k0 < g.k; k0 += kTile) {  // all K/16 steps, zero tiles of Bw included
    load_tile(fa, g.a, g.m, g.k, g.k, row0, k0, stage[warp]);
    load_tile(fb, g.bw, g.k, g.n, g.n, k0, col0, stage[warp]);
    wmma::mma_sync(acc, fa, fb, acc);
  }
  store_tile(acc, g, row0, col0, scratch[warp]);
}
// [/docs:wmma_warp]

// Blocks of kWarpKernelWarps warps, one output tile per warp.
inline int64_t tile_blocks(const GemmArgs& g) {
  return ceil_div(ceil_div(g.m, kTile) * ceil_div(g.n, kTile), kWarpKernelWarps);
}

inline void launch_wmma_warp(const GemmArgs& g, cudaStream_t s = 0) {
  wmma_gemm_warp<<<static_cast<unsigned>(tile_blocks(g)), kWarpKernelWarps * kWarpLanes, 0, s>>>(g);
  GPU_CHECK_LAUNCH("wmma_gemm_warp");
}

}  // namespace conv1d::ch05
