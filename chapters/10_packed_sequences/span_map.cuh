// Chapter 10: the span map, for channel-first rows whose length is a multiple of the vector. The
// packed convolution (chapter 08's cf_chunked with PackedRows) decides each vector's span itself:
// every lane reads the W-1+8 ids around its vector (three 16-byte loads, bf16) and the warp votes,
// and that costs every thread registers. But the ids of a row are the same for all D of its
// channels: the span of vector v of batch row b is one answer, not D. So a small kernel
// (make_span_map, a thread a vector of each batch row) answers it once, into one byte per (b, v),
// with the vector's outputs' flags (which taps count) beside it; the convolution reads the byte,
// and the flags where it needs them.
//
//   forward   (RowSpans) the flags of mixed vectors; a row's first vector, whose taps may reach
//             into the initial states, and the final states are cf_row_heads' (cf_row_heads.cuh).
//             Without seq_idx no map is made: a row's only vector that is not full is its first
//             (RowSpans answers from the position, as chapter 08 does).
//   backward  (RowSpansBwd, chapter 09's cf_fused) every vector's flags, the edges' bits among
//             them: the first vector's state taps, and which inputs receive the final states'
//             gradient. The kernel takes the edges itself, inline: with the flags in memory they
//             are a few loads, not the out-of-line calls of PackedRows. A map is made with or
//             without seq_idx.
#pragma once

#include <cstddef>
#include <cstdint>

#include "chapters/08_direct_forward/direct_common.cuh"
#include "chapters/10_packed_sequences/sequences.cuh"
#include "common/launch.cuh"

namespace conv1d::ch10 {

// The map in memory: flags [B, V, 2] (a mixed vector's TokenFlags, two words whatever the type)
// and spans [B, V] (a Span a byte), V vectors a row. Both null: no map.
struct SpanMap {
  uint32_t* flags = nullptr;
  uint8_t* spans = nullptr;
  int64_t vectors_per_row = 0;
};
constexpr int kMapFlagWords = 2;

// The workspace a map of B rows of L positions needs, for any storage type (the most vectors a
// row: 4 elements a vector, fp32), and the map laid out in it.
inline size_t span_map_bytes(int64_t batch, int64_t seqlen) {
  const size_t vectors = size_t(batch) * size_t(ceil_div(seqlen, int64_t(4)));
  return vectors * (kMapFlagWords * sizeof(uint32_t) + 1);
}
inline SpanMap span_map_in(void* workspace, int64_t batch, int64_t vectors_per_row) {
  SpanMap m;
  m.flags = static_cast<uint32_t*>(workspace);
  m.spans = reinterpret_cast<uint8_t*>(m.flags + batch * vectors_per_row * kMapFlagWords);
  m.vectors_per_row = vectors_per_row;
  return m;
}

// [docs:ch10_span_map]
// The sequence policy of chapter 08's cf_chunked over a span map: the vector at position lo of row
// b (lo a multiple of its size) is full, padding or mixed, and a mixed one's flags are in the map.
struct RowSpans {
  static constexpr bool kPacked = false, kSpanMap = true, kFewConfigurations = true;
  const uint8_t* spans = nullptr;  // [B, V], or nullptr: no seq_idx
  const uint32_t* flags = nullptr;
  int64_t vectors_per_row = 0;
  template <int W, int kOwn, int kAhead>
  __device__ __forceinline__ Span span(int64_t b, int64_t lo) const {
    if (!spans) return lo < W - 1 ? Span::mixed : Span::full;
    return static_cast<Span>(spans[b * vectors_per_row + lo / kOwn]);
  }
  template <int W, int N>
  __device__ __forceinline__ TokenFlags<N> vector_flags(int64_t b, int64_t lo) const {
    const uint32_t* f = flags + (b * vectors_per_row + lo / N) * kMapFlagWords;
    TokenFlags<N> m;
#pragma unroll
    for (int w = 0; w < TokenFlags<N>::kWords; ++w) m.w[w] = f[w];
    return m;
  }
};

// A thread a vector: its span, as the packed convolution would decide it (PackedRows::span: a
// row's first vector is mixed, and with the final states' gradient so are those that hold its
// last W-1 inputs; the rest by their ids), and its outputs' flags: every tap for a full vector,
// none for padding, and for a mixed one the bytes the packed kernels compute (vector_flags inline,
// or flags_here position by position where the edges' bits come in).
template <class T, int W>
__global__ void make_span_map(PackedRows<T> seqs, SpanMap m, int64_t vectors) {
  constexpr int kPer = kPer16<T>;
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;  // b * V + v
  if (i >= vectors) return;
  const int64_t b = i / m.vectors_per_row, lo = (i - b * m.vectors_per_row) * kPer;
  const Span s = seqs.template span<W, kPer, 0>(b, lo);
  TokenFlags<kPer> f = TokenFlags<kPer>::filled(s == Span::full ? kAllTaps<W> : 0u);
  if (s == Span::mixed) {
    if (lo >= W - 1 && !seqs.near_final(lo + kPer, W)) {
      f = seqs.template vector_flags<W, kPer>(b, lo);
    } else {
      for (int e = 0; e < kPer; ++e)
        if (lo + e < seqs.seqlen) f.put(e, seqs.template flags_here<W>(b, lo + e));
    }
  }
  m.spans[i] = static_cast<uint8_t>(s);
#pragma unroll
  for (int w = 0; w < TokenFlags<kPer>::kWords; ++w) m.flags[i * kMapFlagWords + w] = f.w[w];
}
// [/docs:ch10_span_map]

// [docs:ch10_span_map_bwd]
// The same map, as chapter 09's cf_fused reads it: a vector is full when it and the W-1 positions
// after it (the dz ahead that its dx needs: the next vector's first) are, and its flags, with those
// W-1 positions', come from the two vectors' words. The states are PackedRows', taken inline.
template <class T>
struct RowSpansBwd : PackedRows<T> {
  static constexpr bool kPacked = true, kSpanMap = true, kFewConfigurations = true;
  const uint8_t* spans = nullptr;  // [B, V]
  const uint32_t* flags = nullptr;
  int64_t vectors_per_row = 0;

