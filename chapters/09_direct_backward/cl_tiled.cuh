// Chapter 09, channel-last (`cl_tiled`): chapter 08's tiled forward, run backwards in its meaning
// but forwards in time. A lane keeps N neighbouring channels and walks the time steps of its tile,
// t0 .. t0 + kRows - 1, plus W-1 more: at step t it computes dz[t] (from dout[t] and, with SiLU,
// the window x[t-(W-1) .. t]), and with the last W values of dz in registers dx[t-(W-1)] is
// complete. So each row of x and dout is loaded once per tile (and W-1 rows of each halo),
// kTileBatch rows at a time.
//
// A warp is 8 lanes across the channels (8 N channels, a contiguous run of each row) by 4 lanes
// down the time (4 consecutive tiles). After the walk, the 4 lanes that share channels add their
// sums by a fixed butterfly: one unit of W+1 sums per channel and 4 kRows time steps, the same bits
// every run.
#pragma once

#include <algorithm>
#include <stdexcept>
#include <string>

#include "chapters/08_direct_forward/cl_vector.cuh"
#include "chapters/09_direct_backward/bwd_common.cuh"
#include "common/fast_divmod.h"
#include "common/launch.cuh"

namespace conv1d::ch09 {

constexpr int kClLanesAcross = 8;                          // lanes along D in a warp
constexpr int kClLanesDown = kWarpLanes / kClLanesAcross;  // tiles along L in a warp
constexpr int kTileBatch = 8;                              // rows loaded together
constexpr int kClBwdThreads = 128;                         // a block: 4 warps

template <class T, int N>
__device__ __forceinline__ void to_floats(const Vec<T, N>& v, float (&out)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) out[i] = to_float(v.v[i]);
}

// 16 bytes of zeros in global memory: what the walk reads for a row outside the tile's range
// (below). (Each file that includes this has its own copy.)
static __device__ __align__(16) const float kZeroRow[4] = {};

// [docs:ch09_cl_step]
// One step of a channel-last walk (cl_tiled's and cl_staged's), at row t of x and dout (xv, gv):
// the windows move on, dz[t] is computed (zero where !in_range) and, where `own` (t is one of the
// tile's own rows), its terms of the sums; y receives dx of row t - (W-1), complete now. (The zeros
// before t = 0 in the window count for nothing, and dz is zero from t = L on.)
template <class T, int W, int N>
__device__ __forceinline__ void cl_bwd_step(bool in_range, bool own, bool silu,
                                            const Filter<W> (&f)[N], const Vec<T, N>& xv,
                                            const Vec<T, N>& gv, float (&xw)[W][N],
                                            float (&dzw)[W][N], GradSums<W> (&sums)[N],
                                            float (&y)[N]) {
#pragma unroll
  for (int k = 0; k + 1 < W; ++k)
#pragma unroll
    for (int i = 0; i < N; ++i) {
      xw[k][i] = xw[k + 1][i];
      dzw[k][i] = dzw[k + 1][i];
    }
  to_floats(xv, xw[W - 1]);
  float dout[N];
  to_floats(gv, dout);
#pragma unroll
  for (int i = 0; i < N; ++i) {
    float taps[W];
#pragma unroll
    for (int k = 0; k < W; ++k) taps[k] = xw[k][i];
    dzw[W - 1][i] = in_range ? dz_at<W>(f[i], taps, dout[i], silu) : 0.0f;
    if (own) {
#pragma unroll
      for (int k = 0; k < W; ++k) sums[i].v[k] += dzw[W - 1][i] * taps[k];
      sums[i].v[W] += dzw[W - 1][i];
    }
  }
  // dx[s], s = t - (W-1): sum_k w[k] dz[s + (W-1) - k].
#pragma unroll
  for (int i = 0; i < N; ++i) {
    float acc = 0.0f;
#pragma unroll
    for (int k = 0; k < W; ++k) acc += f[i].w[k] * dzw[W - 1 - k][i];
    y[i] = acc;
  }
}
// [/docs:ch09_cl_step]

