// Chapter 10: the channel-first rows form's second kernel where the rows' length is not a multiple
// of the vector. The chunked kernel (direct_forward/cf_chunked.cuh), given packed rows, leaves two
// kinds of vector alone (cf_left_to_policy): a row's first vector, whose taps reach into the
// initial states, and a vector across the end of a row. Their work (the state, the final states,
// each element's own flags and filter) is rare (one vector in L/8, bf16) but heavy, and inside the
// convolution it cost every thread of it registers even where it never ran: twice chapter 08's,
// half the warps a multiprocessor holds, 2.8 times the time (docs/10_packed_sequences.md). Here
// it is a kernel of its own, a thread per row (b, d), which computes exactly those outputs and
// writes the row's final states.
//
// It reads x, the ids and the states, none of which the convolution writes, and it writes outputs
// the convolution does not: the two kernels could run in either order.
#pragma once

#include "chapters/10_packed_sequences/direct_forward/cf_chunked.cuh"
#include "chapters/10_packed_sequences/sequences.cuh"
#include "common/launch.cuh"

namespace conv1d::ch10 {

// Is output t of row `row` (flat index row * L + t) in a vector that the convolution left to the
// policy? (A vector that begins in the row before crosses rows.)
template <int W, int kPer>
__host__ __device__ inline bool left_by_convolution(int64_t row, int64_t t, int64_t seqlen) {
  const int64_t e = row * seqlen + t;
  const int64_t t0 = e - e % kPer - row * seqlen;  // where its vector begins, in this row
  return t0 < 0 || cf_left_to_policy<W, kPer>(t0, seqlen);
}

// The outputs of a row that the convolution left: its head [0, head), up to the first vector the
// convolution kept, and its tail [tail, L), after the last one (tail = head: the whole row).
struct RowEdges {
  int64_t head, tail;
};
template <int W, int kPer>
__host__ __device__ inline RowEdges row_edges(int64_t row, int64_t seqlen) {
  RowEdges e{0, seqlen};
  while (e.head < seqlen && left_by_convolution<W, kPer>(row, e.head, seqlen)) ++e.head;
  while (e.tail > e.head && left_by_convolution<W, kPer>(row, e.tail - 1, seqlen)) --e.tail;
  return e;
}

// [docs:ch10_cf_row_edges]
template <class T, int W>
__global__ void cf_row_edges(DirectArgs<T> a, PackedRows<T> seqs) {
  constexpr int kPer = kPer16<T>;
  const int64_t row = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;  // b * D + d
  if (row >= a.batch * a.dim) return;
  const int64_t b = row / a.dim, d = row - b * a.dim, len = a.seqlen;
  const T* x = a.x + row * len;
  const Filter<W> f = load_filter<W>(a, d);

  // Output t by its flags: the taps in t's sequence, and for the first W-1 outputs of a row that
  // continues its initial states, the states (kEdge).
  auto output = [&](int64_t t) {
    const unsigned fl = seqs.template flags<W>(b, t);
    a.out[row * len + t] =
        from_float<T>(seqs.template output_from_memory<W>(x, 1, f, b, d, t, fl, a.silu));
  };
  const RowEdges e = row_edges<W, kPer>(row, len);
  for (int64_t t = 0; t < e.head; ++t) output(t);
  for (int64_t t = e.tail; t < len; ++t) output(t);
  seqs.template write_final<W>(x, 1, b, d);
}
// [/docs:ch10_cf_row_edges]

constexpr int kRowEdgesThreads = 128;

template <class T>
void launch_cf_row_edges(const DirectArgs<T>& a, int width, const PackedRows<T>& seqs,
                         cudaStream_t s = 0) {
  const int64_t rows = a.batch * a.dim;
  if (rows == 0) return;
  dispatch_width(width, [&](auto w) {
    launch_or_describe("cf_row_edges", cf_row_edges<T, decltype(w)::value>,
                       ceil_div(rows, int64_t(kRowEdgesThreads)), kRowEdgesThreads, s, nullptr, a,
                       seqs);
  });
}

}  // namespace conv1d::ch10
