// Chapter 05: the GEMM of the img2col formulation on tensor cores, through the WMMA API.
//
//   C[M, N] = A[M, K] x Bw[K, N], then bias + SiLU (chapter 04's epilogue), stored as fp16.
//   M = B*L (the batch is folded into the rows), K = W*D, N = D; all row-major, fp16 in, fp32 accumulate.
//
// Three kernels, one idea each:
//   wmma_gemm_warp    one warp per 16x16 tile of C; fragments loaded straight from global memory
//   wmma_gemm_block   a block tile staged through shared memory in a multi-stage asynchronous-copy
//                     pipeline; each warp owns several accumulator fragments and reuses every
//                     fragment it loads across them
//   wmma_gemm_sparse  Bw is block diagonal: for 16 output channels only W of the K/16 tiles of Bw are
//                     not zero, so each output tile needs W tensor-core steps instead of K/16
//
// Any shape works. Fragments are loaded from memory directly only where the hardware's rules hold
// (row strides a multiple of 8 halves, 32-byte aligned tiles, tile fully inside the matrix);
// everything else goes through a zero-filled staging tile in shared memory.
#pragma once

#include <cstdint>
#include <stdexcept>

#include "chapters/04_bias_epilogue/epilogue.cuh"
#include "common/check.h"
#include "common/device_types.cuh"

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

// Threads that hold one fragment together: a warp of 32 on NVIDIA, a wavefront of 64 on AMD Instinct
// (CDNA). All warp arithmetic below goes through this constant.
#if defined(CONV1D_BACKEND_HIP)
constexpr int kWarpLanes = 64;
#else
constexpr int kWarpLanes = 32;
#endif

using FragA = wmma::fragment<wmma::matrix_a, kTile, kTile, kTile, wmma_half, wmma::row_major>;
using FragB = wmma::fragment<wmma::matrix_b, kTile, kTile, kTile, wmma_half, wmma::row_major>;
using FragC = wmma::fragment<wmma::accumulator, kTile, kTile, kTile, float>;

struct GemmArgs {
  const __half* a;   // [M, K]
  const __half* bw;  // [K, N]
  __half* c;         // [M, N]
  const __half* bias;  // [N] or nullptr
  bool silu;
  int64_t m, n, k;
};

// ---------------------------------------------------------------------------------------------
// Small pieces shared by the kernels.

