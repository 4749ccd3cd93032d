// Chapter 09, channel-first (`cf_fused`): dx, and each warp's share of dweight and dbias, in one
// pass over x and dout. A warp takes a chunk of one row (b, d): kVecs * 32 vectors of 16 bytes,
// lane l holding vectors l, l + 32, ... as chapter 08's chunked kernel does. Around each vector a
// lane needs two halos, one on each side:
//
//   behind  the W-1 inputs before its first position (for z, and for dweight's taps): the last
//           elements of the vector one lane down, by shuffle, as in the forward;
//   ahead   dz at the W-1 positions after its last one (dx[s] reads dz up to s + W-1): the first dz
//           values of the vector one lane up, by shuffle once that lane has computed them.
//
// The lane at the end of a vector row (lane 31) gets its dz ahead from lane 0's next vector, so the
// vectors are taken last to first; for the chunk's very last vector it computes those W-1 dz values
// itself from the next chunk's first elements. The sums of dweight and dbias a lane gathered are
// added across the warp by a fixed butterfly: one unit of W+1 sums per chunk, the same bits every
// run, whatever the block size. Rows are 16-byte aligned when L is a multiple of the vector (kVec);
// otherwise the same kernel loads element by element. (Chapter 10's packed kernel can give a row
// fewer lanes, kRowLanes, and a warp several rows side by side: then "lane 0" and "lane 31" above
// are the first and last of a row's lanes, and each row's chunk is a unit of its own.)
#pragma once

#include <stdexcept>
#include <string>
#include <type_traits>

#include "chapters/09_direct_backward/bwd_common.cuh"
#include "common/fast_divmod.h"
#include "common/launch.cuh"

