// Chapter 10: what chapter 08's and 09's kernels become when a row may hold several sequences, or
// start from a state. Whether tap k of output t counts depends on the token, not on the channel,
// so this chapter's copies of those kernels (direct_forward/, direct_backward/) ask a sequence
// policy (a small struct passed by value: PackedRows and Varlen in sequences.cuh) about
// positions, never about channels:
//
//   span<W, kOwn, kAhead>(b, lo)   the outputs lo .. lo+kOwn+kAhead-1 of row b together: full
//                                  (every one counts all W taps and none is a sequence edge),
//                                  padding (the first kOwn are all padding: exactly 0) or mixed;
//   flags_of<W, N>(b, lo)          for a mixed range, the flag byte of each output (fl[i]);
//   flags<W>(b, t)                 the flag byte of one output;
//   batches<W, kBatch>(b, t0, s)   for a tile from t0 whose span is s, its batches of kBatch
//                                  outputs asked in order: c.span(t), and c.flags(t) for a mixed
//                                  one (cl_staged).
//
// Full is the answer almost everywhere, and there the kernels run chapter 08's and 09's code;
// only near a sequence's edges do they look at each position. The policies keep their rare work
// out of line (member functions that are not inlined, so that their registers do not count
// against the common path), and such a call needs the policy's address. Of a plain kernel
// parameter the compiler makes a copy on the stack, which every thread writes at the kernel's start
// whether it ever calls one or not; the channel-last kernels take the policy as a
// `const __grid_constant__` parameter, whose address is the parameter itself.
//
// This file holds the vocabulary of those answers, and what the kernels share of it.
#pragma once

#include <cstdint>

#include "chapters/08_direct_forward/direct_common.cuh"
#include "chapters/09_direct_backward/bwd_common.cuh"

namespace conv1d::ch10 {

// Chapter 08's and 09's names this chapter's kernels use as they are.
using ch08::bit_cast;
using ch08::conv_output;
using ch08::DirectArgs;
using ch08::Filter;
using ch08::from_floats;
using ch08::kAllTaps;
using ch08::load_filter;
using ch08::taps_inside;
using ch08::with_rows;
using ch08::zero_vec;
using ch09::BwdArgs;
using ch09::dz_at;
using ch09::emit_sums;
using ch09::GradSums;
using ch09::PartialLayout;
using ch09::warp_sum;

// Whether a kernel applies SiLU: asked of the arguments at run time, or compiled in or out. With
// several forms in one kernel (the full one and the one by the flags), the test and the SiLU code
// in every form made the kernels wait on their instruction fetch; a kernel compiled twice, with
// SiLU and without, holds half the code each.
enum class Silu : uint8_t { runtime, off, on };
template <Silu S, class Args>
__device__ __forceinline__ bool silu_in(const Args& a) {
  return S == Silu::runtime ? a.silu : S == Silu::on;
}

// A flag byte: bits 0 .. W-1 the taps that count (tap k reads t - (W-1) + k; it counts when that
// input lies in t's sequence, at or after its start; none: t is padding, its output exactly 0).
// kEdge: t is one of the first W-1 outputs of a sequence that starts from a state, so some of its
// taps read the state (the sequence policy computes those outputs). kFinalShift: in the backward,
// 1 + j in two bits when dx at t also receives the gradient of final state j.
constexpr unsigned kEdge = 0x80u;
constexpr unsigned kFinalShift = 4;

enum class Span : uint8_t { full, padding, mixed };

// The flag bytes of N outputs, four to a register (a byte array would take a register per byte).
template <int N>
struct TokenFlags {
  static constexpr int kWords = (N + 3) / 4;
  uint32_t w[kWords];
  __device__ __forceinline__ unsigned operator[](int i) const {
    return w[i / 4] >> (8 * (i % 4)) & 0xFFu;
  }
  // Every output's byte f (filled(0): none yet).
  static __device__ __forceinline__ TokenFlags filled(unsigned f) {
    TokenFlags m;
#pragma unroll
    for (int i = 0; i < kWords; ++i) m.w[i] = 0x01010101u * f;
    return m;
  }
  // Output i's byte f, into a place still 0.
  __device__ __forceinline__ void put(int i, unsigned f) { w[i / 4] |= f << (8 * (i % 4)); }
};

// The taps an output keeps: those that count and, for an edge output, the ones before its
// sequence's start, which read the state (the lowest tap that counts is the sequence's first
// input; x | (x - 1) sets every bit below the lowest set one).
template <int W>
__device__ __forceinline__ unsigned taps_with_state(unsigned flags) {
  const unsigned taps = flags & kAllTaps<W>;
  return flags & kEdge ? (taps | (taps - 1)) & kAllTaps<W> : taps;
}

// A cursor whose every position counts every tap.
template <int W>
struct AllTaps {
  __device__ __forceinline__ unsigned next() { return kAllTaps<W>; }
};

// A cursor over flag bytes a thread keeps in shared memory (a row of words of its own): a walk that
// unrolls fully reads them at offsets the compiler knows, and they take no registers.
struct SharedFlags {
  const uint32_t* row;
  int i = 0;
  __device__ __forceinline__ unsigned next() {
    const unsigned f = row[i / 4] >> (8 * (i % 4)) & 0xFFu;
    ++i;
    return f;
  }
};

// [docs:ch10_output_or_padding]
// Chapter 08's conv_output for an output by its taps (`valid`), where padding may occur: no tap
// counts for padding, and its output is exactly 0 (no bias, and silu(0) = 0).
template <int W>
__device__ __forceinline__ float output_or_padding(const Filter<W>& f, const float* in,
                                                   unsigned valid, bool silu) {
  float acc = !(valid & kAllTaps<W>) ? 0.0f : f.bias;
#pragma unroll
  for (int k = 0; k < W; ++k)
    if (valid >> k & 1u) acc += f.w[k] * in[k];
  return silu_if(acc, silu);
}
// [/docs:ch10_output_or_padding]

// Chapter 08's cl_outputs (cl_vector.cuh) the same way: N channels' outputs at one time step,
// each by the taps in `valid` (kAllInside: every tap counts), padding exactly 0.
template <class T, int W, int N, bool kAllInside>
__device__ __forceinline__ Vec<T, N> cl_outputs_or_padding(const Filter<W> (&f)[N],
                                                           const Vec<T, N> (&in)[W], unsigned valid,
                                                           bool silu) {
  float y[N], taps[N][W];
#pragma unroll
  for (int i = 0; i < N; ++i)
#pragma unroll
    for (int k = 0; k < W; ++k) taps[i][k] = to_float(in[k].v[i]);
  if (kAllInside || valid == kAllTaps<W>) {  // every row but the first W-1 of a sequence
#pragma unroll
    for (int i = 0; i < N; ++i) y[i] = conv_output<W, false>(f[i], taps[i], valid, silu);
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) y[i] = output_or_padding<W>(f[i], taps[i], valid, silu);
  }
  return from_floats<T, N>(y);
}

