// Chapter 09, step 5 (`staged`, channel-last): cl_tiled's walk down the time, its rows fetched
// ahead into shared memory, a warp across the channels. cl_tiled holds the rows it has asked for
// in registers: two batches of x and dout a lane, 167 registers, three blocks a multiprocessor,
// and every batch copied from the registers it arrived in to the ones the loop computes from.
// Here, as in chapter 08's channel-last staged forward, each lane copies its own rows with
// cp.async into a ring of shared memory three batches deep and reads each row back when it enters
// the window: two batches on their way without a register to hold them, no copies between
// registers, no barrier (a lane reads only what it copied). SiLU is compiled in or out, not asked
// at each step.
//
// A warp is 32 lanes across the channels (a lane's channels are one 8-byte copy: 4 in 16 bits,
// 2 in fp32), so all its lanes stand at the same time step; a block is 4 warps, 4 consecutive
// tiles of kRows steps down the time at the same channels. A lane's sums of its tile go through
// shared memory once the walk is done, the 4 warps added in order: one unit of W+1 sums per
// channel and 4 kRows time steps, the same bits every run.
#pragma once

#include <stdexcept>
#include <string>

#include "chapters/09_direct_backward/cl_tiled.cuh"
#include "common/async_copy.cuh"

namespace conv1d::ch09 {

constexpr int kClsThreads = 128;  // a block: 4 warps, 4 tiles down the time
constexpr int kClsWarps = kClsThreads / kWarpLanes;
constexpr int kClsBatch = 8;      // rows of x and of dout a batch
constexpr int kClsDepth = 3;      // batches in the ring: two on their way while one is computed
constexpr int kClsMinBlocks = 4;  // blocks a multiprocessor: 128 registers, 4 x 48 KB
constexpr int kClsCopyBytes = 8;  // a lane's channels of one row
template <class T>
constexpr int kClsChannels = kClsCopyBytes / int(sizeof(T));
constexpr size_t kClsSmemBytes =  // the ring: [depth][batch row][x, dout][thread], 48 KB a block
    size_t(kClsDepth) * kClsBatch * 2 * kClsThreads * kClsCopyBytes;

// [docs:ch09_cl_staged]
// Rows t .. t + n - 1 of x and dout into a slot of the ring (this lane's column of it), rows from
// L on as zeros; then the group is closed, even when n is 0, so that "all but the newest
// kClsDepth - 1 groups" is always the batch the walk needs next. A whole batch inside the tensor
// (all but a row's last) takes its rows' addresses by sums from one product, not a product a row.
template <class T, int N>
__device__ __forceinline__ void cls_fetch(const T* x, const T* g, int64_t t, int n, int64_t len,
                                          int64_t dim, bool channels, Vec<T, N>* slot) {
  if (n == kClsBatch && channels && t + kClsBatch <= len) {  // a whole batch inside the tensor
    const T* xr = x + t * dim;
    const T* gr = g + t * dim;
#pragma unroll
    for (int r = 0; r < kClsBatch; ++r, xr += dim, gr += dim) {
      copy8_async(slot + (2 * r) * kClsThreads, xr, kClsCopyBytes);
      copy8_async(slot + (2 * r + 1) * kClsThreads, gr, kClsCopyBytes);
    }
  } else {
#pragma unroll
    for (int r = 0; r < kClsBatch; ++r) {
      if (r < n) {
        const bool in = channels && t + r < len;
        const int64_t at = in ? (t + r) * dim : 0;
        copy8_async(slot + (2 * r) * kClsThreads, x + at, in ? kClsCopyBytes : 0);
        copy8_async(slot + (2 * r + 1) * kClsThreads, g + at, in ? kClsCopyBytes : 0);
      }
    }
  }
  async_commit();
}

// [docs:ch09_cl_staged_kernel]
template <class T, int W, int kRows, bool kSilu>
__global__ void __launch_bounds__(kClsThreads, kClsMinBlocks)
    conv_bwd_cl_staged(BwdArgs<T> a, FastDivmod by_cols, FastDivmod by_units) {
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

  GradSums<W> sums[N];
  if (t0 < len) {
    // While they travel: the filters, and the W-1 rows of x before the tile.
    Filter<W> f[N];
#pragma unroll
    for (int i = 0; i < N; ++i) f[i] = load_filter<W>(a.weight, a.bias, channels ? d0 + i : 0);
    float xw[W][N] = {}, dzw[W][N] = {};  // the last W rows of x and of dz, oldest first
#pragma unroll
    for (int k = 1; k < W; ++k)
      if (channels && t0 - W + k >= 0)
        to_floats(*reinterpret_cast<const Vec<T, N>*>(x + (t0 - W + k) * dim), xw[k]);

    // Steps t .. t + n - 1 from a batch's slots: unrolled, the windows renamed rather than moved.
    // dx of row s, W-1 behind step r, where it is one of this tile's rows (from step `from` of
    // the batch on), at `out`, which then moves to the next row.
    auto walk = [&](const Vec<T, N>* rows, int64_t t, auto n, bool own, int from) {
      T* out = dx + (t + from - (W - 1)) * dim;  // the batch's first row of dx
#pragma unroll
      for (int r = 0; r < decltype(n)::value; ++r) {
        float y[N];
        cl_bwd_step<T, W, N>(true, own, kSilu, f, rows[(2 * r) * kClsThreads],
                             rows[(2 * r + 1) * kClsThreads], xw, dzw, sums, y);
        if (r >= from) {
          if (channels && t + r - (W - 1) < len)
            *reinterpret_cast<Vec<T, N>*>(out) = ch08::from_floats<T, N>(y);
          out += dim;
        }
      }
    };
    using Batch = std::integral_constant<int, kClsBatch>;
    using Tail = std::integral_constant<int, W - 1>;
#pragma unroll 1
    for (int i = 0; i < kBatches; ++i) {
      async_wait<kClsDepth - 1>();  // batch i has landed (this lane's copies)
      walk(ring + (i % kClsDepth) * kSlot, t0 + int64_t(i) * kClsBatch, Batch{}, true,
           i > 0 ? 0 : W - 1);
      fetch(i + kClsDepth);  // into the slots just read
    }
    async_wait<kClsDepth - 1>();  // the tail
    walk(ring + (kBatches % kClsDepth) * kSlot, t0 + kRows, Tail{}, false, 0);
  }

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
// [/docs:ch09_cl_staged_kernel]
// [/docs:ch09_cl_staged]

// Whether the staged kernel takes these tensors: a lane's channels one 8-byte copy (D a multiple
// of 4 in 16 bits, of 2 in fp32; x, dout and dx 8-byte aligned). cl_tiled takes any D.
template <class T>
bool cl_staged_bwd_takes(const BwdArgs<T>& a) {
  constexpr int N = kClsChannels<T>;
  return a.dim % N == 0 && aligned_to(a.x, kClsCopyBytes) && aligned_to(a.dout, kClsCopyBytes) &&
         aligned_to(a.dx, kClsCopyBytes);
}

// Time steps a warp: 64 where that still gives the GPU two waves of full blocks, else 32, else
// 16; `rows` > 0 asks for one.
inline int64_t cl_staged_bwd_units(int64_t seqlen, int rows) {
  return std::max<int64_t>(1, ceil_div(seqlen, int64_t(kClsWarps) * rows));
}
inline int cl_staged_bwd_rows(int64_t batch, int64_t seqlen, int64_t dim, int channels,
                              int sm_count, int rows = 0) {
  if (rows > 0) return rows;
  const int64_t cols = ceil_div(dim, int64_t(kWarpLanes) * channels);
  for (int r : {64, 32})
    if (batch * cl_staged_bwd_units(seqlen, r) * cols >= int64_t(sm_count) * kClsMinBlocks * 2)
      return r;
  return 16;
}

template <class T>
void launch_cl_bwd_staged(const BwdArgs<T>& a, int width, int rows, cudaStream_t s = 0,
                          KernelFacts* facts = nullptr) {
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
    void (*kernel)(BwdArgs<T>, FastDivmod, FastDivmod) = nullptr;
    auto pick = [&](auto r) {
      constexpr int R = decltype(r)::value;
      kernel = a.silu ? conv_bwd_cl_staged<T, W, R, true> : conv_bwd_cl_staged<T, W, R, false>;
    };
    if (!ch08::with_rows<16, 32, 64>(rows, pick))
      throw std::invalid_argument("conv_bwd_cl_staged: rows per warp must be 16, 32 or 64");
    launch_smem_or_describe("conv_bwd_cl_staged", kernel, a.batch * units * cols, kClsThreads,
                            kClsSmemBytes, s, facts, a, by_cols, by_units);
  });
}

}  // namespace conv1d::ch09