// Loads the 16 x 16 tile at (row0, col0) of a row-major matrix into a fragment. Straight from
// global memory when the tile lies fully inside and the WMMA alignment rules hold, otherwise
// through `stage` (16 x 16 halves of shared memory owned by this warp), zero-filled outside.
template <class Frag>
__device__ inline void load_tile(Frag& frag, const __half* mat, int64_t rows, int64_t cols, int64_t ld, int64_t row0,
                                 int64_t col0, __half* stage) {
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
__device__ inline void store_tile(const FragC& acc, const GemmArgs& g, int64_t row0, int64_t col0, float* scratch) {
  wmma::store_matrix_sync(scratch, acc, kTile, CONV1D_WMMA_ROW_MAJOR_STORE);
  __syncwarp();
  const int lane = threadIdx.x % kWarpLanes;
  for (int i = lane; i < kTile * kTile; i += kWarpLanes) {
    const int64_t r = row0 + i / kTile, c = col0 + i % kTile;
    if (r < g.m && c < g.n) g.c[r * g.n + c] = __float2half_rn(apply_bias_silu(scratch[i], g.bias, c, g.silu));
  }
  __syncwarp();
}

// ---------------------------------------------------------------------------------------------
// Variant `warp`: one warp per 16 x 16 tile of C, every fragment read from global memory.

constexpr int kWarpKernelWarps = 4;  // warps per block; each owns one output tile

// [docs:wmma_warp]
__global__ void wmma_gemm_warp(GemmArgs g) {
  __shared__ __align__(32) __half stage[kWarpKernelWarps][kTile * kTile];
  __shared__ __align__(32) float scratch[kWarpKernelWarps][kTile * kTile];
  const int warp = threadIdx.x / kWarpLanes;
  const int64_t tiles_n = (g.n + kTile - 1) / kTile;
  const int64_t tile = int64_t(blockIdx.x) * kWarpKernelWarps + warp;
  if (tile >= tiles_n * ((g.m + kTile - 1) / kTile)) return;  // whole warp leaves together
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

// ---------------------------------------------------------------------------------------------
// Variant `block`: block tiling through shared memory.

// 16-byte global -> shared copy, asynchronous where the hardware has it (sm_80+: cp.async, which
// bypasses registers and lets the next tiles load while this one is multiplied); bytes past
// `src_bytes` are zero-filled.
__device__ inline void copy16_async(void* smem, const void* gmem, int src_bytes) {
#if !defined(CONV1D_BACKEND_HIP) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(src_bytes));
#else
  uint4 v = make_uint4(0, 0, 0, 0);
  if (src_bytes == 16) v = *reinterpret_cast<const uint4*>(gmem);
  *reinterpret_cast<uint4*>(smem) = v;
#endif
}
__device__ inline void async_commit() {
#if !defined(CONV1D_BACKEND_HIP) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}
template <int kPending>
__device__ inline void async_wait() {  // until at most kPending groups are still in flight
#if !defined(CONV1D_BACKEND_HIP) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
#endif
}

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
  static_assert(BM % WM == 0 && BN % WN == 0 && WM % 16 == 0 && WN % 16 == 0 && BK % 16 == 0, "tile shapes");
  static_assert(size_t(kWarps) * 256 * sizeof(float) <= kSmemBytes, "epilogue scratch must fit");
};

// Fills stage buffers with the A tile (BM x BK) and the Bw tile (BK x BN) starting at k0. With
// kVec (K and N multiples of 8) in 16-byte chunks, asynchronously; otherwise element by element.
template <class Cfg, int BM, int BN, int BK, bool kVec>
__device__ inline void load_stage(__half* sa, __half* sb, const GemmArgs& g, int64_t row0, int64_t col0, int64_t k0) {
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
  const int64_t k_tiles = (g.k + BK - 1) / BK, row_tiles = (g.m + BM - 1) / BM;
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
    if (s < k_tiles) load_stage<Cfg, BM, BN, BK, kVec>(stage_a(s), stage_b(s), g, row0, col0, int64_t(s) * BK);
    async_commit();
  }
  for (int64_t kt = 0; kt < k_tiles; ++kt) {
    async_wait<kStages - 2>();  // tile kt has landed (for this thread) ...
    __syncthreads();            // ... and for every thread; the buffer refilled below is free again
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
        wmma::load_matrix_sync(fa[i], reinterpret_cast<const wmma_half*>(sa + (wm * WM + i * 16) * Cfg::kLdA + kk),
                               Cfg::kLdA);
#pragma unroll
      for (int j = 0; j < FN; ++j)
        wmma::load_matrix_sync(fb[j], reinterpret_cast<const wmma_half*>(sb + kk * Cfg::kLdB + wn * WN + j * 16),
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
    for (int j = 0; j < FN; ++j) store_tile(acc[i][j], g, row0 + wm * WM + i * 16, col0 + wn * WN + j * 16, scratch);
  __syncthreads();  // the next row tile's prologue overwrites the scratch
  }
}
// [/docs:wmma_block]

// The configuration chapter 05 uses (chosen by measuring a few on an H200; see docs/05_wmma_gemm.md).
using DefaultBlock = BlockConfig<128, 128, 32, 64, 32, 3>;

template <int BM, int BN, int BK, int WM, int WN, int kStages>
void launch_wmma_block(const GemmArgs& g, cudaStream_t s = 0) {
  using Cfg = BlockConfig<BM, BN, BK, WM, WN, kStages>;
  const int64_t row_tiles = (g.m + BM - 1) / BM;
  const dim3 grid(static_cast<unsigned>((g.n + BN - 1) / BN), static_cast<unsigned>(row_tiles < 65535 ? row_tiles : 65535));
  const bool vec = g.k % 8 == 0 && g.n % 8 == 0;
  auto kernel = vec ? wmma_gemm_block<BM, BN, BK, WM, WN, kStages, true> : wmma_gemm_block<BM, BN, BK, WM, WN, kStages, false>;
  if (Cfg::kSmemBytes > 48 * 1024)  // beyond 48 KB a kernel must opt in to more shared memory
    GPU_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(Cfg::kSmemBytes)));
  kernel<<<grid, Cfg::kThreads, Cfg::kSmemBytes, s>>>(g);
  GPU_CHECK_LAUNCH("wmma_gemm_block");
}

// ---------------------------------------------------------------------------------------------
// Variant `sparse`: only the W non-zero K-tiles of the block-diagonal Bw.
//
// For output channels [c0, c0+16) the non-zero rows of Bw are k*D + c0 .. k*D + c0 + 15: one 16 x 16
// diagonal block per tap k, W tensor-core steps instead of W*D/16. With the arithmetic gone, the
// kernel is a copy: A is read once and C written once, so it is built like one. A block takes 64
// rows x 64 channels; it stages the W slices of A those need (W x 128-byte pieces of each row) in
// shared memory with 16-byte asynchronous copies, each of its 4 warps multiplies 16 rows by the four
// 16-channel diagonal blocks of each tap, and the results leave through shared memory again, as
// 16-byte stores of whole rows.
constexpr int kSparseCols = 64;  // channels per block; each warp takes 16 rows

