// Chapter 10: chapter 08's chunked kernel (chapters/08_direct_forward/cf_chunked.cuh) for packed
// rows of any length, taught the sequence policy. Each vector asks the policy for its span; a warp
// whose vectors are all full takes chapter 08's unmasked form, any other takes each output by its
// flags, and a row's first vector and a vector across rows are left to the policy
// (cf_row_edges.cuh, after this kernel). The chunked kernel runs channel-first rows whose length is
// not a multiple of the vector; the others take the staged kernel (cf_staged.cuh beside this).
#pragma once

#include <stdexcept>
#include <string>
#include <type_traits>

#include "chapters/08_direct_forward/cf_chunked.cuh"
#include "chapters/10_packed_sequences/policy.cuh"
#include "common/launch.cuh"
#include "common/warp.cuh"

namespace conv1d::ch10 {

using ch08::cf_spot;
using ch08::cf_window;
using ch08::CfSpot;
using ch08::CfWindow;
using ch08::kChunkedThreads;
using ch08::kHaloFirstWord;
using ch08::load_or_tail;
using ch08::require_vector_alignment;
using ch08::store_or_tail;

// Which vectors the policy computes itself, after the kernel: those across the end of a row and
// those at a row's start, whose taps may reach into its initial states. They are a few in a
// thousand, and their work (the state, the final states, a flag per element) would cost every
// thread of the kernel registers even where it never runs: left out, the kernel keeps close to
// chapter 08's registers. t0: the position of the vector's first element in its row.
template <int W, int kPer>
__host__ __device__ constexpr bool cf_left_to_policy(int64_t t0, int64_t seqlen) {
  return t0 < W - 1 || t0 + kPer > seqlen;
}

// The span of the vector at e0 (the policy reads the ids). Past the tensor: full (nothing is
// stored there).
template <class T, int W, class Seqs>
__device__ __forceinline__ Span cf_span(const DirectArgs<T>& a, const Seqs& seqs,
                                        const FastDivmod& by_len, const FastDivmod& by_dim,
                                        int64_t e0, const CfSpot<W>& s) {
  if (e0 >= a.elements()) return Span::full;
  if (!s.one_row) return Span::mixed;
  return seqs.template span<W, kPer16<T>, 0>(by_dim.div(by_len.div(e0)), s.t0);
}

// The outputs of one vector: every tap (all but a few vectors), none (padding), or each by its
// flags. `span`: the vector's, as cf_span gives it; `warp_full`: every vector the warp takes now is
// full (otherwise every lane takes the masked form, so that the warp runs one form). False: the
// vector is the sequence policy's (cf_left_to_policy), and there is nothing to store.
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
  if (span == Span::padding) {
#pragma unroll
    for (int i = 0; i < kPer; ++i) y[i] = 0.0f;
  } else if (span == Span::full || !cf_left_to_policy<W, kPer>(s.t0, a.seqlen)) {  // by the flags
    const int64_t b = by_dim.div(by_len.div(e0));
    TokenFlags<kPer> m = TokenFlags<kPer>::filled(kAllTaps<W>);
    if (span != Span::full) m = seqs.template vector_flags<W, kPer>(b, s.t0);
#pragma unroll
    for (int i = 0; i < kPer; ++i) y[i] = output_or_padding<W>(s.f, &win.v[i], m[i], a.silu);
  } else {  // a row's start or a vector across rows: the policy's, after the kernel
    return false;
  }
  return true;
}

// Its span tests and masked vectors take more registers than chapter 08's 48; held to 64
// (kPackedCfMinBlocks), a multiprocessor still holds 32 of its warps (chapter 08's kernel: 40).
constexpr int kPackedCfMinBlocks = 8;

