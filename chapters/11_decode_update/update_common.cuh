// Chapter 11: what the decoding kernels share. One step of decoding computes, for batch row b,
// channel d and new token i < T,
//
//   out[b, d, i] = act( bias[d] + sum_{k<W} weight[d, k] * in(i - (W-1) + k) )
//
// where in(p) is x[b, d, p] for p >= 0 and, for p < 0, the input |p| steps before the step's first
// token, which the cache row holds; then the step's T inputs go into the cache. The arithmetic is
// chapter 08's (Filter, conv_output with every tap, silu_if, the same rounding on the way out), so
// a decoding loop gives the forward's outputs over the same tokens bit for bit.
#pragma once

#include <cstdint>

#include "chapters/08_direct_forward/direct_common.cuh"
#include "chapters/11_decode_update/decode.h"

namespace conv1d::ch11 {

template <class T>  // device storage type: float, __half, __nv_bfloat16
struct StepArgs {
  const T* x;       // [B, D, T]: this step's new tokens
  T* out;           // [B, D, T]
  T* state;         // [C, D, S]: the cache, updated in place
  const T* weight;  // [D, W]
  const T* bias;    // [D], or nullptr
  // [B], or nullptr for the linear buffer: the circular buffer's positions before the loop.
  const int32_t* cache_seqlens;
  // [B], or nullptr (row b uses cache row b): the cache row of each batch row, negative: padding.
  const int32_t* state_indices;
  int64_t batch, dim;
  int tokens, state_len;
  // Added to cache_seqlens: step k of a loop passes k * T, so that every launch of a loop (and
  // every node of its graph) is the same kernel with its own arguments, and cache_seqlens stays
  // what the caller wrote.
  int64_t position_offset;
  bool silu;
};

// The cache row of batch row b; negative for a padding row (its outputs are 0, no row is touched).
template <class T>
__device__ __forceinline__ int64_t cache_row(const StepArgs<T>& a, int64_t b) {
  return a.state_indices != nullptr ? a.state_indices[b] : b;
}

// The absolute position of row b's first new token in this step (circular buffer).
template <class T>
__device__ __forceinline__ int64_t first_position(const StepArgs<T>& a, int64_t b) {
  return int64_t(a.cache_seqlens[b]) + a.position_offset;
}

}  // namespace conv1d::ch11
