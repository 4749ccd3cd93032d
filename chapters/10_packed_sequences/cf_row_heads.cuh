// Chapter 10: what the convolution leaves when it reads a span map (span_map.cuh): each row's first
// vector, whose taps may reach into the initial states, and the row's final states. Two threads a
// row (b, d): one computes the first vector's outputs, each by its own flags (its kEdge taps read
// the states), the other writes the final states. They are the first blocks of the convolution's
// own grid (RowSpans::row_head, chapter 08's cf_chunked), so their loads, a chain of dependent ones
// a thread, overlap the convolution's streaming instead of following it. It is the same work as
// cf_row_edges' by the same arithmetic (so a row computed in chunks, or without the map, gives the
// same bits), but the vector loaded whole and its states and final states apart.
//
// It reads x, the ids and the states, none of which the convolution writes, and writes outputs the
// convolution's other threads do not.
#pragma once

#include "chapters/08_direct_forward/direct_common.cuh"
#include "chapters/10_packed_sequences/sequences.cuh"

namespace conv1d::ch10 {

// [docs:ch10_cf_row_heads]
// Thread i of the rows' heads, i < 2 B D: the first vector of row i (b * D + d; a warp's lanes:
// channels of one batch row), or, from i = B D on, the final states of row i - B D.
template <class T, int W>
__device__ __forceinline__ void cf_row_head(const ch08::DirectArgs<T>& a,
                                            const PackedRows<T>& seqs, int64_t i) {
  constexpr int kPer = kPer16<T>;
  static_assert(kPer >= W - 1, "only a row's first vector reaches before t = 0");
  const int64_t rows = a.batch * a.dim;
  const int64_t row = i % rows;
  if (i >= 2 * rows) return;
  const int64_t b = row / a.dim, d = row - b * a.dim;
  const T* x = a.x + row * a.seqlen;
  if (i >= rows) {  // the second thread of the row
    seqs.template write_final<W>(x, 1, b, d);
    return;
  }

  // The window of the first vector: before t = 0 the initial states, whose taps count only for an
  // edge output (the flags say which).
  const Filter<W> f = ch08::load_filter<W>(a, d);
  const Vec<T, kPer> cur = *reinterpret_cast<const Vec<T, kPer>*>(x);
  Vec<T, kPer> prev = ch08::zero_vec<T, kPer>();
  if (const T* st = seqs.state(b, d, W)) {
#pragma unroll
    for (int q = 0; q < W - 1; ++q) prev.v[kPer - (W - 1) + q] = st[q];
  }
  const ch08::CfWindow<T, W> win = ch08::cf_window<T, W>(prev, cur);
  float y[kPer];
#pragma unroll
  for (int e = 0; e < kPer; ++e) {
    const unsigned fl = seqs.template flags_here<W>(b, e);
    y[e] = ch08::conv_output<W, true, true>(f, &win.v[e], ch08::taps_with_state<W>(fl), a.silu);
  }
  *reinterpret_cast<Vec<T, kPer>*>(a.out + row * a.seqlen) = ch08::from_floats<T, kPer>(y);
}
// [/docs:ch10_cf_row_heads]

}  // namespace conv1d::ch10
