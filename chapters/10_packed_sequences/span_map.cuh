// Chapter 10: the span map, for channel-first rows whose length is a multiple of the vector. The
// packed convolution (chapter 08's cf_chunked with PackedRows) decides each vector's span itself:
// every lane reads the W-1+8 ids around its vector (three 16-byte loads, bf16) and the warp votes,
// and its masked path costs every thread registers. But the ids of a row are the same for all D of
// its channels: the span of vector v of batch row b is one answer, not D. So a small kernel
// (make_span_map, a block a batch row) answers it once, into one byte per (b, v), and lists the
// mixed vectors of each b; the convolution reads the byte (RowSpans: full, padding, or not its
// own), and cf_mixed_vectors.cuh computes the listed vectors, with the rows' states.
//
// Without seq_idx no map is made: a row's only vector that is not full is its first, whose taps
// reach into the initial states (RowSpans answers from the position, as chapter 08 does).
#pragma once

#include <cstddef>
#include <cstdint>

#include "chapters/08_direct_forward/direct_common.cuh"
#include "chapters/10_packed_sequences/sequences.cuh"
#include "common/launch.cuh"

namespace conv1d::ch10 {

// The map in memory: spans [B, V] (a Span a byte, V vectors a row), counts [B] and list [B, V] (the
// first counts[b] entries of row b: its mixed vectors, in no particular order). All null: no map.
struct SpanMap {
  uint8_t* spans = nullptr;
  int32_t* counts = nullptr;
  int32_t* list = nullptr;
  int64_t vectors_per_row = 0;
};

// The workspace a map of B rows of L positions needs, for any storage type (the most vectors a
// row: 4 elements a vector, fp32), and the map laid out in it.
inline size_t span_map_bytes(int64_t batch, int64_t seqlen) {
  const size_t v = size_t(ceil_div(seqlen, int64_t(4))), b = size_t(batch);
  return b * v * sizeof(int32_t) + b * sizeof(int32_t) + ((b * v + 15) / 16) * 16;
}
inline SpanMap span_map_in(void* workspace, int64_t batch, int64_t vectors_per_row) {
  SpanMap m;
  const size_t b = size_t(batch), v = size_t(vectors_per_row);
  m.list = static_cast<int32_t*>(workspace);
  m.counts = m.list + b * v;
  m.spans = reinterpret_cast<uint8_t*>(m.counts + b);
  m.vectors_per_row = vectors_per_row;
  return m;
}

// [docs:ch10_span_map]
// The sequence policy of chapter 08's cf_chunked over a span map: the vector at position lo of row
// b (lo a multiple of kOwn, its size) is full, padding, or someone else's.
struct RowSpans {
  static constexpr bool kPacked = false, kSpanMap = true, kFewConfigurations = true;
  const uint8_t* spans = nullptr;  // [B, V], or nullptr: no seq_idx
  int64_t vectors_per_row = 0;
  template <int W, int kOwn, int kAhead>
  __device__ __forceinline__ Span span(int64_t b, int64_t lo) const {
    if (!spans) return lo < W - 1 ? Span::mixed : Span::full;
    return static_cast<Span>(spans[b * vectors_per_row + lo / kOwn]);
  }
};

// One block a batch row: the span of each of its vectors, as the packed convolution would decide
// it (PackedRows::span: the row's first vector is mixed, the rest by their ids), and the list of
// the mixed ones.
template <class T, int W>
__global__ void make_span_map(PackedRows<T> seqs, SpanMap m) {
  constexpr int kPer = kPer16<T>;
  __shared__ int mixed;
  const int64_t b = blockIdx.x, row0 = b * m.vectors_per_row;
  if (threadIdx.x == 0) mixed = 0;
  __syncthreads();
  for (int64_t v = threadIdx.x; v < m.vectors_per_row; v += blockDim.x) {
    const Span s = seqs.template span<W, kPer, 0>(b, v * kPer);
    m.spans[row0 + v] = static_cast<uint8_t>(s);
    if (s == Span::mixed) m.list[row0 + atomicAdd(&mixed, 1)] = static_cast<int32_t>(v);
  }
  __syncthreads();
  if (threadIdx.x == 0) m.counts[b] = mixed;
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
