// Chapter 10: the span map, for channel-first rows whose length is a multiple of the vector. The
// packed convolution (chapter 08's cf_chunked with PackedRows) decides each vector's span itself:
// every lane reads the W-1+8 ids around its vector (three 16-byte loads, bf16) and the warp votes,
// and that costs every thread registers. But the ids of a row are the same for all D of its
// channels: the span of vector v of batch row b is one answer, not D. So a small kernel
// (make_span_map, a block a batch row) answers it once, into one byte per (b, v), and for a mixed
// vector also writes its outputs' flags (which taps count); the convolution reads the byte, and
// the flags where it needs them (RowSpans). A row's first vector, whose taps may reach into the
// initial states, and the final states are cf_row_heads' (cf_row_heads.cuh).
//
// Without seq_idx no map is made: a row's only vector that is not full is its first (RowSpans
// answers from the position, as chapter 08 does).
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

// One block a batch row: the span of each of its vectors, as the packed convolution would decide
// it (PackedRows::span: a row's first vector is mixed, the rest by their ids), and a mixed one's
// flags (PackedRows::vector_flags: the same bytes the packed convolution computes).
template <class T, int W>
__global__ void make_span_map(PackedRows<T> seqs, SpanMap m) {
  constexpr int kPer = kPer16<T>;
  const int64_t b = blockIdx.x, row0 = b * m.vectors_per_row;
  for (int64_t v = threadIdx.x; v < m.vectors_per_row; v += blockDim.x) {
    const Span s = seqs.template span<W, kPer, 0>(b, v * kPer);
    m.spans[row0 + v] = static_cast<uint8_t>(s);
    if (s == Span::mixed && v * kPer >= W - 1) {
      const TokenFlags<kPer> f = seqs.template vector_flags<W, kPer>(b, v * kPer);
#pragma unroll
      for (int w = 0; w < TokenFlags<kPer>::kWords; ++w)
        m.flags[(row0 + v) * kMapFlagWords + w] = f.w[w];
    }
  }
}
// [/docs:ch10_span_map]

constexpr int kSpanMapThreads = 512;

template <class T>
void launch_make_span_map(int64_t batch, int width, const PackedRows<T>& seqs, const SpanMap& m,
                          cudaStream_t s = 0) {
  if (batch == 0) return;
  dispatch_width(width, [&](auto w) {
    launch_or_describe("make_span_map", make_span_map<T, decltype(w)::value>, batch,
                       kSpanMapThreads, s, nullptr, seqs, m);
  });
}

}  // namespace conv1d::ch10
