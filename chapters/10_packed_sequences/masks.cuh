// Chapter 10, step 1: one byte per token says which of its W taps count (chapter 08's kernels take
// these masks, direct_common.cuh). The packing is the same for every channel, so this runs once
// per token, before the convolution, over B*L tokens instead of B*D*L elements: at 8x4096x4096 a
// 4096th of the work, and the bytes it writes (32 KiB) stay in the L2 for the convolution to read.
#pragma once

#include <cstdint>

#include "chapters/08_direct_forward/direct_common.cuh"
#include "common/launch.cuh"

namespace conv1d::ch10 {

// The sequence that token t (0 <= t < cu_seqlens[n]) belongs to: the last n with cu_seqlens[n] <= t
// (a length-0 sequence shares its start with the next one, and holds no token).
__host__ __device__ inline int32_t sequence_of(const int32_t* cu_seqlens, int32_t sequences,
                                               int64_t t) {
  int32_t lo = 0, hi = sequences;  // cu_seqlens[lo] <= t < cu_seqlens[hi]
  while (hi - lo > 1) {
    const int32_t mid = (lo + hi) / 2;
    if (cu_seqlens[mid] <= t)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

struct MaskArgs {
  uint8_t* masks;   // [B, L] out
  int64_t batch;    // varlen: 1
  int64_t seqlen;   // varlen: every token
  const int32_t* seq_idx = nullptr;     // rows form: [B, L]
  const int32_t* cu_seqlens = nullptr;  // varlen: [N + 1]
  int32_t sequences = 0;                // varlen: N
};

// [docs:ch10_masks]
template <int W>
__global__ void packing_masks(MaskArgs a) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;  // b * L + t
  if (i >= a.batch * a.seqlen) return;
  const int64_t t = i % a.seqlen;
  unsigned m = 0;
  if (a.cu_seqlens == nullptr) {
    // Rows: tap k counts when its input lies in the row and has t's id. Padding keeps none.
    const int32_t id = a.seq_idx[i];
#pragma unroll
    for (int k = 0; k < W; ++k) {
      const int64_t back = (W - 1) - k;  // tap k reads t - back
      m |= (id >= 0 && t >= back && a.seq_idx[i - back] == id ? 1u : 0u) << k;
    }
  } else {
    // Varlen: a tap counts from the start of t's sequence on.
    const int64_t start = a.cu_seqlens[sequence_of(a.cu_seqlens, a.sequences, t)];
#pragma unroll
    for (int k = 0; k < W; ++k) m |= (t - (W - 1) + k >= start ? 1u : 0u) << k;
  }
  a.masks[i] = static_cast<uint8_t>(m);
}
// [/docs:ch10_masks]

constexpr int kMaskThreads = 256;

inline void launch_packing_masks(const MaskArgs& a, int width, cudaStream_t s = 0,
                                 KernelFacts* facts = nullptr) {
  const int64_t blocks = ceil_div(a.batch * a.seqlen, kMaskThreads);
  if (blocks == 0) return;
  dispatch_width(width, [&](auto w) {
    launch_or_describe("packing_masks", packing_masks<decltype(w)::value>, blocks, kMaskThreads, s,
                       facts, a);
  });
}

}  // namespace conv1d::ch10
