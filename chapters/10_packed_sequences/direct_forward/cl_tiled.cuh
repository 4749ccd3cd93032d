// Chapter 10: chapter 08's tiled kernel (chapters/08_direct_forward/cl_tiled.cuh) for packed
// sequences, channel-last (rows of several sequences, or a variable-length batch), taught the
// sequence policy. A tile asks the policy once for its span: full tiles (all but a few) take
// chapter 08's walk, a tile of padding writes zeros, and a mixed one walks with the flags of its
// rows, which it keeps in shared memory. The first W-1 outputs of a sequence that starts from a
// state, and the final states, are the policy's edge work, done by threads of their own at the
// head of the grid. This kernel takes fp32 and the D that are not whole 16-byte vectors; the
// staged kernel (cl_staged.cuh beside this) takes the rest.
#pragma once

#include <algorithm>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "chapters/08_direct_forward/cl_tiled.cuh"
#include "chapters/10_packed_sequences/policy.cuh"
#include "common/launch.cuh"

namespace conv1d::ch10 {

using ch08::cl_halo;
using ch08::ClGrid;
using ch08::dispatch_access;
using ch08::kClTiledThreads;
using ch08::kTileBatch;
using ch08::load_filters;

// [docs:ch10_cl_tiled]
// Row t enters the window; its output, at where() (row t of the output), unless the flags `m`
// say it is not this kernel's (an edge output, which the sequence policy writes) or t is past the
// end; padding: no tap, output 0. kFull: every tap counts. kStore16 (cl_staged): the output
// written by one 16-byte store instruction. (`where` is asked only for an output that is written.)
template <bool kFull, class T, int W, int N, bool kStore16 = false, class Where>
__device__ __forceinline__ void cl_row_at(const DirectArgs<T>& a, Where where, int64_t t,
                                          const Filter<W> (&f)[N], Vec<T, N> (&win)[W],
                                          const Vec<T, N>& row, unsigned m) {
#pragma unroll
  for (int k = 0; k < W - 1; ++k) win[k] = win[k + 1];
  win[W - 1] = row;
  if (t < a.seqlen && !(m & kEdge)) {
    const Vec<T, N> y = cl_outputs_or_padding<T, W, N, kFull>(f, win, m & kAllTaps<W>, a.silu);
    if constexpr (kStore16)
      store16_unordered(where(), y);
    else
      *reinterpret_cast<Vec<T, N>*>(where()) = y;
  }
}
// The same with row t's address found from `out` (row 0).
template <bool kFull, class T, int W, int N, bool kStore16 = false>
__device__ __forceinline__ void cl_row(const DirectArgs<T>& a, T* out, int64_t t,
                                       const Filter<W> (&f)[N], Vec<T, N> (&win)[W],
                                       const Vec<T, N>& row, unsigned m) {
  ch10::cl_row_at<kFull, T, W, N, kStore16>(
      a, [&] { return out + t * a.dim; }, t, f, win, row, m);
}

// The rows t0 .. t0 + kRows - 1 of one tile, the window holding the W-1 rows before them. kFull:
// every output of the tile counts all its taps; otherwise `fl` says which taps count.
template <bool kFull, class T, int W, int N, int kRows, class Flags>
__device__ __forceinline__ void cl_tile(const DirectArgs<T>& a, const T* x, T* out, int64_t t0,
                                        const Filter<W> (&f)[N], Vec<T, N> (&win)[W], Flags& fl) {
#pragma unroll
  for (int r0 = 0; r0 < kRows; r0 += kTileBatch) {
    if (t0 + r0 <
        a.seqlen) {  // (guards, not breaks: the loops unroll fully, rows[] stays in registers)
      Vec<T, N> rows[kTileBatch];
#pragma unroll
      for (int r = 0; r < kTileBatch; ++r)
        rows[r] = t0 + r0 + r < a.seqlen
                      ? *reinterpret_cast<const Vec<T, N>*>(x + (t0 + r0 + r) * a.dim)
                      : zero_vec<T, N>();
#pragma unroll
      for (int r = 0; r < kTileBatch; ++r)
        ch10::cl_row<kFull, T, W, N>(a, out, t0 + r0 + r, f, win, rows[r],
                                     kFull ? kAllTaps<W> : fl.next());
    }
  }
}

// Where a thread's tile is (blocks of kClTiledThreads): batch row b, channels d0 .. d0 + N - 1,
// rows t0 .. t0 + kRows - 1. The grid's first blocks do the sequences' edge work instead: false,
// nothing more.
template <int W, int N, int kRows, class T, class Seqs>
__device__ __forceinline__ bool cl_place(const DirectArgs<T>& a, const FastDivmod& by_cols,
                                         const FastDivmod& by_tiles, const Seqs& seqs, int64_t& b,
                                         int64_t& d0, int64_t& t0) {
  int64_t item = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;  // (b * tiles + tile) * D/N + col
  const int64_t edge_items = seqs.edge_units(a.batch) * by_cols.divisor();
  const int64_t edge_blocks = ceil_div(edge_items, kClTiledThreads);
  if (blockIdx.x < edge_blocks) {
    if (item < edge_items) {
      const int64_t unit = by_cols.div(item);
      seqs.template edge_work<W, N>(a, unit, (item - unit * by_cols.divisor()) * N);
    }
    return false;
  }
  item -= edge_blocks * kClTiledThreads;
  const int64_t bt = by_cols.div(item);
  b = by_tiles.div(bt);
  if (b >= a.batch) return false;
  d0 = (item - bt * by_cols.divisor()) * N;
  t0 = (bt - b * by_tiles.divisor()) * kRows;
  return true;
}

// Held to the occupancy of chapter 08's kernel (kPackedMinBlocks). The policy stays where the
// launch put it (`__grid_constant__`): its out-of-line calls take its address.
template <class T, int W, int N, int kRows, class Seqs>
__global__ void __launch_bounds__(kClTiledThreads, kPackedMinBlocks)
    conv_fwd_cl_tiled(DirectArgs<T> a, FastDivmod by_cols, FastDivmod by_tiles,
                      const __grid_constant__ Seqs seqs) {
  static_assert(kRows % kTileBatch == 0, "rows come in batches");
  int64_t b, d0, t0;
  if (!cl_place<W, N, kRows>(a, by_cols, by_tiles, seqs, b, d0, t0)) return;
  const T* x = a.x + b * a.seqlen * a.dim + d0;  // row t of this batch at x + t * D
  T* out = a.out + b * a.seqlen * a.dim + d0;

  // Every row of the tile asked for at once, into the L2, before anything waits (prefetch_l2
  // holds no register; the loads below bring a batch at a time). A warp's row is lines of 128
  // bytes, kLanesPerLine lanes each; each lane asks for its own line in every kLanesPerLine-th
  // row, so the warp asks for each line of the tile once. In 16-bit types only: in fp32 it cost
  // time.
  if constexpr (sizeof(T) < 4) {
    constexpr int kLanesPerLine = 128 / int(sizeof(Vec<T, N>));
    const int lane = threadIdx.x % kLanesPerLine;
#pragma unroll
    for (int r = 0; r < kRows; r += kLanesPerLine)
      if (r + lane < kRows && t0 + r + lane < a.seqlen) prefetch_l2(x + (t0 + r + lane) * a.dim);
  }
  // The tile's form first (its loads overlap the ones below), then the W-1 rows before the tile
  // and the filters. The form is decided once per tile, not per row: a test between a batch's loads
  // and their use lets the compiler place loads after it, and then fewer rows are in flight.
  const Span span = seqs.template span<W, kRows, 0>(b, t0);
  Vec<T, N> win[W];  // win[k]: the row k - (W-1) steps back from the one being computed
  cl_halo<T, W, N>(a, x, t0, win);
  Filter<W> f[N];
  load_filters<W, N>(a, d0, f);
  if (span == Span::full) {  // all but a few tiles
    AllTaps<W> all;
    cl_tile<true, T, W, N, kRows>(a, x, out, t0, f, win, all);
  } else if (span == Span::padding) {
#pragma unroll
    for (int r = 0; r < kRows; ++r)
      if (t0 + r < a.seqlen)
        *reinterpret_cast<Vec<T, N>*>(out + (t0 + r) * a.dim) = zero_vec<T, N>();
  } else {  // the flags of a mixed tile from one call, kept in shared memory
    constexpr int kWords = TokenFlags<kRows>::kWords + 1;  // (odd: no bank conflicts)
    __shared__ uint32_t flag_rows[kClTiledThreads][kWords];
    const TokenFlags<kRows> fl = seqs.template flags_of<W, kRows>(b, t0);
#pragma unroll
    for (int i = 0; i + 1 < kWords; ++i) flag_rows[threadIdx.x][i] = fl.w[i];
    SharedFlags cursor{flag_rows[threadIdx.x]};
    cl_tile<false, T, W, N, kRows>(a, x, out, t0, f, win, cursor);
  }
}
// [/docs:ch10_cl_tiled]

// The grid of a channel-last walk (cl_tiled, cl_staged): before chapter 08's (a thread per tile of
// `rows` time steps and column of N channels), a thread per edge unit and column. (Sequences of no
// tokens at all still have states to write, in the edge blocks; the tiles' divisor wants at least
// one tile, which has nothing to do.)
template <int N, class T, class Seqs>
ClGrid cl_grid(const DirectArgs<T>& a, int rows, const Seqs& seqs) {
  if (rows <= 0) throw std::invalid_argument("channel-last kernels: rows per thread must be > 0");
  const int64_t columns = a.dim / N, tiles = std::max<int64_t>(1, ceil_div(a.seqlen, rows));
  const int64_t blocks = ceil_div(a.batch * tiles * columns, kClTiledThreads) +
                         ceil_div(seqs.edge_units(a.batch) * columns, kClTiledThreads);
  return {FastDivmod(columns), FastDivmod(tiles), blocks};
}

// For the sequences `seqs`, the configurations ch10::compiled says.
template <class T, class Seqs>
void launch_cl_tiled(const DirectArgs<T>& a, int width, int rows, int max_access_bytes,
                     cudaStream_t s, KernelFacts* facts, const Seqs& seqs) {
  dispatch_access(a, max_access_bytes, [&](auto access) {
    constexpr int N = decltype(access)::value;
    const ClGrid g = cl_grid<N>(a, rows, seqs);
    dispatch_width(width, [&](auto w) {
      constexpr int W = decltype(w)::value;
      void (*kernel)(DirectArgs<T>, FastDivmod, FastDivmod, Seqs) = nullptr;
      auto pick = [&](auto r) {
        constexpr int R = decltype(r)::value;
        if constexpr (compiled<T, Family::cl_fwd>(R, N))
          kernel = conv_fwd_cl_tiled<T, W, N, R, Seqs>;
      };
      if (!with_rows<8, 16, 32>(rows, pick))
        throw std::invalid_argument("conv_fwd_cl_tiled: rows per thread must be 8, 16 or 32");
      if (!kernel)
        throw std::invalid_argument("conv_fwd_cl_tiled: chapter 10 does not compile " +
                                    std::to_string(rows) + " rows of " + std::to_string(N) +
                                    " channels");
      launch_or_describe("conv_fwd_cl_tiled", kernel, g.blocks, kClTiledThreads, s, facts, a,
                         g.by_cols, g.by_tiles, seqs);
    });
  });
}

}  // namespace conv1d::ch10