// [docs:ch10_cf_chunked]
template <class T, int W, int kVecs, class Seqs>
__global__ void __launch_bounds__(kChunkedThreads, kPackedCfMinBlocks)
    conv_fwd_cf_chunked(DirectArgs<T> a, FastDivmod by_len, FastDivmod by_dim, Seqs seqs) {
  constexpr int kPer = kPer16<T>;
  const int64_t n = a.elements();
  const int lane = threadIdx.x % kWarpLanes;
  const int64_t warp = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / kWarpLanes;
  const int64_t chunk0 = warp * kVecs * kWarpLanes * kPer;  // first element of the warp's chunk
  auto first_element = [&](int j) { return chunk0 + (int64_t(j) * kWarpLanes + lane) * kPer; };

  // 1. Every load first: the chunk's vectors, their filters, and the halo of the whole chunk (lane 0).
  Vec<T, kPer> cur[kVecs];
#pragma unroll
  for (int j = 0; j < kVecs; ++j)
    cur[j] = first_element(j) < n ? load_or_tail<T, kPer>(a.x, first_element(j), n)
                                  : zero_vec<T, kPer>();
  CfSpot<W> spot[kVecs];  // and their filters, loaded while the vectors are on their way
#pragma unroll
  for (int j = 0; j < kVecs; ++j) spot[j] = cf_spot<T, W>(a, by_len, by_dim, first_element(j));
  Bytes16 carry{};  // lane 0: the vector before its next one
  if (lane == 0 && chunk0 > 0 && chunk0 < n)
    carry = *reinterpret_cast<const Bytes16*>(a.x + chunk0 - kPer);

    // 2. Down the chunk: each vector's halo from the lane below, lane 0's from the carry.
#pragma unroll
  for (int j = 0; j < kVecs; ++j) {
    const Bytes16 words = bit_cast<Bytes16>(cur[j]);
    Bytes16 below{}, top{};
#pragma unroll
    for (int w = kHaloFirstWord<T, W>; w < 4; ++w) {
      below.v[w] = shuffle_up(words.v[w], 1);
      top.v[w] = shuffle(words.v[w], kWarpLanes - 1);  // lane 0's halo for vector j + 1
    }
#pragma unroll
    for (int w = kHaloFirstWord<T, W>; w < 4; ++w) below.v[w] = lane == 0 ? carry.v[w] : below.v[w];
    const Vec<T, kPer> prev = bit_cast<Vec<T, kPer>>(below);
    carry = top;
    const int64_t e0 = first_element(j);
    // Where sequences begin: the vector's span, and whether the whole warp's vectors are full (a
    // vote: then no lane takes the masked form).
    const Span span = cf_span<T, W>(a, seqs, by_len, by_dim, e0, spot[j]);
    const bool warp_full = warp_all(span == Span::full);
    float y[kPer];
    if (e0 < n && cf_outputs<T, W>(a, seqs, by_len, by_dim, e0, spot[j], span, warp_full,
                                   cf_window<T, W>(prev, cur[j]), y))
      store_or_tail<T, kPer>(a.out, e0, n, y);
  }
}
// [/docs:ch10_cf_chunked]

// The kernel for kVecs in {1, 2} (ch10::compiled), for the sequences `seqs`.
template <class T, class Seqs>
void launch_cf_chunked(const DirectArgs<T>& a, int width, int vecs_per_thread, cudaStream_t s,
                       KernelFacts* facts, const Seqs& seqs) {
  require_vector_alignment(a);
  const FastDivmod by_len(a.seqlen), by_dim(a.dim);
  const int64_t vectors = ceil_div(a.elements(), kPer16<T>);
  const int64_t warps = ceil_div(vectors, int64_t(vecs_per_thread) * kWarpLanes);
  const int64_t blocks = ceil_div(warps * kWarpLanes, kChunkedThreads);
  dispatch_width(width, [&](auto w) {
    constexpr int W = decltype(w)::value;
    void (*kernel)(DirectArgs<T>, FastDivmod, FastDivmod, Seqs) = nullptr;
    auto pick = [&](auto v) {
      constexpr int V = decltype(v)::value;
      if constexpr (compiled<T, Family::cf_fwd>(V, 1)) kernel = conv_fwd_cf_chunked<T, W, V, Seqs>;
    };
    switch (vecs_per_thread) {
      case 1: pick(std::integral_constant<int, 1>{}); break;
      case 2: pick(std::integral_constant<int, 2>{}); break;
      case 4: pick(std::integral_constant<int, 4>{}); break;
      case 8: pick(std::integral_constant<int, 8>{}); break;
      default:
        throw std::invalid_argument("conv_fwd_cf_chunked: vectors per thread must be 1, 2, 4 or 8");
    }
    if (!kernel)
      throw std::invalid_argument(
          "conv_fwd_cf_chunked: chapter 10 compiles 1 or 2 vectors a "
          "thread, not " +
          std::to_string(vecs_per_thread));
    launch_or_describe("conv_fwd_cf_chunked", kernel, blocks, kChunkedThreads, s, facts, a, by_len,
                       by_dim, seqs);
  });
}

}  // namespace conv1d::ch10
