// Chapter 10: what the convolution leaves when it reads a span map (span_map.cuh): each row's first
// vector, whose taps may reach into the initial states, and the row's final states. Two threads a
// row (b, d): one computes the first vector's outputs, each by its own flags (its kEdge taps read
// the states), the other writes the final states. It replaces cf_row_edges where the map is used:
// the same outputs by the same arithmetic (so a row computed in chunks, or without the map, gives
// the same bits), but the vector loaded whole and its states and final states apart.
//
// It reads x, the ids and the states, none of which the convolution writes, and writes outputs the
// convolution does not: it may run before the convolution or after it.
#pragma once

#include "chapters/08_direct_forward/direct_common.cuh"
#include "chapters/10_packed_sequences/sequences.cuh"
#include "common/launch.cuh"

namespace conv1d::ch10 {

// [docs:ch10_cf_row_heads]
template <class T, int W>
__global__ void cf_row_heads(ch08::DirectArgs<T> a, PackedRows<T> seqs) {
  constexpr int kPer = kPer16<T>;
  static_assert(kPer >= W - 1, "only a row's first vector reaches before t = 0");
  const int64_t rows = a.batch * a.dim;
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  const int64_t row = i % rows;  // b * D + d; a warp's lanes: channels of one batch row
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

constexpr int kRowHeadsThreads = 128;

template <class T>
void launch_cf_row_heads(const ch08::DirectArgs<T>& a, int width, const PackedRows<T>& seqs,
                         cudaStream_t s = 0) {
  const int64_t threads = 2 * a.batch * a.dim;
  if (threads == 0) return;
  dispatch_width(width, [&](auto w) {
    launch_or_describe("cf_row_heads", cf_row_heads<T, decltype(w)::value>,
                       ceil_div(threads, int64_t(kRowHeadsThreads)), kRowHeadsThreads, s, nullptr,
                       a, seqs);
  });
}

}  // namespace conv1d::ch10