template <int W, int kWarps_>
struct SparseConfig {
  static constexpr int kWarps = kWarps_, kRows = 16 * kWarps;
  static constexpr int kLdA = W * kSparseCols + 8;  // halves per staged row of A, padded
  static constexpr int kLdC = kSparseCols + 4;      // floats per staged row of C, padded
  static constexpr int kDiagTiles = W * (kSparseCols / kTile);  // non-zero 16 x 16 blocks of Bw
  static constexpr size_t kSmemA = size_t(kRows) * kLdA * sizeof(__half);
  static constexpr size_t kSmemC = size_t(kRows) * kLdC * sizeof(float);
  static constexpr size_t kSmemB = size_t(kDiagTiles) * kTile * kTile * sizeof(__half);
  static constexpr size_t kSmemBytes = (kSmemA > kSmemC ? kSmemA : kSmemC) + kSmemB;
};

// [docs:wmma_sparse]
template <int W, int kWarps, bool kVec>
__global__ void __launch_bounds__(kWarps * kWarpLanes) wmma_gemm_sparse(GemmArgs g) {
  using Cfg = SparseConfig<W, kWarps>;
  constexpr int kThreads = kWarps * kWarpLanes;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  __half* sa = reinterpret_cast<__half*>(smem_raw);  // [64 rows][W taps x 64 channels]
  float* sc = reinterpret_cast<float*>(smem_raw);    // [64 rows][64 channels], after the products
  __half* sb = reinterpret_cast<__half*>(smem_raw + Cfg::kSmemBytes - Cfg::kSmemB);  // [tap][tile][16 x 16]
  const int64_t dim = g.n;
  // Rows along x (no 65535 limit there); every block reads its own bytes of A, so the order of the
  // blocks does not matter for memory traffic.
  const int64_t row0 = int64_t(blockIdx.x) * Cfg::kRows, c0 = int64_t(blockIdx.y) * kSparseCols;
  const int warp = threadIdx.x / kWarpLanes;

  // 1. Stage the W x 4 diagonal blocks of Bw this block needs (shared by its warps), and
  //    A[row0 .. +64, k*D + c0 .. +64] for every tap k; channels past D and rows past M are 0. A
  //    channel past D would belong to the next tap, which has a step of its own.
  if constexpr (kVec) {  // D % 8 == 0: 16-byte pieces are wholly inside or outside
    for (int i = threadIdx.x; i < Cfg::kDiagTiles * kTile * 2; i += kThreads) {
      const int t = i / (kTile * 2), r = (i / 2) % kTile, c = (i % 2) * 8;  // two pieces per tile row
      const int k = t / (kSparseCols / kTile), j = t % (kSparseCols / kTile);
      const int64_t ch = c0 + j * kTile;
      const bool ok = ch + r < dim && ch + c < dim;
      copy16_async(sb + (t * kTile + r) * kTile + c, ok ? g.bw + (k * dim + ch + r) * dim + ch + c : g.bw, ok ? 16 : 0);
    }
  } else {
    for (int i = threadIdx.x; i < Cfg::kDiagTiles * kTile * kTile; i += kThreads) {
      const int t = i / (kTile * kTile), r = (i / kTile) % kTile, c = i % kTile;
      const int k = t / (kSparseCols / kTile), j = t % (kSparseCols / kTile);
      const int64_t ch = c0 + j * kTile;
      const bool ok = ch + r < dim && ch + c < dim;
      sb[i] = ok ? g.bw[(k * dim + ch + r) * dim + ch + c] : __float2half(0.0f);
    }
  }
  if constexpr (kVec) {  // D % 8 == 0: 16-byte pieces are wholly inside or outside
    for (int i = threadIdx.x; i < Cfg::kRows * W * (kSparseCols / 8); i += kThreads) {
      const int r = i / (W * kSparseCols / 8), rest = i % (W * kSparseCols / 8);
      const int k = rest / (kSparseCols / 8), c = (rest % (kSparseCols / 8)) * 8;
      const bool ok = row0 + r < g.m && c0 + c < dim;
      const __half* src = ok ? g.a + (row0 + r) * g.k + k * dim + c0 + c : g.a;
      copy16_async(sa + r * Cfg::kLdA + k * kSparseCols + c, src, ok ? 16 : 0);
    }
    async_commit();
    async_wait<0>();
  } else {
    for (int i = threadIdx.x; i < Cfg::kRows * W * kSparseCols; i += kThreads) {
      const int r = i / (W * kSparseCols), rest = i % (W * kSparseCols);
      const int k = rest / kSparseCols, c = rest % kSparseCols;
      const bool ok = row0 + r < g.m && c0 + c < dim;
      sa[r * Cfg::kLdA + k * kSparseCols + c] = ok ? g.a[(row0 + r) * g.k + k * dim + c0 + c] : __float2half(0.0f);
    }
  }
  __syncthreads();

  // 2. Warp w: rows 16w .. 16w+15, all four 16-channel tiles, W steps each.
  FragC acc[kSparseCols / kTile];
  FragA fa;
  FragB fb;
#pragma unroll
  for (int j = 0; j < kSparseCols / kTile; ++j) {
    wmma::fill_fragment(acc[j], 0.0f);
    if (c0 + j * kTile >= dim) continue;
#pragma unroll
    for (int k = 0; k < W; ++k) {
      wmma::load_matrix_sync(fa, reinterpret_cast<const wmma_half*>(sa + warp * kTile * Cfg::kLdA + k * kSparseCols + j * kTile),
                             Cfg::kLdA);
      wmma::load_matrix_sync(fb, reinterpret_cast<const wmma_half*>(sb + (k * (kSparseCols / kTile) + j) * kTile * kTile),
                             kTile);  // diag(weight[c0 + 16j .., k])
      wmma::mma_sync(acc[j], fa, fb, acc[j]);
    }
  }
  __syncthreads();  // every warp is done with the staged A: its space now holds C

  // 3. C through shared memory: epilogue in fp32, then whole rows out.
#pragma unroll
  for (int j = 0; j < kSparseCols / kTile; ++j)
    wmma::store_matrix_sync(sc + warp * kTile * Cfg::kLdC + j * kTile, acc[j], Cfg::kLdC, CONV1D_WMMA_ROW_MAJOR_STORE);
  __syncthreads();
  // A thread always lands on the same 8 channels (kThreads is a multiple of 8): their bias is
  // read once, not once per row.
  static_assert(kThreads % (kSparseCols / 8) == 0, "fixed channels per thread");
  const int c = (threadIdx.x % (kSparseCols / 8)) * 8;
  float bias[8];
#pragma unroll
  for (int e = 0; e < 8; ++e) bias[e] = apply_bias_silu(0.0f, g.bias, c0 + c + e < dim ? c0 + c + e : 0, false);
  for (int i = threadIdx.x; i < Cfg::kRows * (kSparseCols / 8); i += kThreads) {
    const int r = i / (kSparseCols / 8);
    const int64_t row = row0 + r, col = c0 + c;
    if (row >= g.m || col >= dim) continue;
    __align__(16) __half v[8];
#pragma unroll
    for (int e = 0; e < 8; ++e)
      v[e] = __float2half_rn(apply_bias_silu(sc[r * Cfg::kLdC + c + e] + bias[e], static_cast<const __half*>(nullptr), 0, g.silu));
    if (kVec) {
      *reinterpret_cast<uint4*>(g.c + row * dim + col) = *reinterpret_cast<const uint4*>(v);
    } else {
      for (int e = 0; e < 8 && col + e < dim; ++e) g.c[row * dim + col + e] = v[e];
    }
  }
}
// [/docs:wmma_sparse]

