// Chapter 08, channel-last step 3 (`tiled`): a thread keeps its N channels and walks down kRows
// time steps. The W-1 rows before its first are the tile's halo (loaded once); after that each row
// is loaded once, used by the W outputs that need it from a window in registers, and dropped. So x
// is read (kRows + W - 1) / kRows times instead of W times, the filters are loaded once per kRows
// rows instead of once per row, and rows are loaded kBatch at a time before any is used, so a
// thread has kBatch accesses in flight. The tile is coalesced along D (neighbouring threads,
// neighbouring channels) and its halo runs along L.
#pragma once

#include <stdexcept>

#include "chapters/08_direct_forward/cl_vector.cuh"
#include "common/launch.cuh"

namespace conv1d::ch08 {

constexpr int kTileBatch = 8;         // rows loaded together, before any of them is used
constexpr int kClTiledThreads = 128;  // a block

// [docs:ch08_cl_tiled]
// Row t enters the window; its output, at where() (row t of the output), unless t is past the end.
// kFull: every tap counts; otherwise `valid` says which (those at or after t = 0). kStore16
// (cl_staged): the output written by one 16-byte store instruction (store16_unordered; assigned,
// nvcc wrote these conditional stores as four 4-byte ones). (`where` is asked only for an output
// that is written: cl_staged steps its address by a sum a row, and cl_row's product stays inside
// the test, where cl_tiled ran 1.3-1.4 % faster than with it ahead.)
template <bool kFull, class T, int W, int N, bool kStore16 = false, class Where>
__device__ __forceinline__ void cl_row_at(const DirectArgs<T>& a, Where where, int64_t t,
                                          const Filter<W> (&f)[N], Vec<T, N> (&win)[W],
                                          const Vec<T, N>& row, unsigned valid) {
#pragma unroll
  for (int k = 0; k < W - 1; ++k) win[k] = win[k + 1];
  win[W - 1] = row;
  if (t < a.seqlen) {
    const Vec<T, N> y = cl_outputs<T, W, N, kFull>(f, win, valid, a.silu);
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
                                       const Vec<T, N>& row, unsigned valid) {
  cl_row_at<kFull, T, W, N, kStore16>(
      a, [&] { return out + t * a.dim; }, t, f, win, row, valid);
}

// The rows t0 .. t0 + kRows - 1 of one tile, the window holding the W-1 rows before them. kFull:
// every output of the tile has all its taps at or after t = 0.
template <bool kFull, class T, int W, int N, int kRows>
__device__ __forceinline__ void cl_tile(const DirectArgs<T>& a, const T* x, T* out, int64_t t0,
                                        const Filter<W> (&f)[N], Vec<T, N> (&win)[W]) {
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
      for (int r = 0; r < kTileBatch; ++r) {
        const int64_t t = t0 + r0 + r;
        cl_row<kFull, T, W, N>(a, out, t, f, win, rows[r], kFull ? kAllTaps<W> : taps_inside<W>(t));
      }
    }
  }
}

// The W-1 rows before a tile (zeros before t = 0) into win[1..W-1].
template <class T, int W, int N>
__device__ __forceinline__ void cl_halo(const DirectArgs<T>& a, const T* x, int64_t t0,
                                        Vec<T, N> (&win)[W]) {
#pragma unroll
  for (int k = 0; k < W - 1; ++k) {
    const int64_t t = t0 - (W - 1) + k;
    win[k + 1] = t >= 0 ? *reinterpret_cast<const Vec<T, N>*>(x + t * a.dim) : zero_vec<T, N>();
  }
}

// Where a thread's tile is (blocks of kClTiledThreads): batch row b, channels d0 .. d0 + N - 1,
// rows t0 .. t0 + kRows - 1; false past the last tile.
template <int W, int N, int kRows, class T>
__device__ __forceinline__ bool cl_place(const DirectArgs<T>& a, const FastDivmod& by_cols,
                                         const FastDivmod& by_tiles, int64_t& b, int64_t& d0,
                                         int64_t& t0) {
  const int64_t item =
      blockIdx.x * int64_t(blockDim.x) + threadIdx.x;  // (b * tiles + tile) * D/N + col
  const int64_t bt = by_cols.div(item);
  b = by_tiles.div(bt);
  if (b >= a.batch) return false;
  d0 = (item - bt * by_cols.divisor()) * N;
  t0 = (bt - b * by_tiles.divisor()) * kRows;
  return true;
}

