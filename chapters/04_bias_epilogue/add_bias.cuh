// The separate bias pass of the seed notes (docs/background.md#the-seeds): after the GEMM has
// stored C, one more kernel reads C, adds the bias (and applies SiLU when asked) and writes C
// again.
#pragma once

#include <cstdint>

#include "chapters/02_gpu_preprocess/preprocess_kernels.cuh"
#include "chapters/04_bias_epilogue/epilogue.cuh"

namespace conv1d {

// [docs:add_bias]
// C [rows, D] time-first, in place: the channel of an element is its column. One thread per word of
// a row, striding over rows; a word's N bias values are loaded once per thread, as one word too.
template <class T, int N>
__global__ void add_bias(Vec<T, N>* __restrict__ c, const Vec<T, N>* __restrict__ bias,
                         int64_t rows, int64_t words, bool silu) {
  const int64_t w = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (w >= words) return;
  auto finish_rows = [&](const T* lane_bias) {  // lane_bias: this word's N bias values, or nullptr
    for (int64_t r = blockIdx.y * int64_t(blockDim.y) + threadIdx.y; r < rows;
         r += int64_t(gridDim.y) * blockDim.y) {
      Vec<T, N> v = c[r * words + w];
#pragma unroll
      for (int j = 0; j < N; ++j)
        v.v[j] = from_float<T>(apply_bias_silu(to_float(v.v[j]), lane_bias, j, silu));
      c[r * words + w] = v;
    }
  };
  if (bias != nullptr) {
    const Vec<T, N> b = bias[w];
    finish_rows(b.v);
  } else {
    finish_rows(nullptr);  // --silu without --bias
  }
}
// [/docs:add_bias]

template <class T, int N>
void launch_add_bias_packs(T* c, const T* bias, int64_t rows, int64_t dim, bool silu,
                           cudaStream_t s) {
  const int64_t words = dim / N;
  const RowLaunch g = row_launch(rows, words, 1);
  add_bias<<<g.grid, g.block, 0, s>>>(reinterpret_cast<Vec<T, N>*>(c),
                                      reinterpret_cast<const Vec<T, N>*>(bias), rows, words, silu);
  GPU_CHECK_LAUNCH("add_bias");
}

// c [rows, D] (device storage type T); bias [D] or nullptr. Returns the bytes per access, as the
// preprocessing launchers do.
template <class T>
int launch_add_bias(T* c, const T* bias, int64_t rows, int64_t dim, bool silu, cudaStream_t s = 0) {
  constexpr int kPerWord = 16 / sizeof(T);
  if (rows_fit_bytes16(dim * int64_t(sizeof(T)), {c, bias})) {
    launch_add_bias_packs<T, kPerWord>(c, bias, rows, dim, silu, s);
    return 16;
  }
  launch_add_bias_packs<T, 1>(c, bias, rows, dim, silu, s);
  return sizeof(T);
}

}  // namespace conv1d
