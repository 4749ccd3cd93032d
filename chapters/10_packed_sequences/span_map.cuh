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
//             into the initial states, and the final states are the convolution's first blocks'
//             (cf_row_heads.cuh).
//             Without seq_idx no map is made: a row's only vector that is not full is its first
//             (RowSpans answers from the position, as chapter 08 does).
//   backward  (RowSpansBwd, chapter 09's cf_fused) every vector's flags, the edges' bits among
//             them: the first vector's state taps, and which inputs receive the final states'
//             gradient. The kernel takes the edges itself, inline: with the flags in memory they
//             are a few loads, not the out-of-line calls of PackedRows. A map is made with or
//             without seq_idx. Its bytes are the backward's own: how a lane takes its vector, the
//             W-1 positions around it included (chapter 09's LaneForm). Where that window holds one
//             sequence boundary and no padding of its own (most mixed vectors: a row's 8 documents
//             make 8 boundaries), the byte says where the boundary lies, and the kernel takes the
//             cut form: a comparison a tap, no flags.
#pragma once

#include <cstddef>
#include <cstdint>

#include "chapters/08_direct_forward/direct_common.cuh"
#include "chapters/10_packed_sequences/cf_row_heads.cuh"
#include "chapters/10_packed_sequences/sequences.cuh"
#include "common/launch.cuh"

namespace conv1d::ch10 {

// The map in memory: flags [B, V, 2] (a vector's TokenFlags, two words whatever the type) and
// spans [B, V], V vectors a row: a byte a vector, a Span (forward) or a lane's form (backward,
// lane_code). Both null: no map.
struct SpanMap {
  uint32_t* flags = nullptr;
  uint8_t* spans = nullptr;
  int64_t vectors_per_row = 0;
};
constexpr int kMapFlagWords = 2;

// The backward's byte for a lane whose window changes sequence at lo + e: kCutZero + e (e from
// -(W-2) on, so above every Span); kCutZero + kCutNone: none, but the lane holds a row's edge (its
// first vector, or the last inputs that receive the final states' gradient).
constexpr int kCutZero = 8, kCutNone = 32;

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
// The grid's first blocks take the rows' heads (cf_row_heads.cuh), with the ids and states of
// `rows`.
template <class T>
struct RowSpans {
  static constexpr bool kPacked = false, kSpanMap = true, kFewConfigurations = true;
  static constexpr bool kRowHeads = true;
  const uint8_t* spans = nullptr;  // [B, V], or nullptr: no seq_idx
  const uint32_t* flags = nullptr;
  int64_t vectors_per_row = 0;
  PackedRows<T> rows;
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
  __host__ __device__ static int64_t head_threads(int64_t batch, int64_t dim) {
    return 2 * batch * dim;  // two a row: its first vector, its final states
  }
  template <int W>
  __device__ __forceinline__ void row_head(const ch08::DirectArgs<T>& a, int64_t i) const {
    cf_row_head<T, W>(a, rows, i);
  }
};

// The backward's byte of the vector at lo (chapter 09's cf_fused takes its dx and its share of the
// sums, from the inputs W-1 before it to the dz W-1 after it): padding when its own positions all
// are (Span::padding); full when the window is one sequence and no row edge (Span::full); else a
// cut when the window changes sequence once at most and has no padding of its own, else
// Span::mixed (the flags). Scanned left to right, the window's first change after the vector's
// own positions ends the scan: past it, no position is in the vector's sequence, whatever their
// ids (a tap of theirs that reached one of ours would be the cut's to refuse). Inputs before t = 0
// belong to the row's first sequence: its initial states, or zeros that count for nothing.
// (A row's first vector is never padding here: PackedRows::span calls it mixed for its edge, so a
// row that starts in padding takes the flags form there, which writes its dinitial_states, 0.)
template <class T, int W, int kPer>
__device__ uint8_t lane_code(const PackedRows<T>& seqs, int64_t b, int64_t lo, Span own) {
  if (own == Span::padding) return uint8_t(Span::padding);
  const int64_t len = seqs.seqlen;
  const bool edge = lo < W - 1 || seqs.near_final(lo + kPer, W);
  int cut = kCutNone;
  if (seqs.seq_idx) {
    const int32_t* id = seqs.ids(b);
    auto id_at = [&](int64_t p) { return id[p > 0 ? p : 0]; };
    for (int e = -(W - 2); e < kPer + W - 1 && lo + e < len; ++e) {
      if (e >= 0 && e < kPer && id[lo + e] < 0) return uint8_t(Span::mixed);
      if (id_at(lo + e) == id_at(lo + e - 1)) continue;
      if (cut != kCutNone) return uint8_t(Span::mixed);
      cut = e;
      if (e >= kPer) break;
    }
  }
  return !edge && cut == kCutNone ? uint8_t(Span::full) : uint8_t(kCutZero + cut);
}

// A thread a vector: its span, as the packed convolution would decide it (PackedRows::span: a
// row's first vector is mixed, and with the final states' gradient so are those that hold its
// last W-1 inputs; the rest by their ids), and its outputs' flags: every tap for a full vector,
// none for padding, and for a mixed one the bytes the packed kernels compute (vector_flags inline,
// or flags_here position by position where the edges' bits come in). The backward's byte is its
// lane_code.
template <class T, int W, bool kBackward>
__global__ void make_span_map(PackedRows<T> seqs, SpanMap m, int64_t vectors) {
  constexpr int kPer = kPer16<T>;
  allow_next_launch();  // the forward's convolution may start now: it waits before reading the map
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
  m.spans[i] = kBackward ? lane_code<T, W, kPer>(seqs, b, lo, s) : static_cast<uint8_t>(s);
#pragma unroll
  for (int w = 0; w < TokenFlags<kPer>::kWords; ++w) m.flags[i * kMapFlagWords + w] = f.w[w];
}
// [/docs:ch10_span_map]

// [docs:ch10_span_map_bwd]
// The same map, as chapter 09's cf_fused reads it: a lane's byte (lane_code) is its form. The flags
// of a vector and of the W-1 positions after it come from the two vectors' words. The states are
// PackedRows', taken inline.
template <class T>
struct RowSpansBwd : PackedRows<T> {
  static constexpr bool kPacked = true, kSpanMap = true, kFewConfigurations = true;
  const uint8_t* spans = nullptr;  // [B, V]: lane_code
  const uint32_t* flags = nullptr;
  int64_t vectors_per_row = 0;

