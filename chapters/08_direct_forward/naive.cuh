// Chapter 08, step 1 (`naive`, both layouts): one thread per output. The thread finds its (b, d, t)
// by dividing its flat index, reads its W inputs one element at a time and writes its output.
// Neighbouring threads take neighbouring outputs, so each of the W loads is coalesced across the
// warp; the W-fold re-reads of every input are served by the caches, so x still crosses DRAM about
// once. What it leaves on the table: 2- or 4-byte accesses, W loads per output, and the divisions.
#pragma once

#include "chapters/08_direct_forward/direct_common.cuh"
#include "common/launch.cuh"
#include "common/tensor.h"

namespace conv1d::ch08 {

// [docs:ch08_naive]
// kChannelLast: e = (b*L + t)*D + d, the previous time step is D elements back; else e = (b*D + d)*L
// + t, it is 1 element back.
template <class T, int W, bool kChannelLast>
__global__ void conv_fwd_naive(DirectArgs<T> a, FastDivmod by_len, FastDivmod by_dim) {
  const int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (e >= a.elements()) return;
  int64_t d, t;
  if (kChannelLast) {
    const int64_t bt = by_dim.div(e);  // b*L + t
    d = e - bt * a.dim;
    t = bt - by_len.div(bt) * a.seqlen;
  } else {
    const int64_t bd = by_len.div(e);  // b*D + d
    t = e - bd * a.seqlen;
    d = bd - by_dim.div(bd) * a.dim;
  }
  const int64_t step = kChannelLast ? a.dim : 1;
  float in[W];
#pragma unroll
  for (int k = 0; k < W; ++k) {
    const int64_t back = W - 1 - k;  // tap k reads t - back
    in[k] = t >= back ? to_float(a.x[e - back * step]) : 0.0f;
  }
  a.out[e] = from_float<T>(conv_output<W>(load_filter<W>(a, d), in, ~0u, a.silu));
}
// [/docs:ch08_naive]

constexpr int kNaiveThreads = 256;

template <class T>
void launch_naive(const DirectArgs<T>& a, Layout layout, int width, cudaStream_t s = 0,
                  KernelFacts* facts = nullptr) {
  const FastDivmod by_len(a.seqlen), by_dim(a.dim);
  const int64_t blocks = ceil_div(a.elements(), kNaiveThreads);
  dispatch_width(width, [&](auto w) {
    constexpr int W = decltype(w)::value;
    auto kernel =
        layout == Layout::channel_last ? conv_fwd_naive<T, W, true> : conv_fwd_naive<T, W, false>;
    launch_or_describe("conv_fwd_naive", kernel, blocks, kNaiveThreads, s, facts, a, by_len,
                       by_dim);
  });
}

}  // namespace conv1d::ch08
