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
// otherwise the same kernel loads element by element.
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
template <class T, int W, int kVecs, bool kVec>
__global__ void conv_bwd_cf(BwdArgs<T> a, FastDivmod by_chunks, FastDivmod by_dim) {
  constexpr int kPer = kPer16<T>;
  const int lane = threadIdx.x % kWarpLanes;
  int64_t row, chunk;  // row = b*D + d
  by_chunks.divmod((blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / kWarpLanes, &row, &chunk);
  if (row >= a.batch * a.dim) return;  // the whole warp: every lane has the same row
  const int64_t len = a.seqlen, p_chunk = chunk * kVecs * kWarpLanes * kPer;
  const int64_t d = row - by_dim.div(row) * a.dim;
  const T* x = a.x + row * len;
  const T* g = a.dout + row * len;
  auto first_of = [&](int j) { return p_chunk + (int64_t(j) * kWarpLanes + lane) * kPer; };
  const Filter<W> f = load_filter<W>(a.weight, a.bias, d);

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
  if (lane == kWarpLanes - 1) {
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
      const uint32_t down = shuffle_up(own.v[w], 1), top = shuffle(prev.v[w], kWarpLanes - 1);
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

    if (j == kVecs - 1) {  // dz after the chunk's last vector, from the x and dout after it
      float win[2 * (W - 1)];
      tail_of<T, W>(xv[kVecs - 1], win);
#pragma unroll
      for (int i = 0; i < W - 1; ++i) win[(W - 1) + i] = to_float(x_after.v[i]);
#pragma unroll
      for (int i = 0; i < W - 1; ++i)
        dz_next[i] = p_next + i < len ? dz_at<W>(f, &win[i], to_float(g_after.v[i]), a.silu) : 0.0f;
    }

    // [docs:ch09_cf_fused_dz_ahead]
    // dz at the vector's positions (zero past L), then at the W-1 after them: the lane above's
    // first ones; lane 31 has them from lane 0's next vector.
    float dz[kPer + (W - 1)];
#pragma unroll
    for (int i = 0; i < kPer; ++i)
      dz[i] = p0 + i < len ? dz_at<W>(f, &xw[i], to_float(gv[j].v[i]), a.silu) : 0.0f;
#pragma unroll
    for (int i = 0; i < W - 1; ++i) {
      const float above = __uint_as_float(shuffle_down(__float_as_uint(dz[i]), 1));
      const float lane0 = __uint_as_float(shuffle(__float_as_uint(dz[i]), 0));
      dz[kPer + i] = lane < kWarpLanes - 1 ? above : dz_next[i];
      dz_next[i] = lane0;  // what lane 31's vector j - 1 has ahead of it
    }
    // [/docs:ch09_cf_fused_dz_ahead]

    // dx (dz[t] reaches dx[s] through tap k = s + (W-1) - t), and the vector's terms of the sums
    // (x before t = 0 is zero in xw, dz past L is zero).
    float y[kPer];
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
      float acc = 0.0f;
#pragma unroll
      for (int k = 0; k < W; ++k) acc += f.w[k] * dz[i + (W - 1) - k];
      y[i] = acc;
#pragma unroll
      for (int k = 0; k < W; ++k) sums.v[k] += dz[i] * xw[i + k];
      sums.v[W] += dz[i];
    }
    if (p0 < len) store_in_row<T, kPer, kVec>(a.dx + row * len, p0, len, y);
  }

  // 3. The chunk's sums: a fixed butterfly over the warp, then one unit of W+1 sums.
  warp_sum<W>(sums, kWarpLanes - 1);
  if (lane == 0) emit_sums<W>(a, row * by_chunks.divisor() + chunk, d, sums);
}
// [/docs:ch09_cf_fused]

constexpr int kCfBwdThreads = 128;

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

// Chunks per row: the units of the deterministic sums (a row of the partial buffer each).
inline int64_t cf_bwd_chunks(int64_t seqlen, int per16, int vecs) {
  return ceil_div(seqlen, int64_t(vecs) * kWarpLanes * per16);
}

// Where conv_bwd_cf's units lie in the partial-sum buffer, for reduce_partials: the unit of chunk c
// of row (b*D + d) is row (b*D + d) * chunks + c.
inline PartialLayout cf_bwd_partials(int64_t batch, int64_t dim, int64_t chunks, int width) {
  const int64_t w1 = width + 1;
  return {batch, dim * chunks * w1, chunks, w1, chunks * w1};
}

template <class T>
void launch_cf_bwd(const BwdArgs<T>& a, int width, int vecs, cudaStream_t s = 0,
                   KernelFacts* facts = nullptr) {
  const int64_t chunks = cf_bwd_chunks(a.seqlen, kPer16<T>, vecs);
  const FastDivmod by_chunks(chunks), by_dim(a.dim);
  const int64_t blocks =
      ceil_div(a.batch * a.dim * chunks * kWarpLanes, int64_t(kCfBwdThreads));  // a warp per chunk
  const bool vec = a.seqlen % kPer16<T> == 0 && aligned_to(a.x, 16) && aligned_to(a.dout, 16) &&
                   aligned_to(a.dx, 16);
  dispatch_width(width, [&](auto w) {
    constexpr int W = decltype(w)::value;
    void (*kernel)(BwdArgs<T>, FastDivmod, FastDivmod) = nullptr;
    auto pick = [&](auto v) {
      constexpr int V = decltype(v)::value;
      kernel = vec ? conv_bwd_cf<T, W, V, true> : conv_bwd_cf<T, W, V, false>;
    };
    switch (vecs) {
      case 1: pick(std::integral_constant<int, 1>{}); break;
      case 2: pick(std::integral_constant<int, 2>{}); break;
      case 4: pick(std::integral_constant<int, 4>{}); break;
      default: throw std::invalid_argument("conv_bwd_cf: vectors per lane must be 1, 2 or 4");
    }
    launch_or_describe("conv_bwd_cf", kernel, blocks, kCfBwdThreads, s, facts, a, by_chunks,
                       by_dim);
  });
}

}  // namespace conv1d::ch09
