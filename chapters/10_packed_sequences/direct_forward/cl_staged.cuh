// Chapter 10: chapter 08's staged kernel (chapters/08_direct_forward/cl_staged.cuh) for packed
// sequences, channel-last, taught the sequence policy as its tiled kernel is (cl_tiled.cuh beside
// this): a tile asks for its span once, and a mixed tile then asks batch by batch, in order, so
// that most of its batches take the full form too; a batch of padding writes zeros; a mixed batch
// takes each row by its flags. The edge work is the policy's, at the head of the grid. 16-bit
// types, D a multiple of the 16-byte vector (chapter 08's condition); cl_tiled takes the rest.
#pragma once

#include <stdexcept>
#include <string>

#include "chapters/08_direct_forward/cl_staged.cuh"
#include "chapters/10_packed_sequences/direct_forward/cl_tiled.cuh"
#include "common/async_copy.cuh"

namespace conv1d::ch10 {

using ch08::cl_fetch;
using ch08::cl_staged_takes;
using ch08::kClStagedDepth;
using ch08::kClStagedMinBlocks;
using ch08::kClStagedSmemBytes;

// [docs:ch10_cl_staged]
template <class T, int W, int N, int kRows, class Seqs>
__global__ void __launch_bounds__(kClTiledThreads, kClStagedMinBlocks)
    conv_fwd_cl_staged(DirectArgs<T> a, FastDivmod by_cols, FastDivmod by_tiles,
                       const __grid_constant__ Seqs seqs) {
  static_assert(sizeof(Vec<T, N>) == 16, "a row of a thread's channels is one 16-byte copy");
  static_assert(kRows % kTileBatch == 0, "rows come in batches");
  constexpr int kBatches = kRows / kTileBatch;
  extern __shared__ Bytes16 ring[];  // [kClStagedDepth][kTileBatch][kClTiledThreads]
  int64_t b, d0, t0;
  if (!cl_place<W, N, kRows>(a, by_cols, by_tiles, seqs, b, d0, t0)) return;
  const T* x = a.x + b * a.seqlen * a.dim + d0;  // row t of this batch at x + t * D
  T* out = a.out + b * a.seqlen * a.dim + d0;

  // The first batches on their way before anything else; then, as in cl_tiled, the tile's form,
  // the W-1 rows before the tile and the filters, while they travel.
#pragma unroll
  for (int i = 0; i < kClStagedDepth; ++i) cl_fetch<T, N, kBatches>(a, x, t0, i, ring);
  const Span span = seqs.template span<W, kRows, 0>(b, t0);
  auto batches = seqs.template batches<W, kTileBatch>(b, t0, span);  // (a mixed tile's)
  Vec<T, N> win[W];  // win[k]: the row k - (W-1) steps back from the one being computed
  cl_halo<T, W, N>(a, x, t0, win);
  Filter<W> f[N];
  load_filters<W, N>(a, d0, f);
#pragma unroll 1
  for (int i = 0; i < kBatches; ++i) {
    async_wait<kClStagedDepth - 1>();  // batch i has landed (this thread's copies)
    const int64_t t = t0 + int64_t(i) * kTileBatch;
    const Bytes16* slots = ring + (i % kClStagedDepth) * kTileBatch * kClTiledThreads;
    const Vec<T, N>* rows = reinterpret_cast<const Vec<T, N>*>(slots + threadIdx.x);
    constexpr int kStride = kClTiledThreads;  // (from one row's slot to the next)
    // A mixed tile asks batch by batch: most of its batches take the full form too.
    const Span here = span == Span::mixed ? batches.span(t) : span;
    T* at = out + t * a.dim;   // row t's output; the next rows' by sums
    if (here == Span::full) {  // all but a few batches
#pragma unroll
      for (int r = 0; r < kTileBatch; ++r, at += a.dim)
        ch10::cl_row_at<true, T, W, N, true>(
            a, [&] { return at; }, t + r, f, win, rows[r * kStride], kAllTaps<W>);
    } else if (here == Span::padding) {  // (the rows still pass through the window)
#pragma unroll
      for (int r = 0; r < kTileBatch; ++r, at += a.dim) {
#pragma unroll
        for (int k = 0; k < W - 1; ++k) win[k] = win[k + 1];
        win[W - 1] = rows[r * kStride];
        if (t + r < a.seqlen) store16_unordered(at, zero_vec<T, N>());
      }
    } else {  // a mixed batch: a row's first, or a sequence's start or end
      const auto fl = batches.flags(t);
#pragma unroll
      for (int r = 0; r < kTileBatch; ++r, at += a.dim)
        ch10::cl_row_at<false, T, W, N, true>(
            a, [&] { return at; }, t + r, f, win, rows[r * kStride], fl[r]);
    }
    cl_fetch<T, N, kBatches>(a, x, t0, i + kClStagedDepth, ring);  // into the slots just used
  }
}
// [/docs:ch10_cl_staged]

// For the sequences `seqs`, the configurations ch10::compiled says (16 or 64 rows a thread).
template <class T, class Seqs>
void launch_cl_staged(const DirectArgs<T>& a, int width, int rows, cudaStream_t s,
                      KernelFacts* facts, const Seqs& seqs) {
  if (!cl_staged_takes(a))
    throw std::invalid_argument(
        "conv_fwd_cl_staged: a row of D channels must be 16-byte vectors (D a multiple of " +
        std::to_string(16 / sizeof(T)) + ", tensors 16-byte aligned); cl_tiled takes any D");
  constexpr int N = kPer16<T>;
  const ClGrid g = cl_grid<N>(a, rows, seqs);  // (as cl_tiled's, the edge work's blocks first)
  dispatch_width(width, [&](auto w) {
    constexpr int W = decltype(w)::value;
    void (*kernel)(DirectArgs<T>, FastDivmod, FastDivmod, Seqs) = nullptr;
    auto pick = [&](auto r) {
      constexpr int R = decltype(r)::value;
      if constexpr (compiled<T, Family::cl_staged>(R, N))
        kernel = conv_fwd_cl_staged<T, W, N, R, Seqs>;
    };
    if (!with_rows<16, 32, 64>(rows, pick))
      throw std::invalid_argument("conv_fwd_cl_staged: rows per thread must be 16, 32 or 64");
    if (!kernel)
      throw std::invalid_argument("conv_fwd_cl_staged: chapter 10 does not compile " +
                                  std::to_string(rows) + " rows a thread");
    launch_smem_or_describe("conv_fwd_cl_staged", kernel, g.blocks, kClTiledThreads,
                            kClStagedSmemBytes, s, facts, a, g.by_cols, g.by_tiles, seqs);
  });
}

}  // namespace conv1d::ch10
