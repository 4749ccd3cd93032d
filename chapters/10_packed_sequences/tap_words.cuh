// Chapter 10: the words of taps, for channel-first rows whose length is a multiple of the vector.
// Whether the taps of an output count depends on the ids of its batch row, not on its channel: the
// answer for vector v of batch row b is one answer, not D. So a small kernel (a thread a vector of
// each batch row) works it out once, before the convolution, and the convolution's D channels read
// it instead of each scanning the ids: a word a vector, which taps of each of its outputs count
// (the state's taps of a row's first outputs among them). Chapter 08's staged kernel, extended
// (direct_forward/cf_staged.cuh), takes every vector with it, a row's first one and its final
// states too; chapter 09's staged backward, extended (direct_backward/cf_staged.cuh), reads the
// same words. Without seq_idx no words are made: every tap of every vector counts.
#pragma once

#include <cstddef>
#include <cstdint>

#include "chapters/10_packed_sequences/sequences.cuh"
#include "common/launch.cuh"

namespace conv1d::ch10 {

// The workspace the words of B rows of L positions need, for any storage type (the most vectors a
// row: 4 elements a vector, fp32).
inline size_t tap_words_bytes(int64_t batch, int64_t seqlen) {
  return size_t(batch) * size_t(ceil_div(seqlen, int64_t(4))) * sizeof(uint32_t);
}

// [docs:ch10_tap_words]
// The forward's view (direct_forward/cf_staged.cuh): vector v of batch row b (its outputs lo ..
// lo+kPer-1, lo = v * kPer) has words[b * V + v], bit o*W + k set when tap k of output lo + o
// counts, the taps that read the initial states included (PackedRows' flags, taps_with_state).
// The states and final states are PackedRows'.
template <class T>
struct TapWords {
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
    w |= taps_with_state<W>(seqs.template flags_here<W>(b, lo + o)) << (o * W);
  words[i] = w;
}
// [/docs:ch10_tap_words]

constexpr int kTapWordsThreads = 256;

template <class T>
void launch_make_tap_words(int64_t batch, int width, const TapWords<T>& t, cudaStream_t s = 0) {
  const int64_t vectors = batch * t.vectors_per_row;
  if (vectors == 0 || !t.words) return;
  dispatch_width(width, [&](auto w) {
    constexpr int W = decltype(w)::value;
    launch_or_describe("make_tap_words", make_tap_words<T, W>,
                       ceil_div(vectors, int64_t(kTapWordsThreads)), kTapWordsThreads, s, nullptr,
                       t.rows, const_cast<uint32_t*>(t.words), t.vectors_per_row, vectors);
  });
}

}  // namespace conv1d::ch10
