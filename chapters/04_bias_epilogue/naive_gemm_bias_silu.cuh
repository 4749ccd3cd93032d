// The fused epilogue: chapter 01's naive GEMM, with bias and SiLU applied to the fp32 accumulator
// before the one store of C, so C crosses memory once instead of three times.
#pragma once

#include <cstdint>

#include "chapters/01_host_img2col/naive_gemm.cuh"
#include "chapters/04_bias_epilogue/epilogue.cuh"

namespace conv1d {

// [docs:naive_gemm_bias_silu]
template <class T>
__global__ void naive_gemm_bias_silu(const T* __restrict__ a, const T* __restrict__ b,
                                     const T* __restrict__ bias, T* __restrict__ c, int64_t m,
                                     int64_t n, int64_t k, bool silu) {
  const int64_t col = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;  // the output channel
  if (col >= n) return;
  for (int64_t row = blockIdx.y * int64_t(blockDim.y) + threadIdx.y; row < m;
       row += int64_t(gridDim.y) * blockDim.y)
    c[row * n + col] =
        from_float<T>(apply_bias_silu(naive_dot(a, b, row, col, n, k), bias, col, silu));
}
// [/docs:naive_gemm_bias_silu]

template <class T>
void launch_naive_gemm_bias_silu(const T* a, const T* b, const T* bias, T* c, int64_t m, int64_t n,
                                 int64_t k, bool silu, cudaStream_t s = 0) {
  naive_gemm_bias_silu<T>
      <<<naive_gemm_grid(m, n), dim3(kNaiveTile, kNaiveTile), 0, s>>>(a, b, bias, c, m, n, k, silu);
  GPU_CHECK_LAUNCH("naive_gemm_bias_silu");
}

}  // namespace conv1d
