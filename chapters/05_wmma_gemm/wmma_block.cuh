// Chapter 05, variant `block`: block tiling through shared memory. A block computes a BM x BN tile
// of C; the tiles of A and Bw it needs stream through kStages shared-memory buffers filled with
// 16-byte asynchronous copies (common/async_copy.cuh) while the warps multiply the previous ones.
#pragma once

#include <algorithm>
#include <cstdint>

#include "chapters/05_wmma_gemm/wmma_common.cuh"
#include "common/async_copy.cuh"
#include "common/check.h"
#include "common/util.h"

namespace conv1d::ch05 {

// Block tile BM x BN, K in steps of BK, warps arranged (BM/WM) x (BN/WN), each warp WM x WN
// (WM/16 x WN/16 accumulator fragments), kStages shared-memory buffers in flight. Rows of the
// shared tiles are padded by 8 halves (16 bytes): without it the 16 rows a fragment load touches
// would start in the same bank.
template <int BM, int BN, int BK, int WM, int WN, int kStages>
struct BlockConfig {
  static constexpr int kWarps = (BM / WM) * (BN / WN);
  static constexpr int kThreads = kWarps * kWarpLanes;
  static constexpr int kLdA = BK + 8, kLdB = BN + 8;
  static constexpr int kStageHalves = BM * kLdA + BK * kLdB;
  static constexpr size_t kSmemBytes = size_t(kStages) * kStageHalves * sizeof(__half);
  static_assert(BM % WM == 0 && BN % WN == 0 && WM % 16 == 0 && WN % 16 == 0 && BK % 16 == 0,
                "tile shapes");
  static_assert(size_t(kWarps) * 256 * sizeof(float) <= kSmemBytes, "epilogue scratch must fit");
};

// Fills stage buffers with the A tile (BM x BK) and the Bw tile (BK x BN) starting at k0. With
// kVec (K and N multiples of 8) in 16-byte chunks, asynchronously; otherwise element by element.
template <class Cfg, int BM, int BN, int BK, bool kVec>
__device__ inline void load_stage(__half* sa, __half* sb, const GemmArgs& g, int64_t row0,
                                  int64_t col0, int64_t k0) {
  if constexpr (kVec) {
    constexpr int kChunksA = BM * BK / 8, kChunksB = BK * BN / 8;
    for (int i = threadIdx.x; i < kChunksA; i += Cfg::kThreads) {
      const int r = i / (BK / 8), c = (i % (BK / 8)) * 8;
      const int64_t gr = row0 + r, gc = k0 + c;
      const bool ok = gr < g.m && gc < g.k;  // K % 8 == 0: a chunk is wholly inside or outside
      copy16_async(sa + r * Cfg::kLdA + c, ok ? g.a + gr * g.k + gc : g.a, ok ? 16 : 0);
    }
    for (int i = threadIdx.x; i < kChunksB; i += Cfg::kThreads) {
      const int r = i / (BN / 8), c = (i % (BN / 8)) * 8;
      const int64_t gr = k0 + r, gc = col0 + c;
      const bool ok = gr < g.k && gc < g.n;
      copy16_async(sb + r * Cfg::kLdB + c, ok ? g.bw + gr * g.n + gc : g.bw, ok ? 16 : 0);
    }
  } else {
    for (int i = threadIdx.x; i < BM * BK; i += Cfg::kThreads) {
      const int r = i / BK, c = i % BK;
      const int64_t gr = row0 + r, gc = k0 + c;
      sa[r * Cfg::kLdA + c] = (gr < g.m && gc < g.k) ? g.a[gr * g.k + gc] : __float2half(0.0f);
    }
    for (int i = threadIdx.x; i < BK * BN; i += Cfg::kThreads) {
      const int r = i / BN, c = i % BN;
      const int64_t gr = k0 + r, gc = col0 + c;
      sb[r * Cfg::kLdB + c] = (gr < g.k && gc < g.n) ? g.bw[gr * g.n + gc] : __float2half(0.0f);
    }
  }
}

// [docs:wmma_block]
template <int BM, int BN, int BK, int WM, int WN, int kStages, bool kVec>
__global__ void __launch_bounds__(BlockConfig<BM, BN, BK, WM, WN, kStages>::kThreads)
    wmma_gemm_block(GemmArgs g) {
  using Cfg = BlockConfig<BM, BN, BK, WM, WN, kStages>;
  constexpr int FM = WM / 16, FN = WN / 16;  // fragments per warp along M and N
  extern __shared__ __align__(128) unsigned char smem_raw[];
  __half* smem = reinterpret_cast<__half*>(smem_raw);
  const int warp = threadIdx.x / kWarpLanes;
  const int wm = warp / (BN / WN), wn = warp % (BN / WN);
  // Column tiles along x: the blocks that run together share their rows of A, which is then read
  // from memory once, while Bw (W*D*D halves) stays in L2. Row tiles along y, in a grid-stride loop
  // because y stops at 65535.
  const int64_t col0 = int64_t(blockIdx.x) * BN;
  const int64_t k_tiles = ceil_div(g.k, BK), row_tiles = ceil_div(g.m, BM);
  auto stage_a = [&](int s) { return smem + s * Cfg::kStageHalves; };
  auto stage_b = [&](int s) { return smem + s * Cfg::kStageHalves + BM * Cfg::kLdA; };

  for (int64_t rt = blockIdx.y; rt < row_tiles; rt += gridDim.y) {
    const int64_t row0 = rt * BM;
    // Accumulators live in registers only if every index into them is a compile-time constant:
    // hence `#pragma unroll` on every loop over them (else they go to local memory, see the doc).
    FragC acc[FM][FN];
#pragma unroll
    for (int i = 0; i < FM; ++i)
#pragma unroll
      for (int j = 0; j < FN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

    // Prologue: the first kStages-1 tiles start loading before any arithmetic.
    for (int s = 0; s < kStages - 1; ++s) {
      if (s < k_tiles)
        load_stage<Cfg, BM, BN, BK, kVec>(stage_a(s), stage_b(s), g, row0, col0, int64_t(s) * BK);
      async_commit();
    }
    for (int64_t kt = 0; kt < k_tiles; ++kt) {
      async_wait<kStages - 2>();  // tile kt has landed (for this thread) ...
      __syncthreads();  // ... and for every thread; the buffer refilled below is free again
      const int64_t next = kt + kStages - 1;
      if (next < k_tiles) {
        const int s = static_cast<int>(next % kStages);
        load_stage<Cfg, BM, BN, BK, kVec>(stage_a(s), stage_b(s), g, row0, col0, next * BK);
      }
      async_commit();
      const __half* sa = stage_a(static_cast<int>(kt % kStages));
      const __half* sb = stage_b(static_cast<int>(kt % kStages));
#pragma unroll
      for (int kk = 0; kk < BK; kk += 16) {
        FragA fa[FM];
        FragB fb[FN];
#pragma unroll
        for (int i = 0; i < FM; ++i)
          wmma::load_matrix_sync(
              fa[i], reinterpret_cast<const wmma_half*>(sa + (wm * WM + i * 16) * Cfg::kLdA + kk),
              Cfg::kLdA);
#pragma unroll
        for (int j = 0; j < FN; ++j)
          wmma::load_matrix_sync(
              fb[j], reinterpret_cast<const wmma_half*>(sb + kk * Cfg::kLdB + wn * WN + j * 16),
              Cfg::kLdB);
#pragma unroll
        for (int i = 0; i < FM; ++i)
#pragma unroll
          for (int j = 0; j < FN; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
      }
    }
    async_wait<0>();
    __syncthreads();  // the pipeline buffers become the epilogue's scratch

    float* scratch = reinterpret_cast<float*>(smem_raw) + warp * 256;
#pragma unroll
    for (int i = 0; i < FM; ++i)
#pragma unroll
      for (int j = 0; j < FN; ++j)
        store_tile(acc[i][j], g, row0 + wm * WM + i * 16, col0 + wn * WN + j * 16, scratch);
    __syncthreads();  // the next row tile's prologue overwrites the scratch
  }
}
// [/docs:wmma_block]

template <int BM, int BN, int BK, int WM, int WN, int kStages>
void launch_wmma_block(const GemmArgs& g, cudaStream_t s = 0) {
  using Cfg = BlockConfig<BM, BN, BK, WM, WN, kStages>;
  const dim3 grid(static_cast<unsigned>(ceil_div(g.n, BN)),
                  static_cast<unsigned>(std::min(ceil_div(g.m, BM), kMaxGridY)));
  const bool vec = g.k % 8 == 0 && g.n % 8 == 0;
  auto kernel = vec ? wmma_gemm_block<BM, BN, BK, WM, WN, kStages, true>
                    : wmma_gemm_block<BM, BN, BK, WM, WN, kStages, false>;
  if (Cfg::kSmemBytes > 48 * 1024)  // beyond 48 KB a kernel must opt in to more shared memory
    GPU_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   static_cast<int>(Cfg::kSmemBytes)));
  kernel<<<grid, Cfg::kThreads, Cfg::kSmemBytes, s>>>(g);
  GPU_CHECK_LAUNCH("wmma_gemm_block");
}

}  // namespace conv1d::ch05