namespace conv1d::ch09 {

// kPer elements from position p0 of one row of length L (zeros past L); one 16-byte access when
// kVec and the vector lies inside the row.
template <class T, int kPer, bool kVec>
__device__ __forceinline__ Vec<T, kPer> load_in_row(const T* __restrict__ row, int64_t p0,
                                                    int64_t len) {
  if (kVec && p0 + kPer <= len) return *reinterpret_cast<const Vec<T, kPer>*>(row + p0);
  Vec<T, kPer> v;
#pragma unroll
  for (int i = 0; i < kPer; ++i) v.v[i] = p0 + i < len ? row[p0 + i] : from_float<T>(0.0f);
  return v;
}

// ...and kPer outputs stored there (the ones past L dropped).
template <class T, int kPer, bool kVec>
__device__ __forceinline__ void store_in_row(T* __restrict__ row, int64_t p0, int64_t len,
                                             const float* y) {
  const Vec<T, kPer> v = ch08::from_floats<T, kPer>(y);
  if (kVec && p0 + kPer <= len) {
    *reinterpret_cast<Vec<T, kPer>*>(row + p0) = v;
    return;
  }
  for (int i = 0; i < kPer && p0 + i < len; ++i) row[p0 + i] = v.v[i];
}

// The W-1 last elements of a vector, as floats (the halo behind the next one).
template <class T, int W>
__device__ __forceinline__ void tail_of(const Vec<T, kPer16<T>>& v, float* out) {
#pragma unroll
  for (int j = 0; j < W - 1; ++j) out[j] = to_float(v.v[kPer16<T> - (W - 1) + j]);
}

// [docs:ch09_cf_fused]
template <class T, int W, int kVecs, bool kVec, Silu kSilu, class Seqs, int kRowLanes = kWarpLanes>
__device__ __forceinline__ void cf_fused(const BwdArgs<T>& a, const FastDivmod& by_chunks,
                                         const FastDivmod& by_dim, const Seqs& seqs) {
  constexpr int kPer = kPer16<T>, kRows = kWarpLanes / kRowLanes;
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

    // Where sequences begin (chapter 10): when every vector of the warp counts every tap of every
    // position it touches, the plain step; otherwise every lane takes the step with flags (a vote,
    // so the warp runs one form, and the shuffles inside it see every lane). A span map also tells
    // two cheaper forms apart: a warp all padding, and (16-bit storage) a warp whose vectors see at
    // most one sequence boundary each (the cut form: a comparison a tap, no flags). In fp32 the
    // kernel is at the copy ceiling with the flags, and the cut form's registers would cost it
    // occupancy.
    constexpr bool kCutForm = Seqs::kSpanMap && sizeof(T) == 2;
    LaneForm lf;
    if constexpr (Seqs::kSpanMap) {
      lf = Seqs::lane_form(seqs.template lane_byte<kPer>(b, p0));
    } else {
      const Span span = seqs.template span<W, kPer, W - 1>(b, p0);
      lf = {span == Span::full ? Form::full : Form::flags, kNoCut};
    }
    auto step = [&](auto form, const auto& sq) {  // (sq: seqs, for names only a packed policy has)
      constexpr Form kForm = decltype(form)::value;
      constexpr bool kFull = kForm == Form::full, kCut = kForm == Form::cut;
      if constexpr (kForm == Form::padding) {
        // No dz, no dx, no sums; lane 31's dz ahead for the next vector is lane 0's here: 0.
#pragma unroll
        for (int i = 0; i < W - 1; ++i) dz_next[i] = 0.0f;
        const float y[kPer] = {};
        if (p0 < len && live) store_in_row<T, kPer, kVec>(a.dx + row * len, p0, len, y);
        return;
      }
      TokenFlags<kPer + W - 1> fl;  // the vector's positions and the W-1 after them
      if constexpr (kForm == Form::flags) {
        if (lf.form == Form::full) {
          fl = TokenFlags<kPer + W - 1>::filled(kAllTaps<W>);
        } else if constexpr (Seqs::kSpanMap) {  // (a map in memory holds them, edges' bits too)
          fl = sq.template vector_flags<W, kPer + W - 1>(b, p0);
        } else if (p0 >= W - 1 && !sq.near_final(p0 + kPer + W - 1, W)) {  // inline: no edges
          fl = sq.template vector_flags<W, kPer + W - 1>(b, p0);
        } else {  // (out of line: a row's first or last vectors)
          fl = sq.template flags_of<W, kPer + W - 1>(b, p0);
        }
      }
      // A row that starts from its state: the state is the x before 0 (the cut form: where there
      // is one).
      if constexpr (!kFull && Seqs::kPacked)
        if (p0 == 0 && (kCut || (fl[0] & kEdge))) {
          const T* st = sq.template state_at<W>(b, 0, d);
#pragma unroll
          for (int i = 0; i < W - 1; ++i)
            if (st) xw[i] = to_float(st[i]);
        }
      // Does tap k of position p0 + t count (t < kPer + W-1), and (z_counts) with an edge's state
      // taps? The taps of position p0 + i that count, for the flags.
      auto z_taps = [&](int i) { return kFull ? kAllTaps<W> : ch08::taps_with_state<W>(fl[i]); };
      auto counts = [&](int t, int k) {
        return kFull || (kCut ? counts_across<W>(t, k, lf.cut) : (fl[t] >> k & 1u) != 0);
      };
      auto z_counts = [&](int t, int k) {
        return kFull || (kCut ? counts_across<W>(t, k, lf.cut) : (z_taps(t) >> k & 1u) != 0);
      };
      // dz at position p0 + t from its window and dout (0 at padding).
      auto dz_of = [&](const float* win, int t, float g) {
        if constexpr (kCut) {
          float in[W];
#pragma unroll
          for (int k = 0; k < W; ++k) in[k] = counts_across<W>(t, k, lf.cut) ? win[k] : 0.0f;
          return dz_at<W>(f, in, g, silu);
        } else {
          return z_taps(t) ? dz_masked<W>(f, win, z_taps(t), g, silu) : 0.0f;
        }
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
        if constexpr (kCut) {  // (the final states are the row's last sequence's: from the cut on)
          if (i >= kPer - (W - 1) && (i >= lf.cut || lf.cut == kNoCut) && p0 + i < len &&
              sq.near_final(p0 + i + 1, W))
            acc = sq.template dfinal_at<W>(b, p0 + i, d, int(p0 + i - (len - (W - 1))));
        } else if constexpr (!kFull && Seqs::kPacked) {
          if (const unsigned fin = fl[i] >> kFinalShift & 3u)
            acc = sq.template dfinal_at<W>(b, p0 + i, d, int(fin) - 1);
        }
#pragma unroll
        for (int k = 0; k < W; ++k)
          if (counts(i + (W - 1) - k, k)) acc += f.w[k] * dz[i + (W - 1) - k];
        y[i] = acc;
#pragma unroll
        for (int k = 0; k < W; ++k)
          if (z_counts(i, k)) sums.v[k] += dz[i] * xw[i + k];
        sums.v[W] += dz[i];
      }
      if constexpr (!kFull && Seqs::kPacked)  // (the cut form: outputs before the cut reach t = 0)
        if (p0 == 0 && live)
          sq.template row_dinit<W>(b, d, f, dz, [&](int i) {
            return kCut ? (i < lf.cut ? kAllTaps<W> : 0u) : fl[i];
          });
      if (p0 < len && live) store_in_row<T, kPer, kVec>(a.dx + row * len, p0, len, y);
    };
    using FullStep = std::integral_constant<Form, Form::full>;
    using FlagsStep = std::integral_constant<Form, Form::flags>;
    // (Chapter 09's rows need no flags: the zeros before t = 0 in xw count for nothing.)
    if constexpr (!Seqs::kPacked) {
      step(FullStep{}, seqs);
    } else if (warp_all(lf.form == Form::full)) {
      step(FullStep{}, seqs);
    } else if constexpr (Seqs::kSpanMap) {
      if (warp_all(lf.form == Form::padding)) {
        step(std::integral_constant<Form, Form::padding>{}, seqs);
      } else if constexpr (kCutForm) {
        if (warp_all(lf.form == Form::full || lf.form == Form::cut))
          step(std::integral_constant<Form, Form::cut>{}, seqs);
        else
          step(FlagsStep{}, seqs);
      } else {
        step(FlagsStep{}, seqs);
      }
    } else {
      step(FlagsStep{}, seqs);
    }
  }

