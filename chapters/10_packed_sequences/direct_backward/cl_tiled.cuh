// Chapter 10: chapter 09's tiled backward (chapters/09_direct_backward/cl_tiled.cuh) for packed
// sequences, channel-last, taught the sequence policy. The 8 lanes of a warp across the channels
// ask together for the span of their tile and the W-1 positions after it; when every lane of the
// warp is full the warp walks as in chapter 09, otherwise every lane walks with the flags of its
// positions, kept in shared memory: which taps count, a sequence's first rows reading its state,
// the inputs whose dx also receives the final states' gradient; and the tile that holds a
// sequence's start writes its initial states' gradient. This kernel takes the D that chapter 09's
// staged kernel does not (cl_staged.cuh beside this).
#pragma once

#include <algorithm>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "chapters/09_direct_backward/cl_tiled.cuh"
#include "chapters/10_packed_sequences/policy.cuh"
#include "common/fast_divmod.h"
#include "common/launch.cuh"

namespace conv1d::ch10 {

using ch09::cl_bwd_channels;
using ch09::cl_bwd_partials;
using ch09::cl_bwd_units;
using ch09::kClBwdThreads;
using ch09::kClLanesAcross;
using ch09::kClLanesDown;
using ch09::kTileBatch;
using ch09::kZeroRow;
using ch09::to_floats;

// The walk with flags loads 4 rows of x and of dout a batch, not 8: its batch loop is half as long,
// and fits its registers.
constexpr int kFlagsBatch = 4;

// [docs:ch10_cl_step]
// One step of a channel-last walk (cl_tiled's and cl_staged's), at row t of x and dout (xv, gv):
// the windows move on, dz[t] is computed (zero where !in_range) and, where `own` (t is one of the
// tile's own rows), its terms of the sums; y receives dx of row t - (W-1), complete now. kFull:
// every tap counts (chapter 09's step); otherwise m is t's flag byte and fw the flags of the last W
// positions, a byte each, the newest lowest: which taps count, edges, final states' gradients.
template <bool kFull, class T, int W, int N, class Seqs>
__device__ __forceinline__ void cl_bwd_step(const Seqs& seqs, int64_t b, int64_t d0, int64_t t,
                                            bool channels, bool in_range, bool own, bool silu,
                                            const Filter<W> (&f)[N], const Vec<T, N>& xv,
                                            const Vec<T, N>& gv, unsigned m, uint32_t& fw,
                                            float (&xw)[W][N], float (&dzw)[W][N],
                                            GradSums<W> (&sums)[N], float (&y)[N]) {
#pragma unroll
  for (int k = 0; k + 1 < W; ++k)
#pragma unroll
    for (int i = 0; i < N; ++i) {
      xw[k][i] = xw[k + 1][i];
      dzw[k][i] = dzw[k + 1][i];
    }
  to_floats(xv, xw[W - 1]);
  if constexpr (!kFull) {
    fw = fw << 8 | m;
    if ((m & kEdge) && channels) {  // the inputs before the sequence's start are its state's
      const int before = __ffs(m & kAllTaps<W>) - 1;  // taps before the start
      // (the sequence's states asked once, then the N channels' values, none waiting on another)
      const T* st = seqs.template states_of<W>(b, t) + d0 * (W - 1);
#pragma unroll
      for (int i = 0; i < N; ++i)
#pragma unroll
        for (int k = 0; k < W - 1; ++k)
          if (k < before) xw[k][i] = to_float(st[i * (W - 1) + (W - 1) + k - before]);
    }
  }
  const unsigned zt = kFull ? kAllTaps<W> : taps_with_state<W>(m);
  float dout[N];
  to_floats(gv, dout);
#pragma unroll
  for (int i = 0; i < N; ++i) {
    float taps[W];
#pragma unroll
    for (int k = 0; k < W; ++k) taps[k] = kFull || (zt >> k & 1u) ? xw[k][i] : 0.0f;
    dzw[W - 1][i] = in_range && zt ? dz_at<W>(f[i], taps, dout[i], silu) : 0.0f;
    if (own) {
#pragma unroll
      for (int k = 0; k < W; ++k) sums[i].v[k] += dzw[W - 1][i] * taps[k];
      sums[i].v[W] += dzw[W - 1][i];
    }
  }
  // dx[s], s = t - (W-1): sum_k w[k] dz[s + (W-1) - k] over the taps of those positions that count
  // (the final state's gradient first, where s's input is one).
  const unsigned fin = kFull ? 0u : fw >> (8 * (W - 1) + kFinalShift) & 3u;
  float from_final[N] = {};
  if constexpr (!kFull)
    if (fin && channels) {  // (as the states above: one question, then N loads side by side)
      const float* g = seqs.template dfinals_of<W>(b, t - (W - 1)) + d0 * (W - 1) + (fin - 1);
#pragma unroll
      for (int i = 0; i < N; ++i) from_final[i] = g[i * (W - 1)];
    }
#pragma unroll
  for (int i = 0; i < N; ++i) {
    float acc = from_final[i];
#pragma unroll
    for (int k = 0; k < W; ++k)
      if (kFull || (fw >> (8 * k + k) & 1u)) acc += f[i].w[k] * dzw[W - 1 - k][i];
    y[i] = acc;
  }
}
// [/docs:ch10_cl_step]

// [docs:ch10_cl_bwd_walk]
// The walk down one tile: steps t0 .. t0 + kRows + W - 2, each computing dz (and, for the tile's own
// rows, its terms of the sums), and from step W-1 on dx of the row W-1 steps back. kFull: every
// position counts every tap; otherwise `cursor` gives the flags of the kRows + W - 1 positions.
template <bool kFull, class T, int W, int N, int kRows, class Seqs, class Cursor>
__device__ __forceinline__ void cl_bwd_walk(const BwdArgs<T>& a, const Seqs& seqs, int64_t b,
                                            int64_t d0, int64_t t0, bool channels, const T* x,
                                            const T* g, T* dx, const Filter<W> (&f)[N],
                                            float (&xw)[W][N], GradSums<W> (&sums)[N],
                                            Cursor& cursor) {
  constexpr int kSteps = kRows + W - 1;  // the tile's rows and the W-1 whose dz the last dx needs
  const int64_t len = a.seqlen, dim = a.dim;
  // Every row of a batch is loaded with no branch: a row out of range is read from a row of
  // zeros. Behind a branch each, nvcc let one load of the batch be in flight at a time (Nsight
  // Compute, in the walk with flags: 45 % of its stall samples on the 16 loads' first uses).
  static_assert(sizeof(Vec<T, N>) <= sizeof(kZeroRow), "a row of zeros covers a vector");
  auto row_or_zeros = [&](const T* base, int64_t t, bool in) {
    const T* p =
        in && channels && t >= 0 && t < len ? base + t * dim : reinterpret_cast<const T*>(kZeroRow);
    return *reinterpret_cast<const Vec<T, N>*>(p);
  };
  float dzw[W][N] = {};  // the last W values of dz, oldest first
  uint32_t fw = 0;       // the flags of the last W positions, a byte each, the newest lowest
  // A batch of rows at a time, in a loop: the plain walk asks for the next batch's rows before it
  // computes this one's, so they are in flight while it does. That is 10 % faster at 8x4096x4096
  // bf16 than the walk fully unrolled, for a quarter more instructions (Nsight Compute: warps
  // waiting on memory 1.1 times an issued instruction, against 3.4); rolled without asking ahead,
  // it was twice as slow as unrolled. The walk with flags (kFull false) asks for its batch when it
  // starts it: ahead, at its 128 registers, it spilled and was slower.
  constexpr int kBatch = kFull ? kTileBatch : kFlagsBatch;
  auto load_batch = [&](int s0, Vec<T, N>(&xs)[kBatch], Vec<T, N>(&gs)[kBatch]) {
#pragma unroll
    for (int r = 0; r < kBatch; ++r) {
      xs[r] = row_or_zeros(x, t0 + s0 + r, s0 + r < kSteps);
      gs[r] = row_or_zeros(g, t0 + s0 + r, s0 + r < kSteps);
    }
  };
  Vec<T, N> xs[kBatch], gs[kBatch];
  if constexpr (kFull) load_batch(0, xs, gs);
#pragma unroll 1
  for (int s0 = 0; s0 < kSteps; s0 += kBatch) {
    Vec<T, N> next_x[kBatch], next_g[kBatch];
    if constexpr (kFull)
      load_batch(s0 + kBatch, next_x, next_g);
    else
      load_batch(s0, xs, gs);
#pragma unroll
    for (int r = 0; r < kBatch; ++r) {
      const int step = s0 + r;
      if (step <
          kSteps) {  // (a guard, not a break: a batch unrolls fully, its arrays in registers)
        const int64_t t = t0 + step, s = t - (W - 1);
        float y[N];
        cl_bwd_step<kFull, T, W, N>(seqs, b, d0, t, channels, t < len, step < kRows, a.silu, f,
                                    xs[r], gs[r], kFull ? kAllTaps<W> : cursor.next(), fw, xw, dzw,
                                    sums, y);
        if (step >= W - 1 && s < len && channels)
          *reinterpret_cast<Vec<T, N>*>(dx + s * dim) = from_floats<T, N>(y);
      }
    }
    if constexpr (kFull)
#pragma unroll
      for (int r = 0; r < kBatch; ++r) {
        xs[r] = next_x[r];
        gs[r] = next_g[r];
      }
  }
}

// [docs:ch10_cl_tiled_bwd]
// Held to the occupancy of chapter 09's kernel (kPackedMinBlocks).
template <class T, int W, int N, int kRows, class Seqs>
__global__ void __launch_bounds__(kClBwdThreads, kPackedMinBlocks)
    conv_bwd_cl(BwdArgs<T> a, FastDivmod by_col_blocks, FastDivmod by_units, Seqs seqs) {
  const int lane = threadIdx.x % kWarpLanes;
  int64_t bu, col_block;  // bu = b * units + u
  by_col_blocks.divmod((blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / kWarpLanes, &bu,
                       &col_block);
  const int64_t b = by_units.div(bu);
  if (b >= a.batch) return;  // the whole warp
  const int64_t d0 = (col_block * kClLanesAcross + lane % kClLanesAcross) * N;
  const int64_t t0 = ((bu - b * by_units.divisor()) * kClLanesDown + lane / kClLanesAcross) * kRows;
  const bool channels = d0 < a.dim;  // (D is a multiple of N: a lane's channels are all in or out)
  const int64_t len = a.seqlen, dim = a.dim;
  const T* x = a.x + b * len * dim + d0;  // row t at x + t * D
  const T* g = a.dout + b * len * dim + d0;
  T* dx = a.dx + b * len * dim + d0;
  // Where sequences begin: the span of the lane's tile and the W-1 positions after it, asked by
  // the 8 lanes across the channels together.
  const Span span =
      seqs.template span_by<W, kRows, W - 1, kClLanesAcross>(b, t0, lane % kClLanesAcross);

  Filter<W> f[N];
#pragma unroll
  for (int i = 0; i < N; ++i) f[i] = load_filter<W>(a.weight, a.bias, channels ? d0 + i : 0);
  float xw[W][N] = {};  // the last W rows of x, oldest first
#pragma unroll
  for (int k = 1; k < W; ++k)  // x[t0-(W-1) .. t0-1]
    to_floats(channels && t0 - W + k >= 0 && t0 - W + k < len
                  ? *reinterpret_cast<const Vec<T, N>*>(x + (t0 - W + k) * dim)
                  : zero_vec<T, N>(),
              xw[k]);
  GradSums<W> sums[N];

  // Chapter 09's walk when every tile of the warp counts every tap everywhere; otherwise every
  // lane walks with flags (a vote: the warp runs one form).
  if (warp_all(span == Span::full)) {
    AllTaps<W> all;
    cl_bwd_walk<true, T, W, N, kRows>(a, seqs, b, d0, t0, channels, x, g, dx, f, xw, sums, all);
  } else {
    // The flags of the tile's positions, from one call (a lane whose own tile is full: every
    // tap), kept in shared memory, a row for each thread: in registers they would cost every
    // thread of the kernel nine of them.
    constexpr int kWords = TokenFlags<kRows + W - 1>::kWords;
    __shared__ uint32_t flag_rows[kClBwdThreads][kWords];  // (kWords odd: no bank conflicts)
    const TokenFlags<kRows + W - 1> fl = span == Span::full
                                             ? TokenFlags<kRows + W - 1>::filled(kAllTaps<W>)
                                             : seqs.template flags_of<W, kRows + W - 1>(b, t0);
#pragma unroll
    for (int i = 0; i < kWords; ++i) flag_rows[threadIdx.x][i] = fl.w[i];
    SharedFlags cursor{flag_rows[threadIdx.x]};
    cl_bwd_walk<false, T, W, N, kRows>(a, seqs, b, d0, t0, channels, x, g, dx, f, xw, sums, cursor);
  }
  // The initial states' gradient of the sequences that start in this tile.
  if (channels && seqs.owns_edges(t0, kRows, span == Span::full))
    seqs.template tile_dinit<W, N>(a, b, d0, t0, kRows, span == Span::full);

    // The 4 lanes down the time that share these channels add their sums (lane bits 3 and 4 with 8
    // lanes across), then one of them emits the unit's.
#pragma unroll
  for (int i = 0; i < N; ++i) warp_sum<W>(sums[i], (kClLanesDown - 1) * kClLanesAcross);
  if (lane < kClLanesAcross && channels)
#pragma unroll
    for (int i = 0; i < N; ++i) emit_sums<W>(a, bu * dim + d0 + i, d0 + i, sums[i]);
}

// [/docs:ch10_cl_tiled_bwd]

// For the sequences `seqs`, the configurations ch10::compiled says.
template <class T, class Seqs>
void launch_cl_bwd(const BwdArgs<T>& a, int width, int rows, int max_access_bytes, cudaStream_t s,
                   KernelFacts* facts, const Seqs& seqs) {
  const int channels = cl_bwd_channels(a, max_access_bytes);
  auto with_channels = [&](auto access) {
    constexpr int N = decltype(access)::value;
    const int64_t col_blocks = ceil_div(ceil_div(a.dim, N), kClLanesAcross);
    const int64_t units = cl_bwd_units(a.seqlen, rows);
    const FastDivmod by_col_blocks(col_blocks), by_units(units);
    const int64_t blocks = ceil_div(a.batch * units * col_blocks * kWarpLanes, kClBwdThreads);
    dispatch_width(width, [&](auto w) {
      constexpr int W = decltype(w)::value;
      void (*kernel)(BwdArgs<T>, FastDivmod, FastDivmod, Seqs) = nullptr;
      auto pick = [&](auto r) {
        constexpr int R = decltype(r)::value;
        if constexpr (compiled<T, Family::cl_bwd>(R, N)) kernel = conv_bwd_cl<T, W, N, R, Seqs>;
      };
      if (!with_rows<16, 32, 64>(rows, pick))
        throw std::invalid_argument("conv_bwd_cl: rows per lane must be 16, 32 or 64");
      if (!kernel)
        throw std::invalid_argument("conv_bwd_cl: chapter 10 does not compile " +
                                    std::to_string(rows) + " rows of " + std::to_string(N) +
                                    " channels");
      launch_or_describe("conv_bwd_cl", kernel, blocks, kClBwdThreads, s, facts, a, by_col_blocks,
                         by_units, seqs);
    });
  };
  switch (channels) {
    case 4: with_channels(std::integral_constant<int, 4>{}); break;
    case 2: with_channels(std::integral_constant<int, 2>{}); break;
    default: with_channels(std::integral_constant<int, 1>{}); break;
  }
}

}  // namespace conv1d::ch10
