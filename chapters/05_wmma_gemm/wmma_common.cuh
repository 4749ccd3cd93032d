// Chapter 05: what its three tensor-core GEMMs share. The GEMM of the img2col formulation,
//
//   C[M, N] = A[M, K] x Bw[K, N], then bias + SiLU (chapter 04's epilogue), stored as fp16,
//   M = B*L (the batch is folded into the rows), K = W*D, N = D; all row-major, fp16 in, fp32 accumulate,
//
// runs through the WMMA API in three kernels, one idea each, one file each:
//   wmma_warp.cuh    one warp per 16x16 tile of C; fragments loaded straight from global memory
//   wmma_block.cuh   a block tile staged through shared memory in a multi-stage asynchronous-copy
//                    pipeline; each warp owns several accumulator fragments and reuses every
//                    fragment it loads across them
//   wmma_sparse.cuh  Bw is block diagonal: for 16 output channels only W of the K/16 tiles of Bw are
//                    not zero, so each output tile needs W tensor-core steps instead of K/16
//
// Here: the WMMA API on either vendor, the fragment types, the arguments, and the tile loads and
// stores the warp kernel uses. Any shape works: fragments are loaded from memory directly only where
// the hardware's rules hold (row strides a multiple of 8 halves, 32-byte aligned tiles, tile fully
// inside the matrix); everything else goes through a zero-filled staging tile in shared memory.
#pragma once

#include <cstdint>

#include "chapters/04_bias_epilogue/epilogue.cuh"
#include "common/check.h"
#include "common/device_types.cuh"
#include "common/warp.cuh"

#if defined(CONV1D_BACKEND_HIP)
#include <rocwmma/rocwmma.hpp>
namespace wmma = rocwmma;
using wmma_half = rocwmma::float16_t;
#define CONV1D_WMMA_ROW_MAJOR_STORE rocwmma::mem_row_major
#else
#include <mma.h>
namespace wmma = nvcuda::wmma;
using wmma_half = __half;
#define CONV1D_WMMA_ROW_MAJOR_STORE wmma::mem_row_major
#endif

namespace conv1d::ch05 {

constexpr int kTile = 16;  // the WMMA shape: 16 x 16 x 16

// Threads that hold one fragment together are a warp (kWarpLanes, common/warp.cuh: 32 on NVIDIA, 64
// on AMD Instinct); all warp arithmetic below goes through that constant.

using FragA = wmma::fragment<wmma::matrix_a, kTile, kTile, kTile, wmma_half, wmma::row_major>;
using FragB = wmma::fragment<wmma::matrix_b, kTile, kTile, kTile, wmma_half, wmma::row_major>;
using FragC = wmma::fragment<wmma::accumulator, kTile, kTile, kTile, float>;

struct GemmArgs {
  const __half* a;     // [M, K]
  const __half* bw;    // [K, N]
  __half* c;           // [M, N]
  const __half* bias;  // [N] or nullptr
  bool silu;
  int64_t m, n, k;
};

// Loads the 16 x 16 tile at (row0, col0) of a row-major matrix into a fragment. Straight from
// global memory when the tile lies fully inside and the WMMA alignment rules hold, otherwise
// through `stage` (16 x 16 halves of shared memory owned by this warp), zero-filled outside.
template <class Frag>
__device__ inline void load_tile(Frag& frag, const __half* mat, int64_t rows, int64_t cols,
                                 int64_t ld, int64_t row0, int64_t col0, __half* stage) {
  const bool inside = row0 + kTile <= rows && col0 + kTile <= cols;
  const __half* p = mat + row0 * ld + col0;
  const bool aligned = ld % 8 == 0 && (reinterpret_cast<uintptr_t>(p) % 32) == 0;
  if (inside && aligned) {
    wmma::load_matrix_sync(frag, reinterpret_cast<const wmma_half*>(p), static_cast<unsigned>(ld));
    return;
  }
  const int lane = threadIdx.x % kWarpLanes;
  for (int i = lane; i < kTile * kTile; i += kWarpLanes) {
    const int r = i / kTile, c = i % kTile;
    const bool ok = row0 + r < rows && col0 + c < cols;
    stage[i] = ok ? mat[(row0 + r) * ld + col0 + c] : __float2half(0.0f);
  }
  __syncwarp();
  wmma::load_matrix_sync(frag, reinterpret_cast<const wmma_half*>(stage), kTile);
  __syncwarp();
}

// Writes one accumulator tile through `scratch` (16 x 16 floats of this warp's shared memory):
// bias + SiLU on the fp32 value, rounding to fp16, rows and columns outside C skipped.
__device__ inline void store_tile(const FragC& acc, const GemmArgs& g, int64_t row0, int64_t col0,
                                  float* scratch) {
  wmma::store_matrix_sync(scratch, acc, kTile, CONV1D_WMMA_ROW_MAJOR_STORE);
  __syncwarp();
  const int lane = threadIdx.x % kWarpLanes;
  for (int i = lane; i < kTile * kTile; i += kWarpLanes) {
    const int64_t r = row0 + i / kTile, c = col0 + i % kTile;
    if (r < g.m && c < g.n)
      g.c[r * g.n + c] = __float2half_rn(apply_bias_silu(scratch[i], g.bias, c, g.silu));
  }
  __syncwarp();
}

}  // namespace conv1d::ch05
