// The naive GEMM of chapters 01-04: C[M, N] = A[M, K] x B[K, N], all row-major, one thread per
// element of C, fp32 accumulation whatever the storage type.
#pragma once

#include <algorithm>
#include <cstdint>

#include "common/check.h"
#include "common/device_types.cuh"
#include "common/util.h"

namespace conv1d {

// [docs:naive_gemm]
// Row `row` of A times column `col` of B (its own function because chapter 04's fused GEMM reuses it).
template <class T>
__device__ __forceinline__ float naive_dot(const T* __restrict__ a, const T* __restrict__ b,
                                           int64_t row, int64_t col, int64_t n, int64_t k) {
  float acc = 0.0f;
  for (int64_t i = 0; i < k; ++i) acc += to_float(a[row * k + i]) * to_float(b[i * n + col]);
  return acc;
}

template <class T>
__global__ void naive_gemm(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c,
                           int64_t m, int64_t n, int64_t k) {
  const int64_t col =
      blockIdx.x * int64_t(blockDim.x) + threadIdx.x;  // neighbours read neighbouring B
  if (col >= n) return;
  // Rows in a grid-stride loop: the grid's y dimension stops at 65535 blocks, L does not.
  for (int64_t row = blockIdx.y * int64_t(blockDim.y) + threadIdx.y; row < m;
       row += int64_t(gridDim.y) * blockDim.y)
    c[row * n + col] = from_float<T>(naive_dot(a, b, row, col, n, k));
}
// [/docs:naive_gemm]

constexpr int kNaiveTile = 16;  // 16 x 16 = 256 threads per block

inline dim3 naive_gemm_grid(int64_t m, int64_t n) {
  return dim3(static_cast<unsigned>(ceil_div(n, kNaiveTile)),
              static_cast<unsigned>(std::min(ceil_div(m, kNaiveTile), kMaxGridY)));
}

template <class T>
void launch_naive_gemm(const T* a, const T* b, T* c, int64_t m, int64_t n, int64_t k,
                       cudaStream_t s = 0) {
  naive_gemm<T><<<naive_gemm_grid(m, n), dim3(kNaiveTile, kNaiveTile), 0, s>>>(a, b, c, m, n, k);
  GPU_CHECK_LAUNCH("naive_gemm");
}

}  // namespace conv1d