  // 3. The chunk's sums: a fixed butterfly over the warp, then one unit of W+1 sums.
  warp_sum<W>(sums, kRowLanes - 1);
  if (lane == 0 && live) emit_sums<W>(a, row * by_chunks.divisor() + chunk, d, sums);
}

constexpr int kCfBwdThreads = 128;

template <class T, int W, int kVecs, bool kVec, class Seqs = OneSequencePerRow,
          std::enable_if_t<!Seqs::kPacked, int> = 0>
__global__ void conv_bwd_cf(BwdArgs<T> a, FastDivmod by_chunks, FastDivmod by_dim, Seqs seqs) {
  cf_fused<T, W, kVecs, kVec, Silu::runtime>(a, by_chunks, by_dim, seqs);
}
// [/docs:ch09_cf_fused]

// (Chapter 10) the same kernel for packed sequences, held to the occupancy of chapter 09's: 16
// warps an SM in 16-bit storage (at most 128 registers a thread), 32 in fp32 (64); the forms of
// its steps would take more. SiLU or not is compiled in (kSilu: on or off).
template <class T>
constexpr int kPackedCfBwdMinBlocks = sizeof(T) == 2 ? 4 : 8;

// The lanes a row takes (cf_row_lanes): a warp's in chapter 09's kernel. In chapter 10's packed
// kernel in 16-bit storage without SiLU, 8: a warp takes four rows side by side (channels of one
// batch row, whose sequences begin at the same places), so a step spans 64 positions instead of
// 256, and fewer steps take a masked form for the whole warp. (With SiLU the rows' bookkeeping
// made the kernel spill at its 128 registers: it keeps the whole warp a row.)
template <class T>
CONV1D_HOST_DEVICE constexpr int packed_cf_row_lanes(bool silu) {
  return sizeof(T) == 2 && !silu ? 8 : kWarpLanes;
}
template <class T, class Seqs>
CONV1D_HOST_DEVICE constexpr int cf_row_lanes(bool silu) {
  return Seqs::kPacked ? packed_cf_row_lanes<T>(silu) : kWarpLanes;
}
template <class T, int W, int kVecs, bool kVec, class Seqs, Silu kSilu,
          std::enable_if_t<Seqs::kPacked, int> = 0>
