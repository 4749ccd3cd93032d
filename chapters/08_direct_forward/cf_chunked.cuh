// Chapter 08, step 3 (`chunked`, channel-first): kVecs vectors per thread. A warp takes a chunk of
// kVecs * 32 consecutive vectors; lane l holds vectors l, l + 32, l + 64, ... of it, so each of its
// loads is still one coalesced 512-byte run per warp. All kVecs loads are issued before the first
// output is computed, so each thread has kVecs * 16 bytes in flight instead of 16, and the warp
// pays the one halo load from memory (lane 0's, at the start of the chunk) once per kVecs vectors:
// lane 0's halo for its next vector is lane 31's current one, carried over by shuffle.
#pragma once

#include <stdexcept>

#include "chapters/08_direct_forward/direct_common.cuh"
#include "common/launch.cuh"
#include "common/warp.cuh"

namespace conv1d::ch08 {

// [docs:ch08_cf_chunked]
template <class T, int W, int kVecs>
__global__ void conv_fwd_cf_chunked(DirectArgs<T> a, FastDivmod by_len, FastDivmod by_dim) {
  constexpr int kPer = kPer16<T>;
  const int64_t n = a.elements();
  const int lane = threadIdx.x % kWarpLanes;
  const int64_t warp = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / kWarpLanes;
  const int64_t chunk0 = warp * kVecs * kWarpLanes * kPer;  // first element of the warp's chunk
  auto first_element = [&](int j) { return chunk0 + (int64_t(j) * kWarpLanes + lane) * kPer; };

  // 1. Every load first: the chunk's vectors, their filters, and the halo of the whole chunk (lane 0).
  Vec<T, kPer> cur[kVecs];
#pragma unroll
  for (int j = 0; j < kVecs; ++j)
    cur[j] = first_element(j) < n ? load_or_tail<T, kPer>(a.x, first_element(j), n)
                                  : zero_vec<T, kPer>();
  CfSpot<W> spot[kVecs];  // and their filters, loaded while the vectors are on their way
#pragma unroll
  for (int j = 0; j < kVecs; ++j) spot[j] = cf_spot<T, W>(a, by_len, by_dim, first_element(j));
  Bytes16 carry{};  // lane 0: the vector before its next one
  if (lane == 0 && chunk0 > 0 && chunk0 < n)
    carry = *reinterpret_cast<const Bytes16*>(a.x + chunk0 - kPer);

    // 2. Down the chunk: each vector's halo from the lane below, lane 0's from the carry.
#pragma unroll
  for (int j = 0; j < kVecs; ++j) {
    const Bytes16 words = bit_cast<Bytes16>(cur[j]);
    Bytes16 below{}, top{};
#pragma unroll
    for (int w = kHaloFirstWord<T, W>; w < 4; ++w) {
      below.v[w] = shuffle_up(words.v[w], 1);
      top.v[w] = shuffle(words.v[w], kWarpLanes - 1);  // lane 0's halo for vector j + 1
    }
#pragma unroll
    for (int w = kHaloFirstWord<T, W>; w < 4; ++w) below.v[w] = lane == 0 ? carry.v[w] : below.v[w];
    const Vec<T, kPer> prev = bit_cast<Vec<T, kPer>>(below);
    carry = top;
    const int64_t e0 = first_element(j);
    if (e0 < n) {
      float y[kPer];
      cf_outputs<T, W>(a, by_len, by_dim, e0, spot[j], cf_window<T, W>(prev, cur[j]), y);
      store_or_tail<T, kPer>(a.out, e0, n, y);
    }
  }
}
// [/docs:ch08_cf_chunked]

constexpr int kChunkedThreads = 128;
// Vectors per thread when the command line does not say: 2 (the fastest of 1, 2, 4 and 8 at
// 8x4096x4096 bf16 on an H200, bench_08_sweep.tsv) when that still gives every multiprocessor two
// full rounds of threads, 1 for smaller problems, where each thread's serial chain of loads and
// outputs is what the run waits for (results/gpu-check/ch08_ncu_tiny.csv).
inline int chunked_vectors(int64_t vectors, int sm_count, int requested = 0) {
  if (requested > 0) return requested;
  return vectors >= int64_t(sm_count) * 2048 * 2 * 2 ? 2 : 1;
}

// The kernel for kVecs in {1, 2, 4, 8} (the chapter's --vectors flag).
template <class T>
void launch_cf_chunked(const DirectArgs<T>& a, int width, int vecs_per_thread, cudaStream_t s = 0,
                       KernelFacts* facts = nullptr) {
  require_vector_alignment(a);
  const FastDivmod by_len(a.seqlen), by_dim(a.dim);
  const int64_t vectors = ceil_div(a.elements(), kPer16<T>);
  const int64_t warps = ceil_div(vectors, int64_t(vecs_per_thread) * kWarpLanes);
  const int64_t blocks = ceil_div(warps * kWarpLanes, kChunkedThreads);
  dispatch_width(width, [&](auto w) {
    constexpr int W = decltype(w)::value;
    void (*kernel)(DirectArgs<T>, FastDivmod, FastDivmod) = nullptr;
    switch (vecs_per_thread) {
      case 1: kernel = conv_fwd_cf_chunked<T, W, 1>; break;
      case 2: kernel = conv_fwd_cf_chunked<T, W, 2>; break;
      case 4: kernel = conv_fwd_cf_chunked<T, W, 4>; break;
      case 8: kernel = conv_fwd_cf_chunked<T, W, 8>; break;
      default:
        throw std::invalid_argument("conv_fwd_cf_chunked: vectors per thread must be 1, 2, 4 or 8");
    }
    launch_or_describe("conv_fwd_cf_chunked", kernel, blocks, kChunkedThreads, s, facts, a, by_len,
                       by_dim);
  });
}

}  // namespace conv1d::ch08
