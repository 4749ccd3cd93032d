// Chapter 08: what the direct forward kernels share. Each computes
//
//   out[b, d, t] = act( bias[d] + sum_{k<W} weight[d, k] * x[b, d, t - (W-1) + k] ),  x = 0 before t = 0
//
// straight from x: every input read once from memory, every output written once, nothing else.
// Channel-first kernels see x and out as one flat sequence of B*D*L elements (row after row); a
// channel-last kernel sees rows of D channels, one per (batch, time step).
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <type_traits>

#include "chapters/04_bias_epilogue/epilogue.cuh"
#include "common/device_types.cuh"
#include "common/fast_divmod.h"
#include "common/util.h"
#include "common/vec.cuh"

namespace conv1d::ch08 {

template <class T>  // device storage type: float, __half, __nv_bfloat16
struct DirectArgs {
  const T* x;       // [B, D, L] or [B, L, D]
  const T* weight;  // [D, W]
  const T* bias;    // [D], or nullptr
  T* out;           // like x
  int64_t batch, dim, seqlen;
  bool silu;
  CONV1D_HOST_DEVICE int64_t elements() const { return batch * dim * seqlen; }
};

// Whether a kernel applies SiLU: asked of the arguments at run time (chapters 08 and 09's own
// kernels), or compiled in or out (chapter 10's kernels with several forms, where the test and the
// SiLU code in every form made the kernels wait on their instruction fetch). `Args`: any arguments
// with a `silu` flag (this chapter's DirectArgs, chapter 09's BwdArgs).
enum class Silu : uint8_t { runtime, off, on };
template <Silu S, class Args>
__device__ __forceinline__ bool silu_in(const Args& a) {
  return S == Silu::runtime ? a.silu : S == Silu::on;
}

// One channel's filter in fp32: the W taps and the bias (0 without one).
template <int W>
struct Filter {
  float w[W];
  float bias;
};

template <int W, class T>
__device__ __forceinline__ Filter<W> load_filter(const T* weight, const T* bias, int64_t d) {
  Filter<W> f;
#pragma unroll
  for (int k = 0; k < W; ++k) f.w[k] = to_float(weight[d * W + k]);
  f.bias = bias != nullptr ? to_float(bias[d]) : 0.0f;
  return f;
}
template <int W, class T>
__device__ __forceinline__ Filter<W> load_filter(const DirectArgs<T>& a, int64_t d) {
  return load_filter<W>(a.weight, a.bias, d);
}

// Every tap of a W-wide filter, a bit each.
template <int W>
constexpr unsigned kAllTaps = (1u << W) - 1;

// One output from its window: in[k] is the input k - (W-1) steps back. kMasked: `valid` (a bit per
// tap) says which taps count (those at or after t = 0, or in t's packed sequence); otherwise every
// tap does. Most outputs are far from t = 0: they take the unmasked form, W fused multiply-adds and no tests,
// which matters in a kernel that has a budget of a few instructions per element (16-bit storage at
// the copy ceiling).
template <int W, bool kMasked = true, bool kPadding = false>
__device__ __forceinline__ float conv_output(const Filter<W>& f, const float* in, unsigned valid,
                                             bool silu) {
  // kPadding (packed sequences): no tap counts for padding, and its output is exactly 0: no bias,
  // and silu(0) = 0. (Only where padding can occur: the test costs chapter 08's kernels registers.)
  float acc = kPadding && !(valid & kAllTaps<W>) ? 0.0f : f.bias;
#pragma unroll
  for (int k = 0; k < W; ++k)
    if (!kMasked || (valid >> k & 1u)) acc += f.w[k] * in[k];
  return silu_if(acc, silu);
}

// Which taps of output t lie at or after t = 0 (tap k reads position t - (W-1) + k); all of them,
// kAllTaps, from t = W-1 on.
template <int W>
__device__ __forceinline__ unsigned taps_inside(int64_t t) {
  if (t >= W - 1) return kAllTaps<W>;
  const int tt = static_cast<int>(t);
  unsigned valid = 0;
#pragma unroll
  for (int k = 0; k < W; ++k) valid |= (tt - (W - 1) + k >= 0 ? 1u : 0u) << k;
  return valid;
}

// ---------------------------------------------------------------------------------------------
// Where sequences begin. Chapter 08's rows hold one sequence each, starting from zeros at t = 0;
// chapter 10 packs several into a row, or lets them start from states. Whether tap k of output t
// counts depends on the token, not on the channel, so the kernels ask a sequence policy (a small
// struct passed by value; chapter 10 has the packed ones) about positions, never about channels:
//
//   span<W, kOwn, kAhead>(b, lo)   the outputs lo .. lo+kOwn+kAhead-1 of row b together: full
//                                  (every one counts all W taps and none is a sequence edge),
//                                  padding (the first kOwn are all padding: exactly 0) or mixed;
//   flags_of<W, N>(b, lo)          for a mixed range, the flag byte of each output (fl[i]);
//   flags<W>(b, t)                 (chapter 10's own kernels) the flag byte of one output;
//   cursor<W>(b, lo)               the flag bytes of lo, lo+1, ... one after the other (c.next())
//                                  for a walk down the time steps that holds no more than one;
//   batches<W, kBatch>(b, t0, s)   for a tile from t0 whose span is s, its batches of kBatch
//                                  outputs asked in order: c.span(t), and c.flags(t) for a mixed
//                                  one (cl_staged).
//
// OneSequencePerRow answers from t alone: every range from t = W-1 on is full, so in chapter 08
// the test is the one it always was, and the kernels are what they were.
//
// Chapter 10's policies keep their rare work out of line (member functions that are not inlined,
// so that their registers do not count against the common path), and such a call needs the
// policy's address. Of a plain kernel parameter the compiler makes a copy on the stack, which every
// thread writes at the kernel's start whether it ever calls one or not; cl_staged, the kernel
// where that cost a measured share of the time (chapter 10's twentieth version), takes the policy
// as a `const __grid_constant__` parameter, whose address is the parameter itself.

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

struct OneSequencePerRow {
  static constexpr bool kPacked = false;
  static constexpr bool kSpanMap = false;  // (chapter 10: spans and flags from a map in memory)
  static constexpr bool kFewConfigurations = false;  // (see compiled() below)
  static constexpr bool kMixedApart = false;  // (chapter 10: cl_tiled's backward in two launches)
  template <int W, int kOwn, int kAhead>
  __device__ __forceinline__ Span span(int64_t, int64_t lo) const {
    return lo >= W - 1 ? Span::full : Span::mixed;
  }
  // (Computed where each is used: nothing to hold in registers.)
  template <int W>
  struct Lazy {
    int64_t lo;
    __device__ __forceinline__ unsigned operator[](int i) const { return taps_inside<W>(lo + i); }
  };
  template <int W, int N>
  __device__ __forceinline__ Lazy<W> flags_of(int64_t, int64_t lo) const {
    return {lo};
  }
  template <int W>
  struct Cursor {
    int64_t t;
    __device__ __forceinline__ unsigned next() { return taps_inside<W>(t++); }
  };
  template <int W>
  __device__ __forceinline__ Cursor<W> cursor(int64_t, int64_t lo) const {
    return {lo};
  }
  // A mixed tile's batches of kBatch rows, asked in order (cl_staged): each one's span, and a mixed
  // one's flags. Here only a row's first batch is mixed. (Chapter 10's policies remember where
  // they are, so that a batch costs a comparison or two, not a search.)
  template <int W, int kBatch>
  struct Batches {
    __device__ __forceinline__ Span span(int64_t t) const {
      return t >= W - 1 ? Span::full : Span::mixed;
    }
    __device__ __forceinline__ Lazy<W> flags(int64_t t) const { return {t}; }
  };
  template <int W, int kBatch>
  __device__ __forceinline__ Batches<W, kBatch> batches(int64_t, int64_t, Span) const {
    return {};
  }
};

// Which launch configurations of a kernel family are compiled for a sequence policy. Chapters 08
// and 09 compile every one their command lines offer. Chapter 10's kernels are large and each
// configuration is another one, so its policies (kFewConfigurations) compile those the default
// launch choices take: at most as many vectors or rows per thread as those choose for T, and the
// widest access or single elements (for D of any size).
enum class Family { cf_fwd, cl_fwd, cl_staged, cf_bwd, cl_bwd, cl_bwd_staged };
template <class Seqs, class T, Family F>
constexpr bool compiled(int size, int access) {
  if (!Seqs::kFewConfigurations) return true;
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

// Calls f(std::integral_constant<int, R>) for the R of kRows... that equals `rows` (the launchers'
// rows per thread or warp, a template parameter of their kernels); false if none does.
template <int... kRows, class F>
bool with_rows(int rows, F&& f) {
  return ((rows == kRows ? (f(std::integral_constant<int, kRows>{}), true) : false) || ...);
}

// Blocks of 128 threads a multiprocessor must hold of a channel-last kernel with packed sequences
// (chapter 10): as many as of the plain kernel of its launch configuration (at most 168 registers
// a thread for every configuration chapter 10 compiles, 3 blocks). The packed kernel's rare paths
// would take more, and every thread would pay for it in occupancy; held to 170, the compiler
// keeps the difference out of the plain path.
constexpr int kPackedMinBlocks = 3;

// The same bits seen as another type of the same size (the vectors of one storage type and the raw
// 16 bytes that warp shuffles move).
template <class To, class From>
__device__ __forceinline__ To bit_cast(const From& from) {
  static_assert(sizeof(To) == sizeof(From), "same size");
  To to;
  memcpy(&to, &from, sizeof(To));
  return to;
}

// N zeros of T (whatever T's default constructor does).
template <class T, int N>
__device__ __forceinline__ Vec<T, N> zero_vec() {
  Vec<T, N> v;
#pragma unroll
  for (int i = 0; i < N; ++i) v.v[i] = from_float<T>(0.0f);
  return v;
}

// N elements at `p`, one access when they are all inside [0, n), else element by element (zeros
// outside: the tail of the tensor).
template <class T, int N>
__device__ __forceinline__ Vec<T, N> load_or_tail(const T* __restrict__ p, int64_t e0, int64_t n) {
  if (e0 + N <= n) return *reinterpret_cast<const Vec<T, N>*>(p + e0);
  Vec<T, N> v;
#pragma unroll
  for (int i = 0; i < N; ++i) v.v[i] = e0 + i < n ? p[e0 + i] : from_float<T>(0.0f);
  return v;
}

// N fp32 values rounded to T: two at a time for the 16-bit types (one cvt.rn.bf16x2/f16x2
// instruction for two values on sm_80 and later).
template <class T, int N>
__device__ __forceinline__ Vec<T, N> from_floats(const float* y) {
  Vec<T, N> v;
#if !defined(CONV1D_BACKEND_HIP)  // (HIP's bfloat16 of ROCm 5 has no paired conversion)
  if constexpr (N % 2 == 0 && std::is_same_v<T, __nv_bfloat16>) {
#pragma unroll
    for (int i = 0; i < N; i += 2) {
      const __nv_bfloat162 two = __floats2bfloat162_rn(y[i], y[i + 1]);
      v.v[i] = two.x;
      v.v[i + 1] = two.y;
    }
  } else
#endif
      if constexpr (N % 2 == 0 && std::is_same_v<T, __half>) {
#pragma unroll
    for (int i = 0; i < N; i += 2) {
      const __half2 two = __floats2half2_rn(y[i], y[i + 1]);
      v.v[i] = __low2half(two);
      v.v[i + 1] = __high2half(two);
    }
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) v.v[i] = from_float<T>(y[i]);
  }
  return v;
}

template <class T, int N>
__device__ __forceinline__ void store_or_tail(T* __restrict__ p, int64_t e0, int64_t n,
                                              const float* y) {
  const Vec<T, N> v = from_floats<T, N>(y);
  if (e0 + N <= n) {
    *reinterpret_cast<Vec<T, N>*>(p + e0) = v;
  } else {
    for (int i = 0; i < N && e0 + i < n; ++i) p[e0 + i] = v.v[i];
  }
}

// The channel-first vector kernels read and write whole 16-byte vectors of the flat tensor: x and
// out must start on a 16-byte boundary (cudaMalloc's are; an offset view may not be).
template <class T>
void require_vector_alignment(const DirectArgs<T>& a) {
  if (!aligned_to(a.x, 16) || !aligned_to(a.out, 16))
    throw std::invalid_argument(
        "the channel-first vector kernels need x and out 16-byte aligned (the naive kernel "
        "takes any pointer)");
}

// ---------------------------------------------------------------------------------------------
// Channel-first vectors: kPer16<T> outputs at flat indices e0 .. e0 + kPer16 - 1 (e0 a multiple of
// kPer16), from the window win[j] = x[e0 - (W-1) + j]. The flat index is row * L + t with row = b*D + d.

template <class T, int W>
struct CfWindow {
  static constexpr int kPer = kPer16<T>;
  float v[W - 1 + kPer];
};

// The window from the vector itself and the one before it (its last W-1 elements are the halo).
template <class T, int W>
__device__ __forceinline__ CfWindow<T, W> cf_window(const Vec<T, kPer16<T>>& prev,
                                                    const Vec<T, kPer16<T>>& cur) {
  constexpr int kPer = kPer16<T>;
  CfWindow<T, W> win;
#pragma unroll
  for (int j = 0; j < W - 1; ++j) win.v[j] = to_float(prev.v[kPer - (W - 1) + j]);
#pragma unroll
  for (int i = 0; i < kPer; ++i) win.v[W - 1 + i] = to_float(cur.v[i]);
  return win;
}

// Where a vector lies, and its filter. Almost every vector lies inside one row: one channel, one
// filter, and only the first W-1 outputs of a row (or of a packed sequence) need their taps masked.
// The filter is loaded here, before the kernel waits for x, so that the two loads overlap instead
// of following each other.
template <int W>
struct CfSpot {
  int64_t t0;    // position of the vector's first element in its row
  bool one_row;  // the vector lies inside one row (so f is its filter)
  Filter<W> f;
};

template <class T, int W>
__device__ __forceinline__ CfSpot<W> cf_spot(const DirectArgs<T>& a, const FastDivmod& by_len,
                                             const FastDivmod& by_dim, int64_t e0) {
  CfSpot<W> s;
  int64_t row;
  by_len.divmod(e0, &row, &s.t0);
  s.one_row = s.t0 + kPer16<T> <= a.seqlen;
  if (s.one_row) s.f = load_filter<W>(a, row - by_dim.div(row) * a.dim);
  return s;
}

// The outputs of one vector, each by its flags: a row's start. A vector across the end of a row (L
// not a multiple of kPer, or L shorter than a vector) is taken element by element.
template <int N>
struct Outputs {
  float y[N];
};
template <class T, int W>
__device__ __forceinline__ Outputs<kPer16<T>> cf_mixed_outputs(const DirectArgs<T>& a,
                                                               const FastDivmod& by_len,
                                                               const FastDivmod& by_dim, int64_t e0,
                                                               const CfSpot<W>& s,
                                                               const CfWindow<T, W>& win) {
  constexpr int kPer = kPer16<T>;
  Outputs<kPer> o;
  if (s.one_row) {  // the start of a row
#pragma unroll
    for (int i = 0; i < kPer; ++i)
      o.y[i] = conv_output<W>(s.f, &win.v[i], taps_inside<W>(s.t0 + i), a.silu);
  } else {
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
      int64_t r, t;
      by_len.divmod(e0 + i, &r, &t);
      const Filter<W> f = load_filter<W>(a, r - by_dim.div(r) * a.dim);
      o.y[i] = conv_output<W>(f, &win.v[i], taps_inside<W>(t), a.silu);
    }
  }
  return o;
}