// [docs:ch08_cl_tiled_kernel]
template <class T, int W, int N, int kRows>
__global__ void conv_fwd_cl_tiled(DirectArgs<T> a, FastDivmod by_cols, FastDivmod by_tiles) {
  static_assert(kRows % kTileBatch == 0, "rows come in batches");
  int64_t b, d0, t0;
  if (!cl_place<W, N, kRows>(a, by_cols, by_tiles, b, d0, t0)) return;
  const T* x = a.x + b * a.seqlen * a.dim + d0;  // row t of this batch at x + t * D
  T* out = a.out + b * a.seqlen * a.dim + d0;

  Vec<T, N> win[W];  // win[k]: the row k - (W-1) steps back from the one being computed
  cl_halo<T, W, N>(a, x, t0, win);
  Filter<W> f[N];
  load_filters<W, N>(a, d0, f);
  // Which form the outputs take is decided once per tile, not per row: a test between a batch's
  // loads and their use lets the compiler place loads after it, and then fewer rows are in flight.
  if (t0 >= W - 1)
    cl_tile<true, T, W, N, kRows>(a, x, out, t0, f, win);  // every tile but a row's first
  else
    cl_tile<false, T, W, N, kRows>(a, x, out, t0, f, win);
}
// [/docs:ch08_cl_tiled_kernel]
// [/docs:ch08_cl_tiled]

// Rows per thread: the most (of `max_rows`, 16, 8) that still give every multiprocessor `kFill`
// threads' worth of items, so short sequences and narrow D still fill the GPU; `rows` > 0 asks for
// one. The chapter passes max_rows 16 for 16-bit types: at 8x4096x4096 bf16, 16 rows reached 75 %
// of the copy ceiling against 66 % with 32 (docs/08_direct_forward.md); in fp32 32 rows: 95 %.
constexpr int64_t kFill = 2048;
inline int cl_tiled_rows(int64_t batch, int64_t seqlen, int64_t columns, int sm_count, int rows = 0,
                         int max_rows = 32) {
  if (rows > 0) return rows;
  for (int r : {32, 16})
    if (r <= max_rows && batch * ceil_div(seqlen, r) * columns >= int64_t(sm_count) * kFill)
      return r;
  return kTileBatch;
}

// The grid of a channel-last walk (cl_tiled, cl_staged): a thread per tile of `rows` time steps
// and column of N channels.
struct ClGrid {
  FastDivmod by_cols, by_tiles;
  int64_t blocks;
};
template <int N, class T>
ClGrid cl_grid(const DirectArgs<T>& a, int rows) {
  if (rows <= 0) throw std::invalid_argument("channel-last kernels: rows per thread must be > 0");
  const int64_t columns = a.dim / N, tiles = ceil_div(a.seqlen, rows);
  return {FastDivmod(columns), FastDivmod(tiles),
          ceil_div(a.batch * tiles * columns, kClTiledThreads)};
}

template <class T>
void launch_cl_tiled(const DirectArgs<T>& a, int width, int rows, int max_access_bytes = 16,
                     cudaStream_t s = 0, KernelFacts* facts = nullptr) {
  dispatch_access(a, max_access_bytes, [&](auto access) {
    constexpr int N = decltype(access)::value;
    const ClGrid g = cl_grid<N>(a, rows);
    dispatch_width(width, [&](auto w) {
      constexpr int W = decltype(w)::value;
      void (*kernel)(DirectArgs<T>, FastDivmod, FastDivmod) = nullptr;
      auto pick = [&](auto r) { kernel = conv_fwd_cl_tiled<T, W, N, decltype(r)::value>; };
      if (!with_rows<8, 16, 32>(rows, pick))
        throw std::invalid_argument("conv_fwd_cl_tiled: rows per thread must be 8, 16 or 32");
      launch_or_describe("conv_fwd_cl_tiled", kernel, g.blocks, kClTiledThreads, s, facts, a,
                         g.by_cols, g.by_tiles);
    });
  });
}

}  // namespace conv1d::ch08