// Chapter 09's dz where only the taps in `taps` count: the others' inputs are taken as 0, so their
// products add exactly nothing.
template <int W>
__device__ __forceinline__ float dz_masked(const Filter<W>& f, const float* x_window, unsigned taps,
                                           float dout, bool silu) {
  float in[W];
#pragma unroll
  for (int k = 0; k < W; ++k) in[k] = taps >> k & 1u ? x_window[k] : 0.0f;
  return dz_at<W>(f, in, dout, silu);
}

// Which launch configurations of a kernel family this chapter compiles. Chapters 08 and 09 compile
// every one their command lines offer; this chapter's kernels are large and each configuration is
// another one, so it compiles those the default launch choices take: at most as many vectors or
// rows per thread as those choose for T, and the widest access or single elements (for D of any
// size).
enum class Family { cf_fwd, cl_fwd, cl_staged, cf_bwd, cl_bwd, cl_bwd_staged };
template <class T, Family F>
constexpr bool compiled(int size, int access) {
  const bool half = sizeof(T) == 2;
  switch (F) {
    case Family::cf_fwd: return size <= 2;
    case Family::cl_fwd: return size <= (half ? 16 : 32) && (access == kPer16<T> || access == 1);
    case Family::cl_staged: return half && (size == 64 || size == 16);  // (fp32: cl_tiled only)
    case Family::cf_bwd: return size <= (half ? 4 : 2);
    case Family::cl_bwd:
      return size <= (half ? 32 : 64) && (access == (half ? 4 : 2) || access == 1);
    case Family::cl_bwd_staged: return size == 64 || size == 16;
  }
  return false;
}

// Blocks of 128 threads a multiprocessor must hold of a channel-last kernel with packed sequences:
// as many as of chapter 08's or 09's kernel of its launch configuration (at most 168 registers a
// thread for every configuration this chapter compiles, 3 blocks). The packed kernel's rare paths
// would take more, and every thread would pay for it in occupancy; held to 170, the compiler keeps
// the difference out of the plain path.
constexpr int kPackedMinBlocks = 3;

}  // namespace conv1d::ch10
