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

constexpr int kTileBatch = 8;  // rows loaded together, before any of them is used

// The masks of one tile's rows (chapter 10); nothing without them.
template <bool kMasked, int kRows>
struct TileMasks : Masks<kRows> {};
template <int kRows>
struct TileMasks<false, kRows> {
  static constexpr bool full = true;
};

// kMasked (chapter 10): with the tap masks of packed sequences (direct_common.cuh), kRows of them
// loaded together at the start of the tile.
// [docs:ch08_cl_tiled]
// The rows t0 .. t0 + kRows - 1 of one tile, the window holding the W-1 rows before them.
// kAllInside: every output of the tile has all its taps (at or after t = 0, in its sequence).
template <bool kAllInside, bool kMasked, class T, int W, int N, int kRows>
__device__ __forceinline__ void cl_tile(const DirectArgs<T>& a, const T* x, T* out, int64_t t0,
                                        const Filter<W> (&f)[N], Vec<T, N> (&win)[W],
                                        const TileMasks<kMasked, kRows>& m) {
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
#pragma unroll
        for (int k = 0; k < W - 1; ++k) win[k] = win[k + 1];
        win[W - 1] = rows[r];
        unsigned valid = kAllTaps<W>;
        if constexpr (!kAllInside) {
          if constexpr (kMasked)
            valid = m[r0 + r];
          else
            valid = taps_inside<W>(t);
        }
        if (t < a.seqlen)
          *reinterpret_cast<Vec<T, N>*>(out + t * a.dim) =
              kMasked && valid == 0 ? zero_vec<T, N>()  // padding
                                    : cl_outputs<T, W, N, kAllInside>(f, win, valid, a.silu);
      }
    }
  }
}

template <class T, int W, int N, int kRows, bool kMasked = false>
__global__ void conv_fwd_cl_tiled(DirectArgs<T> a, FastDivmod by_cols, FastDivmod by_tiles,
                                  const uint8_t* __restrict__ masks) {
  static_assert(kRows % kTileBatch == 0, "rows come in batches");
  const int64_t item =
      blockIdx.x * int64_t(blockDim.x) + threadIdx.x;  // (b * tiles + tile) * D/N + column
  const int64_t bt = by_cols.div(item);
  const int64_t b = by_tiles.div(bt);
  if (b >= a.batch) return;
  const int64_t d0 = (item - bt * by_cols.divisor()) * N;
  const int64_t t0 = (bt - b * by_tiles.divisor()) * kRows;
  const T* x = a.x + b * a.seqlen * a.dim + d0;  // row t of this batch at x + t * D
  T* out = a.out + b * a.seqlen * a.dim + d0;

  TileMasks<kMasked, kRows> m;  // (first: the decision below waits for them, not for x)
  if constexpr (kMasked) {
    const int64_t left = a.seqlen - t0;
    static_cast<Masks<kRows>&>(m) =
        load_masks<kRows, W>(masks, b * a.seqlen + t0, left < kRows ? int(left) : kRows);
  }
  Filter<W> f[N];
  load_filters<W, N>(a, d0, f);
  Vec<T, N> win[W];  // win[k]: the row k - (W-1) steps back from the one being computed
#pragma unroll
  for (int k = 0; k < W - 1; ++k) {
    const int64_t t = t0 - (W - 1) + k;
    win[k + 1] = t >= 0 ? *reinterpret_cast<const Vec<T, N>*>(x + t * a.dim) : zero_vec<T, N>();
  }
  // Which form the outputs take is decided once per tile, not per row: a test between a batch's
  // loads and their use lets the compiler place loads after it, and then fewer rows are in flight.
  if (t0 >= W - 1 && m.full)
    cl_tile<true, kMasked, T, W, N, kRows>(a, x, out, t0, f, win, m);  // all but a few tiles
  else
    cl_tile<false, kMasked, T, W, N, kRows>(a, x, out, t0, f, win, m);
}
// [/docs:ch08_cl_tiled]

constexpr int kClTiledThreads = 128;

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

// With `masks` (chapter 10, [B, L] bytes): the masked kernel.
template <class T>
void launch_cl_tiled(const DirectArgs<T>& a, int width, int rows, int max_access_bytes = 16,
                     cudaStream_t s = 0, KernelFacts* facts = nullptr,
                     const uint8_t* masks = nullptr) {
  dispatch_access(a, max_access_bytes, [&](auto access) {
    constexpr int N = decltype(access)::value;
    const int64_t columns = a.dim / N, tiles = ceil_div(a.seqlen, rows);
    const FastDivmod by_cols(columns), by_tiles(tiles);
    const int64_t blocks =
        ceil_div(a.batch * tiles * columns, kClTiledThreads);  // a thread per tile and column
    dispatch_width(width, [&](auto w) {
      constexpr int W = decltype(w)::value;
      void (*kernel)(DirectArgs<T>, FastDivmod, FastDivmod, const uint8_t*) = nullptr;
      auto pick = [&](auto r) {
        constexpr int R = decltype(r)::value;
        kernel = masks ? conv_fwd_cl_tiled<T, W, N, R, true> : conv_fwd_cl_tiled<T, W, N, R>;
      };
      switch (rows) {
        case 8: pick(std::integral_constant<int, 8>{}); break;
        case 16: pick(std::integral_constant<int, 16>{}); break;
        case 32: pick(std::integral_constant<int, 32>{}); break;
        default:
          throw std::invalid_argument("conv_fwd_cl_tiled: rows per thread must be 8, 16 or 32");
      }
      launch_or_describe("conv_fwd_cl_tiled", kernel, blocks, kClTiledThreads, s, facts, a, by_cols,
                         by_tiles, masks);
    });
  });
}

}  // namespace conv1d::ch08