// [docs:ch09_cl_tiled]
// The walk down one tile: steps t0 .. t0 + kRows + W - 2, each computing dz (and, for the tile's own
// rows, its terms of the sums), and from step W-1 on dx of the row W-1 steps back.
template <class T, int W, int N, int kRows>
__device__ __forceinline__ void cl_bwd_walk(const BwdArgs<T>& a, int64_t t0, bool channels,
                                            const T* x, const T* g, T* dx, const Filter<W> (&f)[N],
                                            float (&xw)[W][N], GradSums<W> (&sums)[N]) {
  constexpr int kSteps = kRows + W - 1;  // the tile's rows and the W-1 whose dz the last dx needs
  const int64_t len = a.seqlen, dim = a.dim;
  // Every row of a batch is loaded with no branch: a row out of range is read from a row of
  // zeros. Behind a branch each, nvcc let one load of the batch be in flight at a time.
  static_assert(sizeof(Vec<T, N>) <= sizeof(kZeroRow), "a row of zeros covers a vector");
  auto row_or_zeros = [&](const T* base, int64_t t, bool in) {
    const T* p =
        in && channels && t >= 0 && t < len ? base + t * dim : reinterpret_cast<const T*>(kZeroRow);
    return *reinterpret_cast<const Vec<T, N>*>(p);
  };
  float dzw[W][N] = {};  // the last W values of dz, oldest first
  // A batch of rows at a time, in a loop that asks for the next batch's rows before it computes
  // this one's, so they are in flight while it does. That is 10 % faster at 8x4096x4096 bf16 than
  // the walk fully unrolled, for a quarter more instructions (Nsight Compute: warps waiting on
  // memory 1.1 times an issued instruction, against 3.4); rolled without asking ahead, it was
  // twice as slow as unrolled.
  constexpr int kBatch = kTileBatch;
  auto load_batch = [&](int s0, Vec<T, N>(&xs)[kBatch], Vec<T, N>(&gs)[kBatch]) {
#pragma unroll
    for (int r = 0; r < kBatch; ++r) {
      xs[r] = row_or_zeros(x, t0 + s0 + r, s0 + r < kSteps);
      gs[r] = row_or_zeros(g, t0 + s0 + r, s0 + r < kSteps);
    }
  };
  Vec<T, N> xs[kBatch], gs[kBatch];
  load_batch(0, xs, gs);
#pragma unroll 1
  for (int s0 = 0; s0 < kSteps; s0 += kBatch) {
    Vec<T, N> next_x[kBatch], next_g[kBatch];
    load_batch(s0 + kBatch, next_x, next_g);
#pragma unroll
    for (int r = 0; r < kBatch; ++r) {
      const int step = s0 + r;
      if (step <
          kSteps) {  // (a guard, not a break: a batch unrolls fully, its arrays in registers)
        const int64_t t = t0 + step, s = t - (W - 1);
        float y[N];
        cl_bwd_step<T, W, N>(t < len, step < kRows, a.silu, f, xs[r], gs[r], xw, dzw, sums, y);
        if (step >= W - 1 && s < len && channels)
          *reinterpret_cast<Vec<T, N>*>(dx + s * dim) = ch08::from_floats<T, N>(y);
      }
    }
#pragma unroll
    for (int r = 0; r < kBatch; ++r) {
      xs[r] = next_x[r];
      gs[r] = next_g[r];
    }
  }
}

template <class T, int W, int N, int kRows>
__global__ void conv_bwd_cl(BwdArgs<T> a, FastDivmod by_col_blocks, FastDivmod by_units) {
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
  cl_bwd_walk<T, W, N, kRows>(a, t0, channels, x, g, dx, f, xw, sums);

  // The 4 lanes down the time that share these channels add their sums (lane bits 3 and 4 with 8
  // lanes across), then one of them emits the unit's.
#pragma unroll
  for (int i = 0; i < N; ++i) warp_sum<W>(sums[i], (kClLanesDown - 1) * kClLanesAcross);
  if (lane < kClLanesAcross && channels)
#pragma unroll
    for (int i = 0; i < N; ++i) emit_sums<W>(a, bu * dim + d0 + i, d0 + i, sums[i]);
}
// [/docs:ch09_cl_tiled]

