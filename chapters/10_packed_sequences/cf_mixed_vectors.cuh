// Chapter 10: the vectors the convolution leaves when it reads a span map (span_map.cuh): each
// row's first vector, whose taps reach into the initial states, and every vector that a sequence
// boundary crosses. make_span_map listed them per batch row; here kMixedThreadsPerRow threads of
// every row (b, d) share row b's list, a 16-byte vector each at a time, and the first of them
// writes the row's final states. It replaces cf_row_edges where the map is used: the same outputs
// by the same arithmetic (so a row computed in chunks, or without the map, gives the same bits),
// but whole vectors loaded at once, several threads a row, and no call out of line.
//
// It reads x, the ids, the states and the list, none of which the convolution writes, and writes
// outputs the convolution does not: it may run before the convolution or after it.
#pragma once

#include "chapters/08_direct_forward/direct_common.cuh"
#include "chapters/10_packed_sequences/sequences.cuh"
#include "chapters/10_packed_sequences/span_map.cuh"
#include "common/launch.cuh"

namespace conv1d::ch10 {

// Threads a row: a row of 8 documents has some 8 to 16 mixed vectors.
constexpr int kMixedThreadsPerRow = 4;

// [docs:ch10_cf_mixed_vectors]
template <class T, int W>
__global__ void cf_mixed_vectors(ch08::DirectArgs<T> a, PackedRows<T> seqs, SpanMap m) {
  constexpr int kPer = kPer16<T>;
  static_assert(kPer >= W - 1, "only a row's first vector reaches before t = 0");
  const int64_t rows = a.batch * a.dim;
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  const int64_t row = i % rows, j = i / rows;  // row b * D + d; the warp's lanes: channels of one b
  if (j >= kMixedThreadsPerRow) return;
  const int64_t b = row / a.dim, d = row - b * a.dim;
  const int count = m.counts ? m.counts[b] : 1;  // no map: only the first vector
  const T* x = a.x + row * a.seqlen;
  T* out = a.out + row * a.seqlen;
  const Filter<W> f = ch08::load_filter<W>(a, d);

  for (int k = static_cast<int>(j); k < count; k += kMixedThreadsPerRow) {
    const int64_t t0 = (m.list ? m.list[b * m.vectors_per_row + k] : 0) * int64_t(kPer);
    // The window: the vector and the W-1 inputs before it; before t = 0, the initial states (whose
    // taps count only for an edge output: the flags say which).
    const Vec<T, kPer> cur = *reinterpret_cast<const Vec<T, kPer>*>(x + t0);
    Vec<T, kPer> prev = ch08::zero_vec<T, kPer>();
    if (t0 > 0) {
      prev = *reinterpret_cast<const Vec<T, kPer>*>(x + t0 - kPer);
    } else if (const T* st = seqs.state(b, d, W)) {
#pragma unroll
      for (int q = 0; q < W - 1; ++q) prev.v[kPer - (W - 1) + q] = st[q];
    }
    const ch08::CfWindow<T, W> win = ch08::cf_window<T, W>(prev, cur);
    float y[kPer];
#pragma unroll
    for (int e = 0; e < kPer; ++e) {
      const unsigned fl = seqs.template flags_here<W>(b, t0 + e);
      y[e] = ch08::conv_output<W, true, true>(f, &win.v[e], ch08::taps_with_state<W>(fl), a.silu);
    }
    *reinterpret_cast<Vec<T, kPer>*>(out + t0) = ch08::from_floats<T, kPer>(y);
  }
  if (j == 0) seqs.template write_final<W>(x, 1, b, d);
}
// [/docs:ch10_cf_mixed_vectors]

constexpr int kMixedThreads = 128;

template <class T>
void launch_cf_mixed_vectors(const ch08::DirectArgs<T>& a, int width, const PackedRows<T>& seqs,
                             const SpanMap& m, cudaStream_t s = 0) {
  const int64_t threads = a.batch * a.dim * kMixedThreadsPerRow;
  if (threads == 0) return;
  dispatch_width(width, [&](auto w) {
    launch_or_describe("cf_mixed_vectors", cf_mixed_vectors<T, decltype(w)::value>,
                       ceil_div(threads, int64_t(kMixedThreads)), kMixedThreads, s, nullptr, a,
                       seqs, m);
  });
}

}  // namespace conv1d::ch10
