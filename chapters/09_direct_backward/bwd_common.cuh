// Chapter 09: what the direct backward kernels share. Per batch b and channel d, with x = 0 before
// t = 0 and dz = 0 from t = L on:
//
//   z[t]       = bias + sum_{k<W} weight[k] * x[t-(W-1)+k]   (recomputed; needed for SiLU only)
//   dz[t]      = dout[t] * silu'(z[t])  with SiLU,  dz[t] = dout[t]  without
//   dx[s]      = sum_{k<W} weight[k] * dz[s+(W-1)-k]
//   dweight[k] = sum_{b,t} dz[t] * x[t-(W-1)+k],   dbias = sum_{b,t} dz[t]
//
// dx is elementwise like the forward (a window of dz ahead instead of a window of x behind).
// dweight and dbias are sums over the whole batch and sequence: every thread holds part of them,
// and how those parts are added decides whether the result is the same bits every run.
// Deterministic: each unit of work (a warp's chunk of a row, a warp's tile of time steps) adds its
// own terms in a fixed order and writes them to a partial-sum buffer; reduce_partials (reduce.cuh)
// adds the units in a fixed order. Atomic: each unit adds its sums straight into dweight and dbias
// with atomicAdd, in whatever order the units finish.
#pragma once

#include <cstdint>

#include "chapters/04_bias_epilogue/epilogue.cuh"
#include "chapters/08_direct_forward/direct_common.cuh"
#include "common/device_types.cuh"
#include "common/util.h"
#include "common/vec.cuh"
#include "common/warp.cuh"

namespace conv1d::ch09 {

using ch08::bit_cast;
using ch08::Filter;
using ch08::kAllTaps;
using ch08::load_filter;
using ch08::zero_vec;

template <class T>  // device storage type
struct BwdArgs {
  const T* x;       // [B, D, L] or [B, L, D]
  const T* dout;    // like x
  const T* weight;  // [D, W]
  const T* bias;    // [D], or nullptr
  T* dx;            // like x
  float* partials;  // deterministic: W+1 sums per unit of work (each kernel says what a unit is)
  float* dweight;   // [D, W]: atomic: added into (zeroed before); naive: written
  float* dbias;     // [D]
  int64_t batch, dim, seqlen;
  bool silu;
  bool atomic;  // the unit's sums go into dweight and dbias with atomicAdd, not into partials
  CONV1D_HOST_DEVICE int64_t elements() const { return batch * dim * seqlen; }
};

// dz at one position from dout there and, with SiLU, the window x[t-(W-1) .. t] (zeros before t = 0
// already in it).
template <int W>
__device__ __forceinline__ float dz_at(const Filter<W>& f, const float* x_window, float dout,
                                       bool silu) {
  if (!silu) return dout;
  float z = f.bias;
#pragma unroll
  for (int k = 0; k < W; ++k) z += f.w[k] * x_window[k];
  return dout * silu_grad_f32(z);
}

// [docs:ch09_sums]
// A unit's W+1 sums (dweight[0..W-1], dbias) for one channel.
template <int W>
struct GradSums {
  float v[W + 1] = {};
};

// Adds the sums of all lanes whose lane index differs only in the bits of `lane_mask` (a fixed
// butterfly: the same additions in the same order every run), leaving the total in each of them.
template <int W>
__device__ __forceinline__ void warp_sum(GradSums<W>& s, int lane_mask) {
#pragma unroll
  for (int bit = 1; bit < kWarpLanes; bit <<= 1)
    if (lane_mask & bit)
#pragma unroll
      for (int k = 0; k <= W; ++k)
        s.v[k] +=
            __uint_as_float(shuffle(__float_as_uint(s.v[k]), (threadIdx.x % kWarpLanes) ^ bit));
}

// Where a unit's sums go: its row of the partial-sum buffer, or atomically into the results.
template <int W, class T>
__device__ __forceinline__ void emit_sums(const BwdArgs<T>& a, int64_t unit_row, int64_t d,
                                          const GradSums<W>& s) {
  if (a.atomic) {
#pragma unroll
    for (int k = 0; k < W; ++k) atomicAdd(&a.dweight[d * W + k], s.v[k]);
    atomicAdd(&a.dbias[d], s.v[W]);
  } else {
#pragma unroll
    for (int k = 0; k <= W; ++k) a.partials[unit_row * (W + 1) + k] = s.v[k];
  }
}

// Where the units of channel d lie in the partial-sum buffer: partials[a1 * stride1 + a2 * stride2 +
// d * stride_d + k] for a1 < count1, a2 < count2 (added a1 outer, a2 inner), k <= W. Each kernel
// says how its units are laid out; reduce_partials (reduce.cuh) adds them in this order.
struct PartialLayout {
  int64_t count1, stride1, count2, stride2, stride_d;
};
// [/docs:ch09_sums]

}  // namespace conv1d::ch09
