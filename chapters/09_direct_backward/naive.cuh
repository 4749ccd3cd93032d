// Chapter 09, step 1 (`naive`, both layouts): the backward as it is written. One kernel gives dx,
// one thread per element, each computing the W values of dz it needs (and, with SiLU, the W values
// of z behind them: W^2 multiply-adds per element). A second kernel gives dweight and dbias: one
// block per channel, its threads striding over the batch and the sequence, their sums added in the
// block by a fixed tree, so the result is the same bits every run without any partial-sum buffer.
// Simple, and slow: dx reads each input W^2 times (from the caches), and a block per channel leaves
// most of the GPU idle when D is small.
#pragma once

#include "chapters/09_direct_backward/bwd_common.cuh"
#include "common/fast_divmod.h"
#include "common/launch.cuh"
#include "common/tensor.h"

namespace conv1d::ch09 {

// Position of element e in (b*D + d or b*L + t, d, t) terms for either layout, and the distance
// between neighbouring time steps.
template <bool kChannelLast>
struct Position {
  int64_t d, t, step;
  __device__ Position(int64_t e, int64_t dim, int64_t len, const FastDivmod& by_len,
                      const FastDivmod& by_dim) {
    if (kChannelLast) {
      const int64_t bt = by_dim.div(e);
      d = e - bt * dim;
      t = bt - by_len.div(bt) * len;
      step = dim;
    } else {
      const int64_t bd = by_len.div(e);
      t = e - bd * len;
      d = bd - by_dim.div(bd) * dim;
      step = 1;
    }
  }
};

// dz at time t + dt of the row element e lies in (position p), zero outside [0, L).
template <int W, class T>
__device__ __forceinline__ float naive_dz(const BwdArgs<T>& a, const Filter<W>& f, int64_t e,
                                          int64_t t, int64_t step, int dt) {
  const int64_t tt = t + dt;
  if (tt < 0 || tt >= a.seqlen) return 0.0f;
  const int64_t at = e + dt * step;
  float taps[W];
#pragma unroll
  for (int k = 0; k < W; ++k) {
    const int64_t back = W - 1 - k;
    taps[k] = tt >= back ? to_float(a.x[at - back * step]) : 0.0f;
  }
  return dz_at<W>(f, taps, to_float(a.dout[at]), a.silu);
}

// [docs:ch09_naive]
template <class T, int W, bool kChannelLast>
__global__ void conv_bwd_naive_dx(BwdArgs<T> a, FastDivmod by_len, FastDivmod by_dim) {
  const int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (e >= a.elements()) return;
  const Position<kChannelLast> p(e, a.dim, a.seqlen, by_len, by_dim);
  const Filter<W> f = load_filter<W>(a.weight, a.bias, p.d);
  float acc = 0.0f;  // dx[s] = sum_k w[k] dz[s + (W-1) - k]
#pragma unroll
  for (int k = 0; k < W; ++k) acc += f.w[k] * naive_dz<W>(a, f, e, p.t, p.step, W - 1 - k);
  a.dx[e] = from_float<T>(acc);
}

constexpr int kNaiveSumThreads = 256;

template <class T, int W, bool kChannelLast>
__global__ void __launch_bounds__(kNaiveSumThreads) conv_bwd_naive_dweight(BwdArgs<T> a) {
  const int64_t d = blockIdx.x, len = a.seqlen, dim = a.dim;
  const Filter<W> f = load_filter<W>(a.weight, a.bias, d);
  GradSums<W> s;
  for (int64_t bt = threadIdx.x; bt < a.batch * len; bt += kNaiveSumThreads) {  // (b, t) pairs
    const int64_t b = bt / len, t = bt - b * len;
    const int64_t e = kChannelLast ? bt * dim + d : (b * dim + d) * len + t;
    const int64_t step = kChannelLast ? dim : 1;
    const float dz = naive_dz<W>(a, f, e, t, step, 0);
#pragma unroll
    for (int k = 0; k < W; ++k) {
      const int64_t back = W - 1 - k;
      s.v[k] += t >= back ? dz * to_float(a.x[e - back * step]) : 0.0f;
    }
    s.v[W] += dz;
  }
  // The block's threads' sums by a fixed tree in shared memory.
  __shared__ float part[W + 1][kNaiveSumThreads];
#pragma unroll
  for (int k = 0; k <= W; ++k) part[k][threadIdx.x] = s.v[k];
  for (unsigned half = kNaiveSumThreads / 2; half > 0; half /= 2) {
    __syncthreads();
    if (threadIdx.x < half)
#pragma unroll
      for (int k = 0; k <= W; ++k) part[k][threadIdx.x] += part[k][threadIdx.x + half];
  }
  if (threadIdx.x == 0) {
#pragma unroll
    for (int k = 0; k < W; ++k) a.dweight[d * W + k] = part[k][0];
    a.dbias[d] = part[W][0];
  }
}
// [/docs:ch09_naive]

constexpr int kNaiveThreads = 256;

template <class T>
void launch_naive_dx(const BwdArgs<T>& a, Layout layout, int width, cudaStream_t s = 0,
                     KernelFacts* facts = nullptr) {
  const FastDivmod by_len(a.seqlen), by_dim(a.dim);
  const int64_t blocks = ceil_div(a.elements(), kNaiveThreads);
  dispatch_width(width, [&](auto w) {
    constexpr int W = decltype(w)::value;
    auto kernel = layout == Layout::channel_last ? conv_bwd_naive_dx<T, W, true>
                                                 : conv_bwd_naive_dx<T, W, false>;
    launch_or_describe("conv_bwd_naive_dx", kernel, blocks, kNaiveThreads, s, facts, a, by_len,
                       by_dim);
  });
}

template <class T>
void launch_naive_dweight(const BwdArgs<T>& a, Layout layout, int width, cudaStream_t s = 0,
                          KernelFacts* facts = nullptr) {
  dispatch_width(width, [&](auto w) {
    constexpr int W = decltype(w)::value;
    auto kernel = layout == Layout::channel_last ? conv_bwd_naive_dweight<T, W, true>
                                                 : conv_bwd_naive_dweight<T, W, false>;
    launch_or_describe("conv_bwd_naive_dweight", kernel, a.dim, kNaiveSumThreads, s, facts, a);
  });
}

}  // namespace conv1d::ch09
