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
// tap) says which taps lie at or after t = 0, and only those count; otherwise every tap does. Most
// outputs are far from t = 0: they take the unmasked form, W fused multiply-adds and no tests,
// which matters in a kernel that has a budget of a few instructions per element (16-bit storage at
// the copy ceiling).
template <int W, bool kMasked = true>
__device__ __forceinline__ float conv_output(const Filter<W>& f, const float* in, unsigned valid,
                                             bool silu) {
  float acc = f.bias;
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

// Calls f(std::integral_constant<int, R>) for the R of kRows... that equals `rows` (the launchers'
// rows per thread or warp, a template parameter of their kernels); false if none does.
template <int... kRows, class F>
bool with_rows(int rows, F&& f) {
  return ((rows == kRows ? (f(std::integral_constant<int, kRows>{}), true) : false) || ...);
}

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
// filter, and only the first W-1 outputs of a row need their taps masked. The filter is loaded
// here, before the kernel waits for x, so that the two loads overlap instead of following each
// other.
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

// The outputs of one vector. A vector across the end of a row (L not a multiple of kPer, or L
// shorter than a vector) takes the general path, element by element.
template <class T, int W>
__device__ __forceinline__ void cf_outputs(const DirectArgs<T>& a, const FastDivmod& by_len,
                                           const FastDivmod& by_dim, int64_t e0, const CfSpot<W>& s,
                                           const CfWindow<T, W>& win, float* y) {
  constexpr int kPer = kPer16<T>;
  if (s.one_row && s.t0 >= W - 1) {  // every output of the vector has all its taps
#pragma unroll
    for (int i = 0; i < kPer; ++i) y[i] = conv_output<W, false>(s.f, &win.v[i], 0, a.silu);
  } else if (s.one_row) {  // the start of a row
#pragma unroll
    for (int i = 0; i < kPer; ++i)
      y[i] = conv_output<W>(s.f, &win.v[i], taps_inside<W>(s.t0 + i), a.silu);
  } else {
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
      int64_t r, t;
      by_len.divmod(e0 + i, &r, &t);
      const Filter<W> f = load_filter<W>(a, r - by_dim.div(r) * a.dim);
      y[i] = conv_output<W>(f, &win.v[i], taps_inside<W>(t), a.silu);
    }
  }
}

// The 4-byte words of a vector that hold its last W-1 elements: all a neighbour needs as its halo.
template <class T, int W>
constexpr int kHaloFirstWord = (kPer16<T> - (W - 1)) * static_cast<int>(sizeof(T)) / 4;

}  // namespace conv1d::ch08