__global__ void __launch_bounds__(kCfBwdThreads, kPackedCfBwdMinBlocks<T>)
    conv_bwd_cf(BwdArgs<T> a, FastDivmod by_chunks, FastDivmod by_dim, Seqs seqs) {
  constexpr int kRowLanes = cf_row_lanes<T, Seqs>(kSilu == Silu::on);
  cf_fused<T, W, kVecs, kVec, kSilu, Seqs, kRowLanes>(a, by_chunks, by_dim, seqs);
}

// Vectors per lane when the command line does not say: in 16 bits 4 (at 8x4096x4096 bf16 the
// kernel reached 81 % of the copy ceiling with 4, 58 % with 2 and 49 % with 1, at 122 registers a
// thread with 4; docs/09_direct_backward.md), in fp32 2 (already at the ceiling); fewer for rows
// shorter than a warp's chunk (a chunk never spans two rows).
inline int cf_bwd_vectors(int64_t seqlen, int per16, int requested = 0) {
  if (requested > 0) return requested;
  for (int v = per16 >= 8 ? 4 : 2; v > 1; v /= 2)
    if (seqlen >= int64_t(v) * kWarpLanes * per16) return v;
  return 1;
}

// Chunks per row: the units of the deterministic sums (a row of the partial buffer each); a chunk
// is `vecs` vectors of each of a row's `row_lanes` lanes.
inline int64_t cf_bwd_chunks(int64_t seqlen, int per16, int vecs, int row_lanes = kWarpLanes) {
  return ceil_div(seqlen, int64_t(vecs) * row_lanes * per16);
}

// Where conv_bwd_cf's units lie in the partial-sum buffer, for reduce_partials: the unit of chunk c
// of row (b*D + d) is row (b*D + d) * chunks + c.
inline PartialLayout cf_bwd_partials(int64_t batch, int64_t dim, int64_t chunks, int width) {
  const int64_t w1 = width + 1;
  return {batch, dim * chunks * w1, chunks, w1, chunks * w1};
}

// For the sequences `seqs` (chapter 10 passes packed ones).
template <class T, class Seqs = OneSequencePerRow>
void launch_cf_bwd(const BwdArgs<T>& a, int width, int vecs, cudaStream_t s = 0,
                   KernelFacts* facts = nullptr, const Seqs& seqs = {}) {
  const int lanes = cf_row_lanes<T, Seqs>(a.silu), rows_a_warp = kWarpLanes / lanes;
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
      if constexpr (!ch08::compiled<Seqs, T, ch08::Family::cf_bwd>(V, 1)) {
      } else if constexpr (Seqs::kPacked) {
        constexpr Silu kOn = Silu::on, kOff = Silu::off;
        kernel = vec ? (a.silu ? conv_bwd_cf<T, W, V, true, Seqs, kOn>
                               : conv_bwd_cf<T, W, V, true, Seqs, kOff>)
                     : (a.silu ? conv_bwd_cf<T, W, V, false, Seqs, kOn>
                               : conv_bwd_cf<T, W, V, false, Seqs, kOff>);
      } else {
        kernel = vec ? conv_bwd_cf<T, W, V, true, Seqs> : conv_bwd_cf<T, W, V, false, Seqs>;
      }
    };
    switch (vecs) {
      case 1: pick(std::integral_constant<int, 1>{}); break;
      case 2: pick(std::integral_constant<int, 2>{}); break;
      case 4: pick(std::integral_constant<int, 4>{}); break;
      default: throw std::invalid_argument("conv_bwd_cf: vectors per lane must be 1, 2 or 4");
    }
    if (!kernel)
      throw std::invalid_argument("conv_bwd_cf: not compiled for " + std::to_string(vecs) +
                                  " vectors with these sequences");
    launch_or_describe("conv_bwd_cf", kernel, blocks, kCfBwdThreads, s, facts, a, by_chunks,
                       by_dim, seqs);
  });
}

}  // namespace conv1d::ch09
