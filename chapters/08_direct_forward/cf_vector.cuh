// Chapter 08, step 2 (`vector`, channel-first): one 16-byte vector of outputs per thread. A thread
// loads its 8 (fp16/bf16) or 4 (fp32) inputs with one instruction and needs the W-1 inputs before
// them: they are the last elements of the previous thread's vector, which that thread holds in its
// registers already, so they come over by warp shuffle. Only lane 0, whose neighbour belongs to
// another warp, loads them from memory (a cache hit: that warp reads the same bytes).
//
// The tensor is one flat sequence of vectors, whatever L: a vector that straddles the end of a row
// is computed element by element (cf_outputs), every other one with one filter. So L needs no
// particular size, and short sequences leave no thread idle.
#pragma once

#include "chapters/08_direct_forward/direct_common.cuh"
#include "common/launch.cuh"
#include "common/warp.cuh"

namespace conv1d::ch08 {

// [docs:ch08_cf_vector]
template <class T, int W>
__global__ void conv_fwd_cf_vector(DirectArgs<T> a, FastDivmod by_len, FastDivmod by_dim) {
  constexpr int kPer = kPer16<T>;
  const int64_t n = a.elements();
  const int64_t e0 = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) * kPer;
  const int lane = threadIdx.x % kWarpLanes;
  const Vec<T, kPer> cur = e0 < n ? load_or_tail<T, kPer>(a.x, e0, n) : zero_vec<T, kPer>();
  const CfSpot<W> spot = cf_spot<T, W>(a, by_len, by_dim, e0);  // its filter, loaded meanwhile

  // The halo: the previous vector's last W-1 elements, from the lane below (all lanes shuffle).
  const Bytes16 words = bit_cast<Bytes16>(cur);
  Bytes16 below{};
#pragma unroll
  for (int j = kHaloFirstWord<T, W>; j < 4; ++j) below.v[j] = shuffle_up(words.v[j], 1);
  Vec<T, kPer> prev = bit_cast<Vec<T, kPer>>(below);
  if (lane == 0 && e0 > 0 && e0 < n) prev = *reinterpret_cast<const Vec<T, kPer>*>(a.x + e0 - kPer);
  if (e0 >= n) return;

  float y[kPer];
  cf_outputs<T, W>(a, by_len, by_dim, e0, spot, cf_window<T, W>(prev, cur), y);
  store_or_tail<T, kPer>(a.out, e0, n, y);
}
// [/docs:ch08_cf_vector]

constexpr int kCfThreads = 256;

template <class T>
void launch_cf_vector(const DirectArgs<T>& a, int width, cudaStream_t s = 0,
                      KernelFacts* facts = nullptr) {
  require_vector_alignment(a);
  const FastDivmod by_len(a.seqlen), by_dim(a.dim);
  const int64_t blocks =
      ceil_div(ceil_div(a.elements(), kPer16<T>), kCfThreads);  // a thread per vector
  dispatch_width(width, [&](auto w) {
    launch_or_describe("conv_fwd_cf_vector", conv_fwd_cf_vector<T, decltype(w)::value>, blocks,
                       kCfThreads, s, facts, a, by_len, by_dim);
  });
}

}  // namespace conv1d::ch08
