// Chapter 10: the span map, for channel-first rows whose length is a multiple of the vector.
// Whether the taps of an output count depends on the ids of its batch row, not on its channel: the
// answer for vector v of batch row b is one answer, not D. So a small kernel (a thread a vector of
// each batch row) works it out once, before the convolution, and the convolution's D channels read
// it instead of each scanning the ids.
//
//   forward   (TapWords, chapter 08's cf_staged) a word a vector: which taps of each of its
//             outputs count (the state's taps of a row's first outputs among them). The staged
//             kernel takes every vector itself, a row's first one and its final states too.
//             Without seq_idx no map is made: every tap of every vector counts.
//   backward  (RowSpansBwd, chapter 09's cf_fused) every vector's flags, the edges' bits among
//             them: the first vector's state taps, and which inputs receive the final states'
//             gradient. The kernel takes the edges itself, inline: with the flags in memory they
//             are a few loads, not the out-of-line calls of PackedRows. A map is made for rows
//             with seq_idx (rows without it take chapter 09's staged kernel, which needs none;
//             the scan below still answers for them, as one sequence a row). Its bytes are the backward's own: how a lane takes its vector, the
//             W-1 positions around it included (chapter 09's LaneForm). Where that window holds one
//             sequence boundary and no padding of its own (most mixed vectors: a row's 8 documents
//             make 8 boundaries), the byte says where the boundary lies, and the kernel takes the
//             cut form: a comparison a tap, no flags.
#pragma once

#include <cstddef>
#include <cstdint>

#include "chapters/08_direct_forward/cf_staged.cuh"
#include "chapters/08_direct_forward/direct_common.cuh"
#include "chapters/10_packed_sequences/sequences.cuh"
#include "common/launch.cuh"

namespace conv1d::ch10 {

// The backward's map in memory: flags [B, V, 2] (a vector's TokenFlags, two words whatever the
// type) and spans [B, V], V vectors a row: a byte a vector, a lane's form (lane_code). Both null:
// no map. (The forward's, TapWords below, is a word a vector in the same workspace.)
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

// [docs:ch10_tap_words]
// The forward's map (chapter 08's cf_staged): vector v of batch row b (its outputs lo .. lo+kPer-1,
// lo = v * kPer) has words[b * V + v], bit o*W + k set when tap k of output lo + o counts, the
// taps that read the initial states included (PackedRows' flags, ch08::taps_with_state). The
// states and final states are PackedRows'.
template <class T>
struct TapWords {
  static constexpr bool kMap = true;
  const uint32_t* words = nullptr;  // [B, V], or nullptr: no seq_idx, every tap counts
  int64_t vectors_per_row = 0;
  PackedRows<T> rows;
  __device__ __forceinline__ uint32_t word(int64_t b, int64_t v) const {
    return words ? words[b * vectors_per_row + v] : ~0u;
  }
  template <int W>
  __device__ __forceinline__ const T* state(int64_t row) const {
    return rows.initial_states ? rows.initial_states + row * (W - 1) : nullptr;
  }
  template <int W>
  __device__ __forceinline__ T* final_states(int64_t row) const {
    return rows.final_states ? rows.final_states + row * (W - 1) : nullptr;
  }
};

// A thread a vector of a batch row: its word, from the outputs' flags.
template <class T, int W>
__global__ void make_tap_words(PackedRows<T> seqs, uint32_t* words, int64_t vectors_per_row,
                               int64_t vectors) {
  constexpr int kPer = kPer16<T>;
  static_assert(kPer * W <= 32, "a vector's taps fit in a word");
  allow_next_launch();  // the convolution may start now: it waits before reading the words
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;  // b * V + v
  if (i >= vectors) return;
  const int64_t b = i / vectors_per_row, lo = (i - b * vectors_per_row) * kPer;
  uint32_t w = 0;
#pragma unroll
  for (int o = 0; o < kPer; ++o)
    w |= ch08::taps_with_state<W>(seqs.template flags_here<W>(b, lo + o)) << (o * W);
  words[i] = w;
}
// [/docs:ch10_tap_words]

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

// The backward's map, a thread a vector: its span, as the packed backward would decide it
// (PackedRows::span: a row's first vector is mixed, and with the final states' gradient so are
// those that hold its last W-1 inputs; the rest by their ids), its lane_code, and its outputs'
// flags: every tap for a full vector, none for padding, and for a mixed one the bytes the packed
// kernels compute (vector_flags inline, or flags_here position by position where the edges' bits
// come in).
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
  m.spans[i] = lane_code<T, W, kPer>(seqs, b, lo, s);
#pragma unroll
  for (int w = 0; w < TokenFlags<kPer>::kWords; ++w) m.flags[i * kMapFlagWords + w] = f.w[w];
}

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

template <class T>
void launch_make_span_map(int64_t batch, int width, const PackedRows<T>& seqs, const SpanMap& m,
                          cudaStream_t s = 0) {
  const int64_t vectors = batch * m.vectors_per_row;
  if (vectors == 0) return;
  dispatch_width(width, [&](auto w) {
    constexpr int W = decltype(w)::value;
    launch_or_describe("make_span_map", make_span_map<T, W>,
                       ceil_div(vectors, int64_t(kSpanMapThreads)), kSpanMapThreads, s, nullptr,
                       seqs, m, vectors);
  });
}

template <class T>
void launch_make_tap_words(int64_t batch, int width, const TapWords<T>& t, cudaStream_t s = 0) {
  const int64_t vectors = batch * t.vectors_per_row;
  if (vectors == 0 || !t.words) return;
  dispatch_width(width, [&](auto w) {
    constexpr int W = decltype(w)::value;
    launch_or_describe("make_tap_words", make_tap_words<T, W>,
                       ceil_div(vectors, int64_t(kSpanMapThreads)), kSpanMapThreads, s, nullptr,
                       t.rows, const_cast<uint32_t*>(t.words), t.vectors_per_row, vectors);
  });
}

}  // namespace conv1d::ch10
