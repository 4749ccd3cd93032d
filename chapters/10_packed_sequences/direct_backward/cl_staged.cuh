// Chapter 10: chapter 09's staged backward (chapters/09_direct_backward/cl_staged.cuh) for packed
// sequences, channel-last, taught the sequence policy. A tile asks for its span while its first
// batches travel: a full tile walks as in chapter 09; a tile of padding writes zeros; a mixed one
// asks its flags once, by the warp's lanes together (WarpFlags), and walks batch by batch: most of
// its batches are full too, the others walk by their flags. The tile that holds a sequence's
// start writes its initial states' gradient. D a multiple of the 8-byte copy (chapter 09's
// condition); cl_tiled.cuh beside this takes the rest.
#pragma once

#include <stdexcept>
#include <string>

#include "chapters/09_direct_backward/cl_staged.cuh"
#include "chapters/10_packed_sequences/direct_backward/cl_tiled.cuh"
#include "common/async_copy.cuh"

namespace conv1d::ch10 {

using ch09::cl_staged_bwd_takes;
using ch09::cl_staged_bwd_units;
using ch09::cls_fetch;
using ch09::kClsBatch;
using ch09::kClsChannels;
using ch09::kClsDepth;
using ch09::kClsMinBlocks;
using ch09::kClsSmemBytes;
using ch09::kClsThreads;
using ch09::kClsWarps;

// [docs:ch10_warp_flags]
// The flag bytes of a mixed tile's outputs t0 .. t0 + kCount - 1, asked once by the
// warp's lanes together: lane l asks those of outputs t0 + l, t0 + l + kWarpLanes, ... and packs
// each with the next three lanes' into a word. A batch of 8 outputs from t0 + r then has its bytes
// in two words of two lanes, two shuffles away: no batch of the tile waits on memory for them.
template <int kCount>
struct WarpFlags {
  static constexpr int kHeld = (kCount + kWarpLanes - 1) / kWarpLanes;
  uint32_t words[kHeld];  // [j]: the bytes of outputs t0 + l + kWarpLanes j .. + 3 (l: this lane)