template <int W, int kWarps = 4>
void launch_wmma_sparse_w(const GemmArgs& g, cudaStream_t s = 0) {
  const bool vec = g.n % 8 == 0;
  auto kernel = vec ? wmma_gemm_sparse<W, kWarps, true> : wmma_gemm_sparse<W, kWarps, false>;
  constexpr size_t smem = SparseConfig<W, kWarps>::kSmemBytes;
  constexpr int kRows = SparseConfig<W, kWarps>::kRows;
  if (smem > 48 * 1024) GPU_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
  const dim3 grid(static_cast<unsigned>((g.m + kRows - 1) / kRows),
                  static_cast<unsigned>((g.n + kSparseCols - 1) / kSparseCols));
  kernel<<<grid, kWarps * kWarpLanes, smem, s>>>(g);
}

inline int64_t tile_blocks(const GemmArgs& g) {
  const int64_t tiles = ((g.m + kTile - 1) / kTile) * ((g.n + kTile - 1) / kTile);
  return (tiles + kWarpKernelWarps - 1) / kWarpKernelWarps;
}

inline void launch_wmma_warp(const GemmArgs& g, cudaStream_t s = 0) {
  wmma_gemm_warp<<<static_cast<unsigned>(tile_blocks(g)), kWarpKernelWarps * kWarpLanes, 0, s>>>(g);
  GPU_CHECK_LAUNCH("wmma_gemm_warp");
}

inline void launch_wmma_sparse(const GemmArgs& g, int width, cudaStream_t s = 0) {
  switch (width) {
    case 2: launch_wmma_sparse_w<2>(g, s); break;
    case 3: launch_wmma_sparse_w<3>(g, s); break;
    case 4: launch_wmma_sparse_w<4>(g, s); break;
    default: throw std::invalid_argument("wmma_gemm_sparse: width must be 2, 3 or 4");
  }
  GPU_CHECK_LAUNCH("wmma_gemm_sparse");
}

}  // namespace conv1d::ch05