// (Chapter 10) Which vectors a packed sequence policy computes itself, after the kernel: those
// across the end of a row and those at a row's start, whose taps may reach into its initial
// states. They are a few in a thousand, and their work (the state, the final states, a flag per
// element) would cost every thread of the kernel registers even where it never runs: left out,
// the kernel keeps close to chapter 08's registers. t0: the position of the vector's first element
// in its row.
template <int W, int kPer>
__host__ __device__ constexpr bool cf_left_to_policy(int64_t t0, int64_t seqlen) {
  return t0 < W - 1 || t0 + kPer > seqlen;
}

// The outputs of one vector: every tap (all but a few vectors), none (padding), or each by its
// flags. `span`: the vector's, as cf_span gives it; `warp_full`: every vector the warp takes now is
// full (chapter 10: otherwise every lane takes the masked form, so that the warp runs one form).
// False: the vector is the sequence policy's (cf_left_to_policy), and there is nothing to store.
template <class T, int W, class Seqs>
__device__ __forceinline__ bool cf_outputs(const DirectArgs<T>& a, const Seqs& seqs,
                                           const FastDivmod& by_len, const FastDivmod& by_dim,
                                           int64_t e0, const CfSpot<W>& s, Span span,
                                           bool warp_full, const CfWindow<T, W>& win, float* y) {
  constexpr int kPer = kPer16<T>;
  if (span == Span::full && warp_full) {
#pragma unroll
    for (int i = 0; i < kPer; ++i) y[i] = conv_output<W, false>(s.f, &win.v[i], 0, a.silu);
    return true;
  }
  if constexpr (Seqs::kPacked) {
    if (span == Span::padding) {
#pragma unroll
      for (int i = 0; i < kPer; ++i) y[i] = 0.0f;
    } else if (span == Span::full || !cf_left_to_policy<W, kPer>(s.t0, a.seqlen)) {  // by the flags
      const int64_t b = by_dim.div(by_len.div(e0));
      TokenFlags<kPer> m = TokenFlags<kPer>::filled(kAllTaps<W>);
      if (span != Span::full) m = seqs.template vector_flags<W, kPer>(b, s.t0);
#pragma unroll
      for (int i = 0; i < kPer; ++i)
        y[i] = conv_output<W, true, true>(s.f, &win.v[i], m[i], a.silu);
    } else {  // a row's start or a vector across rows: the policy's, after the kernel
      return false;
    }
  } else {
    const Outputs<kPer> o = cf_mixed_outputs<T, W>(a, by_len, by_dim, e0, s, win);
#pragma unroll
    for (int i = 0; i < kPer; ++i) y[i] = o.y[i];
  }
  return true;
}

// The span of the vector at e0 (chapter 10's policies read the ids; chapter 08's rows need only
// t0). Past the tensor: full (nothing is stored there).
template <class T, int W, class Seqs>
__device__ __forceinline__ Span cf_span(const DirectArgs<T>& a, const Seqs& seqs,
                                        const FastDivmod& by_len, const FastDivmod& by_dim,
                                        int64_t e0, const CfSpot<W>& s) {
  if (e0 >= a.elements()) return Span::full;
  if (!s.one_row) return Span::mixed;
  int64_t b = 0;  // (the batch only where packed sequences ask for it)
  if constexpr (Seqs::kPacked) b = by_dim.div(by_len.div(e0));
  return seqs.template span<W, kPer16<T>, 0>(b, s.t0);
}

// The 4-byte words of a vector that hold its last W-1 elements: all a neighbour needs as its halo.
template <class T, int W>
constexpr int kHaloFirstWord = (kPer16<T> - (W - 1)) * static_cast<int>(sizeof(T)) / 4;

}  // namespace conv1d::ch08