  template <int W, class Seqs>
  __device__ __forceinline__ void ask(const Seqs& seqs, int64_t b, int64_t t0, int64_t len,
                                      int lane) {
#pragma unroll
    for (int j = 0; j < kHeld; ++j) {
      const int r = lane + j * kWarpLanes;
      const uint32_t v = r < kCount && t0 + r < len ? seqs.template flags<W>(b, t0 + r) : 0u;
      words[j] = v | shuffle_down(v, 1) << 8 | shuffle_down(v, 2) << 16 | shuffle_down(v, 3) << 24;
    }
  }
  // The bytes of outputs t0 + r .. t0 + r + 7 (r a multiple of 8). Every lane of the warp must
  // call it; all get the same answer.
  __device__ __forceinline__ TokenFlags<kClsBatch> batch(int r) const {
    const int j = r / kWarpLanes, at = r % kWarpLanes;
    uint32_t w = words[0];
#pragma unroll
    for (int m = 1; m < kHeld; ++m)
      if (j == m) w = words[m];  // (a select: `words` stays in registers)
    TokenFlags<kClsBatch> fl;
    fl.w[0] = shuffle(w, at);
    fl.w[1] = shuffle(w, at + 4);
    return fl;
  }
};

template <int W>
__device__ __forceinline__ bool every_tap(const TokenFlags<kClsBatch>& fl) {
  constexpr uint32_t kAll = 0x01010101u * kAllTaps<W>;
  return fl.w[0] == kAll && fl.w[1] == kAll;
}
// [/docs:ch10_warp_flags]

// [docs:ch10_cl_staged_bwd]
template <class T, int W, int kRows, bool kSilu, class Seqs>
__global__ void __launch_bounds__(kClsThreads, kClsMinBlocks)
    conv_bwd_cl_staged(BwdArgs<T> a, FastDivmod by_cols, FastDivmod by_units,
                       const __grid_constant__ Seqs seqs) {
  constexpr int N = kClsChannels<T>;
  static_assert(kRows % kClsBatch == 0 && W - 1 <= kClsBatch, "whole batches, a short tail");
  constexpr int kBatches = kRows / kClsBatch;  // then a tail: the W-1 rows whose dz dx needs
  extern __shared__ Bytes16 cls_smem[];
  Vec<T, N>* ring = reinterpret_cast<Vec<T, N>*>(cls_smem) + threadIdx.x;  // this lane's column
  constexpr int kSlot = kClsBatch * 2 * kClsThreads;                       // a batch's slots

  const int lane = threadIdx.x % kWarpLanes, warp = threadIdx.x / kWarpLanes;
  int64_t bu, col;  // bu = b * units + u
  by_cols.divmod(blockIdx.x, &bu, &col);
  const int64_t b = by_units.div(bu), u = bu - b * by_units.divisor();
  const int64_t d0 = (col * kWarpLanes + lane) * N;
  const int64_t t0 = (u * kClsWarps + warp) * kRows;
  const int64_t len = a.seqlen, dim = a.dim;
  const bool channels = d0 < dim;  // (D is a multiple of N)
  const int64_t base = b * len * dim + (channels ? d0 : 0);
  const T* x = a.x + base;  // row t at x + t * D
  const T* g = a.dout + base;
  T* dx = a.dx + base;
  auto fetch = [&](int i) {  // batch i: 8 rows, the tail's W-1, or none
    const int n = i < kBatches ? kClsBatch : i == kBatches ? W - 1 : 0;
    cls_fetch<T, N>(x, g, t0 + int64_t(i) * kClsBatch, n, len, dim, channels,
                    ring + (i % kClsDepth) * kSlot);
  };
  if (t0 < len)  // (the warp: a tile past the row's end has nothing to walk)
#pragma unroll
    for (int i = 0; i < kClsDepth; ++i) fetch(i);
  // Whether every position of the tile counts every tap, while the first batches travel: the same
  // answer in every lane of the warp, which stands at the same time steps.
  Span span = Span::full;
  if (t0 < len) span = seqs.template span<W, kRows, W - 1>(b, t0);

  GradSums<W> sums[N];
  if (t0 < len && span == Span::padding) {
    // A tile of padding: no output counts any of its rows (the outputs after it are another
    // sequence's), so their dx is exactly 0 and the sums gain nothing. The batches asked for above
    // land unread. Walked by the flags, such a tile cost its warp 8 batches of the slow walk while
    // its block's other warps waited at the barrier below.
    if (channels)
#pragma unroll 4
      for (int r = 0; r < kRows; ++r)
        if (t0 + r < len) *reinterpret_cast<Vec<T, N>*>(dx + (t0 + r) * dim) = zero_vec<T, N>();
  } else if (t0 < len) {
    // While they travel: the filters, and the W-1 rows of x before the tile.
    Filter<W> f[N];
#pragma unroll
    for (int i = 0; i < N; ++i) f[i] = load_filter<W>(a.weight, a.bias, channels ? d0 + i : 0);
    float xw[W][N] = {}, dzw[W][N] = {};  // the last W rows of x and of dz, oldest first
#pragma unroll
    for (int k = 1; k < W; ++k)
      if (channels && t0 - W + k >= 0)
        to_floats(*reinterpret_cast<const Vec<T, N>*>(x + (t0 - W + k) * dim), xw[k]);
    uint32_t fw = 0;                // the flags of the last W positions
    WarpFlags<kRows + W - 1> tile;  // a mixed tile's flags
    if (span != Span::full) tile.template ask<W>(seqs, b, t0, len, lane);

    // dx of row s, W-1 behind step r of a batch, where it is one of this tile's rows (`from`: the
    // batch's first step that has one), at `out`, which then moves to the next row.
    auto store = [&](int r, int from, int64_t s, T*& out, const float(&y)[N]) {
      if (r >= from) {
        if (channels && s < len) *reinterpret_cast<Vec<T, N>*>(out) = from_floats<T, N>(y);
        out += dim;
      }
    };
    // Steps t .. t + n - 1 from a batch's slots, every tap counting: unrolled, the windows renamed
    // rather than moved.
    auto walk_full = [&](const Vec<T, N>* rows, int64_t t, auto n, bool own, int from) {
      T* out = dx + (t + from - (W - 1)) * dim;  // the batch's first row of dx
#pragma unroll
      for (int r = 0; r < decltype(n)::value; ++r) {
        float y[N];
        cl_bwd_step<true, T, W, N>(seqs, b, d0, t + r, channels, true, own, kSilu, f,
                                   rows[(2 * r) * kClsThreads], rows[(2 * r + 1) * kClsThreads],
                                   kAllTaps<W>, fw, xw, dzw, sums, y);
        store(r, from, t + r - (W - 1), out, y);
      }
      fw = 0x01010101u * kAllTaps<W>;  // (the flags it walked)
    };
    // The same by the flags `fl` (a byte a step), in a loop: a few batches take it, and unrolled,
    // its code beside the full walk's made the warps wait on instruction fetch.
    auto walk_flags = [&](const Vec<T, N>* rows, int64_t t, int n, bool own, int from,
                          const TokenFlags<kClsBatch>& fl) {
      const uint64_t bytes = fl.w[0] | uint64_t(fl.w[1]) << 32;
      T* out = dx + (t + from - (W - 1)) * dim;
#pragma unroll 1
      for (int r = 0; r < n; ++r) {
        float y[N];
        cl_bwd_step<false, T, W, N>(seqs, b, d0, t + r, channels, true, own, kSilu, f,
                                    rows[(2 * r) * kClsThreads], rows[(2 * r + 1) * kClsThreads],
                                    unsigned(bytes >> (8 * r)) & 0xFFu, fw, xw, dzw, sums, y);
        store(r, from, t + r - (W - 1), out, y);
      }
    };
    using Batch = std::integral_constant<int, kClsBatch>;
    using Tail = std::integral_constant<int, W - 1>;
#pragma unroll 1
    for (int i = 0; i < kBatches; ++i) {
      async_wait<kClsDepth - 1>();  // batch i has landed (this lane's copies)
      const Vec<T, N>* rows = ring + (i % kClsDepth) * kSlot;
      const int64_t t = t0 + int64_t(i) * kClsBatch;
      const int from = i > 0 ? 0 : W - 1;
      // A mixed tile, batch by batch: most of its batches are full too.
      TokenFlags<kClsBatch> fl{};
      if (span != Span::full) fl = tile.batch(i * kClsBatch);
      if (span == Span::full || every_tap<W>(fl))
        walk_full(rows, t, Batch{}, true, from);
      else
        walk_flags(rows, t, kClsBatch, true, from, fl);
      fetch(i + kClsDepth);  // into the slots just read
    }
    async_wait<kClsDepth - 1>();  // the tail
    const Vec<T, N>* rows = ring + (kBatches % kClsDepth) * kSlot;
    const int64_t t = t0 + kRows;
    if (span == Span::full)
      walk_full(rows, t, Tail{}, false, 0);
    else
      walk_flags(rows, t, W - 1, false, 0, tile.batch(kRows));
  }
  // The initial states' gradient of the sequences that start in this tile.
  if (channels && seqs.owns_edges(t0, kRows, span == Span::full))
    seqs.template tile_dinit<W, N>(a, b, d0, t0, kRows, span == Span::full);

  // The block's 4 tiles add their sums through shared memory (the ring's, now free), in order.
  async_wait_all();
  __syncthreads();
  float* part = reinterpret_cast<float*>(cls_smem);  // [warp][channel][sum][lane]
  static_assert(size_t(kClsWarps) * N * (W + 1) * kWarpLanes * 4 <= kClsSmemBytes, "fits");
#pragma unroll
  for (int i = 0; i < N; ++i)
#pragma unroll
    for (int k = 0; k <= W; ++k)
      part[((warp * N + i) * (W + 1) + k) * kWarpLanes + lane] = sums[i].v[k];
  __syncthreads();
  if (warp == 0 && channels)
#pragma unroll
    for (int i = 0; i < N; ++i) {
      GradSums<W> s;
#pragma unroll
      for (int k = 0; k <= W; ++k) {
        float v = part[(i * (W + 1) + k) * kWarpLanes + lane];
#pragma unroll
        for (int w = 1; w < kClsWarps; ++w)
          v += part[((w * N + i) * (W + 1) + k) * kWarpLanes + lane];
        s.v[k] = v;
      }
      emit_sums<W>(a, bu * dim + d0 + i, d0 + i, s);
    }
}
// [/docs:ch10_cl_staged_bwd]

// For the sequences `seqs`, the configurations ch10::compiled says (16 or 64 rows a warp).
template <class T, class Seqs>
void launch_cl_bwd_staged(const BwdArgs<T>& a, int width, int rows, cudaStream_t s,
                          KernelFacts* facts, const Seqs& seqs) {
  if (!cl_staged_bwd_takes(a))
    throw std::invalid_argument(
        "conv_bwd_cl_staged: a lane's channels must be one 8-byte copy (D a multiple of " +
        std::to_string(kClsChannels<T>) + ", tensors 8-byte aligned); cl_tiled takes any D");
  constexpr int N = kClsChannels<T>;
  const int64_t cols = ceil_div(a.dim, int64_t(kWarpLanes) * N);
  const int64_t units = cl_staged_bwd_units(a.seqlen, rows);
  const FastDivmod by_cols(cols), by_units(units);
  dispatch_width(width, [&](auto w) {
    constexpr int W = decltype(w)::value;
    void (*kernel)(BwdArgs<T>, FastDivmod, FastDivmod, Seqs) = nullptr;
    auto pick = [&](auto r) {
      constexpr int R = decltype(r)::value;
      if constexpr (compiled<T, Family::cl_bwd_staged>(R, N))
        kernel = a.silu ? conv_bwd_cl_staged<T, W, R, true, Seqs>
                        : conv_bwd_cl_staged<T, W, R, false, Seqs>;
    };
    if (!with_rows<16, 32, 64>(rows, pick))
      throw std::invalid_argument("conv_bwd_cl_staged: rows per warp must be 16, 32 or 64");
    if (!kernel)
      throw std::invalid_argument("conv_bwd_cl_staged: chapter 10 does not compile " +
                                  std::to_string(rows) + " rows a warp");
    launch_smem_or_describe("conv_bwd_cl_staged", kernel, a.batch * units * cols, kClsThreads,
                            kClsSmemBytes, s, facts, a, by_cols, by_units, seqs);
  });
}

}  // namespace conv1d::ch10