  template <int W, int kOwn, int kAhead>
  __device__ __forceinline__ Span span(int64_t b, int64_t lo) const {
    static_assert(kAhead <= kOwn, "the positions ahead lie in the next vector");
    if (lo >= this->seqlen) return Span::full;  // past the row: no outputs, nothing to read
    const int64_t v = b * vectors_per_row + lo / kOwn;
    const bool ahead = kAhead > 0 && lo + kOwn < this->seqlen;
    return spans[v] == uint8_t(Span::full) && (!ahead || spans[v + 1] == uint8_t(Span::full))
               ? Span::full
               : Span::mixed;
  }
  template <int W, int N>
  __device__ __forceinline__ TokenFlags<N> vector_flags(int64_t b, int64_t lo) const {
    constexpr int kOwn = N - (W - 1), kOwnWords = kOwn / 4;
    static_assert(kOwn % 4 == 0 && TokenFlags<N>::kWords == kOwnWords + 1, "whole words a vector");
    const int64_t v = b * vectors_per_row + lo / kOwn;
    TokenFlags<N> m;
#pragma unroll
    for (int w = 0; w < kOwnWords; ++w) m.w[w] = flags[v * kMapFlagWords + w];
    m.w[kOwnWords] = lo + kOwn < this->seqlen ? flags[(v + 1) * kMapFlagWords] : 0u;
    return m;
  }
  template <int W>
  __device__ __forceinline__ const T* state_at(int64_t b, int64_t, int64_t d) const {
    return this->state(b, d, W);
  }
  template <int W>
  __device__ __forceinline__ float dfinal_at(int64_t b, int64_t, int64_t d, int j) const {
    return this->dfinal_states[(b * this->dim + d) * (W - 1) + j];
  }
  // (A row the map takes is at least a vector long, so its final states never reach back into
  // its initial states.)
  template <int W, class FlagsAt>
  __device__ __forceinline__ void row_dinit(int64_t b, int64_t d, const Filter<W>& f,
                                            const float* dz, FlagsAt&& flags_at) const {
    PackedRows<T>::template row_dinit<W, true>(b, d, f, dz, flags_at);
  }
};
// [/docs:ch10_span_map_bwd]

constexpr int kSpanMapThreads = 256;

template <class T>
void launch_make_span_map(int64_t batch, int width, const PackedRows<T>& seqs, const SpanMap& m,
                          cudaStream_t s = 0) {
  const int64_t vectors = batch * m.vectors_per_row;
  if (vectors == 0) return;
  dispatch_width(width, [&](auto w) {
    launch_or_describe("make_span_map", make_span_map<T, decltype(w)::value>,
                       ceil_div(vectors, int64_t(kSpanMapThreads)), kSpanMapThreads, s, nullptr,
                       seqs, m, vectors);
  });
}

}  // namespace conv1d::ch10