// Rows per lane: the most (of `max_rows`, 32, 16) that still give every multiprocessor 2048 lanes
// of work; 64 makes the partial sums 1/(4*64) of the tensor. `rows` > 0 asks for one. The chapter
// passes max_rows 32 for 16-bit types: at 8x4096x4096 bf16 with 4 channels per lane, 32 rows
// reached 57 % of the copy ceiling and 64 rows 22 % (the registers of the walk fully unrolled, as it
// was then; the loop's do not grow with the rows, and 64 rows have not been measured since).
inline int cl_bwd_rows(int64_t batch, int64_t seqlen, int64_t dim, int access, int sm_count,
                       int rows = 0, int max_rows = 64) {
  if (rows > 0) return rows;
  const int64_t lanes_across = ceil_div(ceil_div(dim, access), kClLanesAcross) * kClLanesAcross;
  for (int r : {64, 32})
    if (r <= max_rows &&
        batch * ceil_div(seqlen, int64_t(r)) * lanes_across >= int64_t(sm_count) * 2048)
      return r;
  return 16;
}

// Units of the deterministic sums along one sequence: 4 tiles each (at least one).
inline int64_t cl_bwd_units(int64_t seqlen, int rows) {
  return std::max<int64_t>(1, ceil_div(seqlen, int64_t(kClLanesDown) * rows));
}

// Where conv_bwd_cl's units lie in the partial-sum buffer, for reduce_partials: the unit of channel d
// in unit u of batch b is row (b * units + u) * D + d.
inline PartialLayout cl_bwd_partials(int64_t batch, int64_t dim, int64_t units, int width) {
  const int64_t w1 = width + 1;
  return {batch * units, dim * w1, 1, 0, w1};
}

// Channels per lane: at most 4 (each takes 18 registers of filters, windows and sums: 8 would
// spill); by default 4 in 16 bits (an 8-byte access; 57 % of the copy ceiling at 8x4096x4096 bf16
// against 48 % with 2) and 2 in fp32 (93 %); fewer where D or the pointers do not allow them.
// `max_access_bytes` (the chapter's --access-bytes) caps the access instead.
constexpr int kClMaxChannels = 4;
template <class T>
int cl_bwd_channels(const BwdArgs<T>& a, int max_access_bytes = 0) {
  const int cap = max_access_bytes > 0 ? std::min<int>(kClMaxChannels, max_access_bytes / sizeof(T))
                                       : (sizeof(T) == 2 ? 4 : 2);
  const ch08::DirectArgs<T> shape{a.x, a.weight, a.bias, a.dx, a.batch, a.dim, a.seqlen, a.silu};
  int n = std::max(1, std::min(cap, ch08::cl_access_elements(shape, 16)));
  while (n > 1 && !(a.dim % n == 0 && aligned_to(a.dout, n * sizeof(T)))) n /= 2;
  return n;
}

template <class T>
void launch_cl_bwd(const BwdArgs<T>& a, int width, int rows, int max_access_bytes = 0,
                   cudaStream_t s = 0, KernelFacts* facts = nullptr) {
  const int channels = cl_bwd_channels(a, max_access_bytes);
  auto with_channels = [&](auto access) {
    constexpr int N = decltype(access)::value;
    const int64_t col_blocks = ceil_div(ceil_div(a.dim, N), kClLanesAcross);
    const int64_t units = cl_bwd_units(a.seqlen, rows);
    const FastDivmod by_col_blocks(col_blocks), by_units(units);
    const int64_t blocks = ceil_div(a.batch * units * col_blocks * kWarpLanes, kClBwdThreads);
    dispatch_width(width, [&](auto w) {
      constexpr int W = decltype(w)::value;
      void (*kernel)(BwdArgs<T>, FastDivmod, FastDivmod) = nullptr;
      auto pick = [&](auto r) { kernel = conv_bwd_cl<T, W, N, decltype(r)::value>; };
      if (!ch08::with_rows<16, 32, 64>(rows, pick))
        throw std::invalid_argument("conv_bwd_cl: rows per lane must be 16, 32 or 64");
      launch_or_describe("conv_bwd_cl", kernel, blocks, kClBwdThreads, s, facts, a, by_col_blocks,
                         by_units);
    });
  };
  switch (channels) {
    case 4: with_channels(std::integral_constant<int, 4>{}); break;
    case 2: with_channels(std::integral_constant<int, 2>{}); break;
    default: with_channels(std::integral_constant<int, 1>{}); break;
  }
}

}  // namespace conv1d::ch09