  template <int kOwn>
  __device__ __forceinline__ uint8_t lane_byte(int64_t b, int64_t lo) const {
    return lo < this->seqlen ? spans[b * vectors_per_row + lo / kOwn] : uint8_t(Span::full);
  }
  __device__ __forceinline__ static ch09::LaneForm lane_form(uint8_t c) {
    using ch09::Form;
    switch (c) {
      case uint8_t(Span::full): return {Form::full, ch09::kNoCut};
      case uint8_t(Span::padding): return {Form::padding, ch09::kNoCut};
      case uint8_t(Span::mixed): return {Form::flags, ch09::kNoCut};
      default: return {Form::cut, c == kCutZero + kCutNone ? ch09::kNoCut : int(c) - kCutZero};
    }
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

// (`backward`: the bytes are lane codes.)
template <class T>
void launch_make_span_map(int64_t batch, int width, const PackedRows<T>& seqs, const SpanMap& m,
                          bool backward, cudaStream_t s = 0) {
  const int64_t vectors = batch * m.vectors_per_row;
  if (vectors == 0) return;
  dispatch_width(width, [&](auto w) {
    constexpr int W = decltype(w)::value;
    launch_or_describe("make_span_map",
                       backward ? make_span_map<T, W, true> : make_span_map<T, W, false>,
                       ceil_div(vectors, int64_t(kSpanMapThreads)), kSpanMapThreads, s, nullptr,
                       seqs, m, vectors);
  });
}

}  // namespace conv1d::ch10
