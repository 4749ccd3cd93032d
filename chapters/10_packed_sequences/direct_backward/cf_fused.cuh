// Chapter 10: chapter 09's fused backward (chapters/09_direct_backward/cf_fused.cuh) for packed
// rows, channel-first, taught the sequence policy. Each lane asks for the span of its vector and
// the W-1 positions after it; when every lane of the warp is full, the warp takes chapter 09's
// step, otherwise every lane takes the step with flags (a vote, so that the warp runs one form and
// the shuffles inside it see every lane): which taps count, a row's first vector reading its
// initial states, and the inputs whose dx also receives the final states' gradient. In 16-bit
// storage without SiLU a row takes 8 lanes, and a warp four rows side by side (kRowLanes): a step
// spans 64 positions instead of 256, so fewer steps take the masked form. This kernel runs rows
// of a length the vector does not divide; the others take the staged kernel (cf_staged.cuh beside
// this).
#pragma once

#include <stdexcept>
#include <string>
#include <type_traits>

#include "chapters/09_direct_backward/cf_fused.cuh"
#include "chapters/10_packed_sequences/policy.cuh"
#include "common/fast_divmod.h"
#include "common/launch.cuh"

namespace conv1d::ch10 {

using ch09::cf_bwd_partials;
using ch09::kCfBwdThreads;
using ch09::load_in_row;
using ch09::store_in_row;
using ch09::tail_of;

// The lanes a row takes: 8 in 16-bit storage without SiLU, four rows a warp. (With SiLU the rows'
// bookkeeping made the kernel spill at its 128 registers: it keeps the whole warp a row.)
template <class T>
CONV1D_HOST_DEVICE constexpr int packed_cf_row_lanes(bool silu) {
  return sizeof(T) == 2 && !silu ? 8 : kWarpLanes;
}

// Chunks per row: the units of the deterministic sums (a row of the partial buffer each); a chunk
// is `vecs` vectors of each of a row's `row_lanes` lanes.
inline int64_t cf_bwd_chunks(int64_t seqlen, int per16, int vecs, int row_lanes) {
  return ceil_div(seqlen, int64_t(vecs) * row_lanes * per16);
}

// Held to the occupancy of chapter 09's kernel: 16 warps an SM in 16-bit storage (at most 128
// registers a thread), 32 in fp32 (64); the step with flags would take more. SiLU or not is
// compiled in (kSilu: on or off).
template <class T>
constexpr int kPackedCfBwdMinBlocks = sizeof(T) == 2 ? 4 : 8;

// [docs:ch10_cf_fused]
template <class T, int W, int kVecs, bool kVec, class Seqs, Silu kSilu>
__global__ void __launch_bounds__(kCfBwdThreads, kPackedCfBwdMinBlocks<T>)
    conv_bwd_cf(BwdArgs<T> a, FastDivmod by_chunks, FastDivmod by_dim, Seqs seqs) {
  constexpr int kPer = kPer16<T>;
  constexpr int kRowLanes = packed_cf_row_lanes<T>(kSilu == Silu::on);
  constexpr int kRows = kWarpLanes / kRowLanes;
  const int lane = threadIdx.x % kRowLanes;                // in its row's lanes
  const int first_lane = threadIdx.x % kWarpLanes - lane;  // theirs in the warp
  int64_t rows_at, chunk;  // the warp: chunk `chunk` of rows rows_at*kRows .. (+kRows-1)
  by_chunks.divmod((blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / kWarpLanes, &rows_at, &chunk);
  int64_t row = rows_at * kRows + first_lane / kRowLanes;  // b*D + d
  const int64_t rows = a.batch * a.dim;
  if constexpr (kRows == 1)
    if (row >= rows) return;  // the whole warp: every lane has the same row
  // (Several rows a warp: a row past the last takes the last one's work and writes nothing, so
  // that its lanes still take part in the warp's shuffles and votes.)
  const bool live = row < rows;
  if (!live) row = rows - 1;
  const int64_t len = a.seqlen, p_chunk = chunk * kVecs * kRowLanes * kPer;
  const int64_t b = by_dim.div(row), d = row - b * a.dim;
  const T* x = a.x + row * len;
  const T* g = a.dout + row * len;
  auto first_of = [&](int j) { return p_chunk + (int64_t(j) * kRowLanes + lane) * kPer; };
  const Filter<W> f = load_filter<W>(a.weight, a.bias, d);
  const bool silu = silu_in<kSilu>(a);

  // 1. Every load first: the chunk's x and dout, the x before the chunk (lane 0) and the x and
  //    dout after it (lane 31, for the dz ahead of the chunk's last vector).
  Vec<T, kPer> xv[kVecs], gv[kVecs];
#pragma unroll
  for (int j = 0; j < kVecs; ++j) {
    xv[j] = load_in_row<T, kPer, kVec>(x, first_of(j), len);
    gv[j] = load_in_row<T, kPer, kVec>(g, first_of(j), len);
  }
  const int64_t p_next = first_of(kVecs - 1) + kPer;
  Vec<T, kPer> x_before = zero_vec<T, kPer>(), x_after = zero_vec<T, kPer>(),
               g_after = zero_vec<T, kPer>();
  if (lane == 0 && p_chunk > 0) x_before = load_in_row<T, kPer, kVec>(x, p_chunk - kPer, len);
  if (lane == kRowLanes - 1) {
    x_after = load_in_row<T, kPer, kVec>(x, p_next, len);
    g_after = load_in_row<T, kPer, kVec>(g, p_next, len);
  }

  // 2. The vectors last to first, so that lane 31 can take its dz ahead from lane 0's next vector.
  GradSums<W> sums;
  float dz_next[W - 1];  // lane 31: dz at the W-1 positions after its current vector
#pragma unroll
  for (int j = kVecs - 1; j >= 0; --j) {
    const int64_t p0 = first_of(j);
    // The x behind the vector: the tail of the same vector one lane down; for lane 0, of lane 31's
    // previous vector, or the x before the chunk. Zeros before t = 0.
    const Bytes16 own = bit_cast<Bytes16>(xv[j]), prev = bit_cast<Bytes16>(xv[j > 0 ? j - 1 : 0]);
    Bytes16 behind = bit_cast<Bytes16>(x_before);
#pragma unroll
    for (int w = ch08::kHaloFirstWord<T, W>; w < 4; ++w) {
      const uint32_t down = shuffle_up(own.v[w], 1),
                     top = shuffle(prev.v[w], first_lane + kRowLanes - 1);
      if (lane > 0)
        behind.v[w] = down;
      else if (j > 0)
        behind.v[w] = top;
    }
    float xw[(W - 1) + kPer];  // x[p0 - (W-1) .. p0 + kPer - 1]
    tail_of<T, W>(bit_cast<Vec<T, kPer>>(behind), xw);
    if (p0 == 0)
#pragma unroll
      for (int i = 0; i < W - 1; ++i) xw[i] = 0.0f;
#pragma unroll
    for (int i = 0; i < kPer; ++i) xw[(W - 1) + i] = to_float(xv[j].v[i]);

    // Where sequences begin: the span of the vector and of the W-1 positions after it.
    const Span span = seqs.template span<W, kPer, W - 1>(b, p0);
    auto step = [&](auto full) {
      constexpr bool kFull = decltype(full)::value;
      TokenFlags<kPer + W - 1> fl;  // the vector's positions and the W-1 after them
      if constexpr (!kFull) {
        if (span == Span::full) {
          fl = TokenFlags<kPer + W - 1>::filled(kAllTaps<W>);
        } else if (p0 >= W - 1 && !seqs.near_final(p0 + kPer + W - 1, W)) {  // inline: no edges
          fl = seqs.template vector_flags<W, kPer + W - 1>(b, p0);
        } else {  // (out of line: a row's first or last vectors)
          fl = seqs.template flags_of<W, kPer + W - 1>(b, p0);
        }
        // A row that starts from its state: the state is the x before 0.
        if (p0 == 0 && (fl[0] & kEdge)) {
          const T* st = seqs.template state_at<W>(b, 0, d);
#pragma unroll
          for (int i = 0; i < W - 1; ++i)
            if (st) xw[i] = to_float(st[i]);
        }
      }
      // Does tap k of position p0 + t count (t < kPer + W-1), and (z_counts) with an edge's state
      // taps? The taps of position p0 + i that count, for the flags.
      auto z_taps = [&](int i) { return kFull ? kAllTaps<W> : taps_with_state<W>(fl[i]); };
      auto counts = [&](int t, int k) { return kFull || (fl[t] >> k & 1u) != 0; };
      auto z_counts = [&](int t, int k) { return kFull || (z_taps(t) >> k & 1u) != 0; };
      // dz at position p0 + t from its window and dout (0 at padding).
      auto dz_of = [&](const float* win, int t, float gv_t) {
        return z_taps(t) ? dz_masked<W>(f, win, z_taps(t), gv_t, silu) : 0.0f;
      };

      if (j == kVecs - 1) {  // dz after the chunk's last vector, from the x and dout after it
        float win[2 * (W - 1)];
        tail_of<T, W>(xv[kVecs - 1], win);
#pragma unroll
        for (int i = 0; i < W - 1; ++i) win[(W - 1) + i] = to_float(x_after.v[i]);
#pragma unroll
        for (int i = 0; i < W - 1; ++i)
          dz_next[i] = p_next + i < len ? dz_of(&win[i], kPer + i, to_float(g_after.v[i])) : 0.0f;
      }

      // dz at the vector's positions (zero past L and at padding), then at the W-1 after them: the
      // lane above's first ones; lane 31 has them from lane 0's next vector.
      float dz[kPer + (W - 1)];
#pragma unroll
      for (int i = 0; i < kPer; ++i)
        dz[i] = p0 + i < len ? dz_of(&xw[i], i, to_float(gv[j].v[i])) : 0.0f;
#pragma unroll
      for (int i = 0; i < W - 1; ++i) {
        const float above = __uint_as_float(shuffle_down(__float_as_uint(dz[i]), 1));
        const float lane0 = __uint_as_float(shuffle(__float_as_uint(dz[i]), first_lane));
        dz[kPer + i] = lane < kRowLanes - 1 ? above : dz_next[i];
        dz_next[i] = lane0;  // what lane 31's vector j - 1 has ahead of it
      }

      // dx (dz[t] reaches dx[s] through tap k = s + (W-1) - t when that tap of t counts; a position
      // whose input is one of the final states also receives that state's gradient, first, so the
      // sum runs in the order one pass over a longer row would take), and the vector's terms of
      // the sums (x before t = 0 is zero in xw, dz past L is zero).
      float y[kPer];
#pragma unroll
      for (int i = 0; i < kPer; ++i) {
        float acc = 0.0f;
        if constexpr (!kFull)
          if (const unsigned fin = fl[i] >> kFinalShift & 3u)
            acc = seqs.template dfinal_at<W>(b, p0 + i, d, int(fin) - 1);
#pragma unroll
        for (int k = 0; k < W; ++k)
          if (counts(i + (W - 1) - k, k)) acc += f.w[k] * dz[i + (W - 1) - k];
        y[i] = acc;
#pragma unroll
        for (int k = 0; k < W; ++k)
          if (z_counts(i, k)) sums.v[k] += dz[i] * xw[i + k];
        sums.v[W] += dz[i];
      }
      if constexpr (!kFull)
        if (p0 == 0 && live) seqs.template row_dinit<W>(b, d, f, dz, [&](int i) { return fl[i]; });
      if (p0 < len && live) store_in_row<T, kPer, kVec>(a.dx + row * len, p0, len, y);
    };
    if (warp_all(span == Span::full))
      step(std::true_type{});
    else
      step(std::false_type{});
  }

  // 3. The chunk's sums: a fixed butterfly over a row's lanes, then one unit of W+1 sums.
  warp_sum<W>(sums, kRowLanes - 1);
  if (lane == 0 && live) emit_sums<W>(a, row * by_chunks.divisor() + chunk, d, sums);
}
// [/docs:ch10_cf_fused]

// Vectors per lane: chapter 09's choice (ch09::cf_bwd_vectors), of those this chapter compiles.
// For the sequences `seqs`, SiLU compiled in or out.
template <class T, class Seqs>
void launch_cf_bwd(const BwdArgs<T>& a, int width, int vecs, cudaStream_t s, KernelFacts* facts,
                   const Seqs& seqs) {
  const int lanes = packed_cf_row_lanes<T>(a.silu), rows_a_warp = kWarpLanes / lanes;
  const int64_t chunks = cf_bwd_chunks(a.seqlen, kPer16<T>, vecs, lanes);
  const FastDivmod by_chunks(chunks), by_dim(a.dim);
  const int64_t blocks =
      ceil_div(ceil_div(a.batch * a.dim, int64_t(rows_a_warp)) * chunks * kWarpLanes,
               int64_t(kCfBwdThreads));  // a warp per chunk of rows_a_warp rows
  const bool vec = a.seqlen % kPer16<T> == 0 && aligned_to(a.x, 16) && aligned_to(a.dout, 16) &&
                   aligned_to(a.dx, 16);
  dispatch_width(width, [&](auto w) {
    constexpr int W = decltype(w)::value;
    void (*kernel)(BwdArgs<T>, FastDivmod, FastDivmod, Seqs) = nullptr;
    auto pick = [&](auto v) {
      constexpr int V = decltype(v)::value;
      if constexpr (compiled<T, Family::cf_bwd>(V, 1)) {
        constexpr Silu kOn = Silu::on, kOff = Silu::off;
        kernel = vec ? (a.silu ? conv_bwd_cf<T, W, V, true, Seqs, kOn>
                               : conv_bwd_cf<T, W, V, true, Seqs, kOff>)
                     : (a.silu ? conv_bwd_cf<T, W, V, false, Seqs, kOn>
                               : conv_bwd_cf<T, W, V, false, Seqs, kOff>);
      }
    };
    switch (vecs) {
      case 1: pick(std::integral_constant<int, 1>{}); break;
      case 2: pick(std::integral_constant<int, 2>{}); break;
      case 4: pick(std::integral_constant<int, 4>{}); break;
      default: throw std::invalid_argument("conv_bwd_cf: vectors per lane must be 1, 2 or 4");
    }
    if (!kernel)
      throw std::invalid_argument("conv_bwd_cf: chapter 10 does not compile " +
                                  std::to_string(vecs) + " vectors a lane for this type");
    launch_or_describe("conv_bwd_cf", kernel, blocks, kCfBwdThreads, s, facts, a, by_chunks, by_dim,
                       seqs);
  });
}

}  // namespace conv1d::ch10
