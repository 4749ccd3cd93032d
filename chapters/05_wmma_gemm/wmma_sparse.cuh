// Chapter 05, variant `sparse`: only the W non-zero K-tiles of the block-diagonal Bw.
//
// For output channels [c0, c0+16) the non-zero rows of Bw are k*D + c0 .. k*D + c0 + 15: one 16 x 16
// diagonal block per tap k, W tensor-core steps instead of W*D/16. With the arithmetic gone, the
// kernel is a copy: A is read once and C written once, so it is built like one. A block takes 64
// rows x 64 channels; it stages the W slices of A those need (W x 128-byte pieces of each row) in
// shared memory with 16-byte asynchronous copies, each of its 4 warps multiplies 16 rows by the four
// 16-channel diagonal blocks of each tap, and the results leave through shared memory again, as
// 16-byte stores of whole rows.
#pragma once

#include <cstdint>
#include <stdexcept>

#include "chapters/04_bias_epilogue/epilogue.cuh"
#include "chapters/05_wmma_gemm/wmma_common.cuh"
#include "common/async_copy.cuh"
#include "common/check.h"
#include "common/runner.h"
#include "common/util.h"
#include "common/vec.cuh"

namespace conv1d::ch05 {

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
__global__ void __launch_bounds__(kWarps* kWarpLanes) wmma_gemm_sparse(GemmArgs g) {
  using Cfg = SparseConfig<W, kWarps>;
  constexpr int kThreads = kWarps * kWarpLanes;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  __half* sa = reinterpret_cast<__half*>(smem_raw);  // [64 rows][W taps x 64 channels]
  float* sc = reinterpret_cast<float*>(smem_raw);    // [64 rows][64 channels], after the products
  __half* sb =
      reinterpret_cast<__half*>(smem_raw + Cfg::kSmemBytes - Cfg::kSmemB);  // [tap][tile][16 x 16]
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
      const int t = i / (kTile * 2), r = (i / 2) % kTile,
                c = (i % 2) * 8;  // two pieces per tile row
      const int k = t / (kSparseCols / kTile), j = t % (kSparseCols / kTile);
      const int64_t ch = c0 + j * kTile;
      const bool ok = ch + r < dim && ch + c < dim;
      copy16_async(sb + (t * kTile + r) * kTile + c,
                   ok ? g.bw + (k * dim + ch + r) * dim + ch + c : g.bw, ok ? 16 : 0);
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
      sa[r * Cfg::kLdA + k * kSparseCols + c] =
          ok ? g.a[(row0 + r) * g.k + k * dim + c0 + c] : __float2half(0.0f);
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
      wmma::load_matrix_sync(fa,
                             reinterpret_cast<const wmma_half*>(sa + warp * kTile * Cfg::kLdA +
                                                                k * kSparseCols + j * kTile),
                             Cfg::kLdA);
      wmma::load_matrix_sync(
          fb,
          reinterpret_cast<const wmma_half*>(sb + (k * (kSparseCols / kTile) + j) * kTile * kTile),
          kTile);  // diag(weight[c0 + 16j .., k])
      wmma::mma_sync(acc[j], fa, fb, acc[j]);
    }
  }
  __syncthreads();  // every warp is done with the staged A: its space now holds C

  // 3. C through shared memory: epilogue in fp32, then whole rows out.
#pragma unroll
  for (int j = 0; j < kSparseCols / kTile; ++j)
    wmma::store_matrix_sync(sc + warp * kTile * Cfg::kLdC + j * kTile, acc[j], Cfg::kLdC,
                            CONV1D_WMMA_ROW_MAJOR_STORE);
  __syncthreads();
  // A thread always lands on the same 8 channels (kThreads is a multiple of 8): their bias is
  // read once, not once per row.
  static_assert(kThreads % (kSparseCols / 8) == 0, "fixed channels per thread");
  const int c = (threadIdx.x % (kSparseCols / 8)) * 8;
  float bias[8];
#pragma unroll
  for (int e = 0; e < 8; ++e)
    bias[e] = apply_bias_silu(0.0f, g.bias, c0 + c + e < dim ? c0 + c + e : 0, false);
  for (int i = threadIdx.x; i < Cfg::kRows * (kSparseCols / 8); i += kThreads) {
    const int r = i / (kSparseCols / 8);
    const int64_t row = row0 + r, col = c0 + c;
    if (row >= g.m || col >= dim) continue;
    __align__(16) __half v[8];
#pragma unroll
    for (int e = 0; e < 8; ++e)
      v[e] = __float2half_rn(apply_bias_silu(sc[r * Cfg::kLdC + c + e] + bias[e],
                                             static_cast<const __half*>(nullptr), 0, g.silu));
    if (kVec) {
      *reinterpret_cast<Bytes16*>(g.c + row * dim + col) = *reinterpret_cast<const Bytes16*>(v);
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
  if (smem > 48 * 1024)
    GPU_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   static_cast<int>(smem)));
  const dim3 grid(static_cast<unsigned>(ceil_div(g.m, kRows)),
                  static_cast<unsigned>(ceil_div(g.n, kSparseCols)));
  kernel<<<grid, kWarps * kWarpLanes, smem, s>>>(g);
}

// Napkin counts of one run: the tensor-core work the kernel does (W 16-wide steps per output, each
// a dense 16 x 16 diagonal block) and the bytes it must move: A read, the W*D*16 non-zero diagonal
// elements of Bw, C written.
inline KernelModel sparse_model(const Options& o) {
  const double rows = double(o.batch) * o.seqlen, e = dtype_bytes(o.dtype);
  const double a = rows * o.width * o.dim, c = rows * o.dim, diag = double(o.width) * o.dim * kTile;
  return {"wmma_gemm_sparse", 2.0 * c * o.width * kTile + epilogue_flops(o),
          (a + c + diag + (o.bias ? o.dim : 0)) * e};
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
