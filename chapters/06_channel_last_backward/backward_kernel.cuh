// Chapter 06: the backward pass in channel-last layout. One kernel computes dx and, per block, the
// partial sums of dweight and dbias; a second small kernel adds those partial sums up in a fixed
// order (or, for comparison, the blocks add them into the result with atomics).
//
// x, dout, dx are [B, L, D] (a time step's D channels are contiguous), weight [D, W], bias [D];
// dweight [D, W] and dbias [D] come out in fp32 whatever the storage type. Per batch b and channel d,
// with x[s] = 0 for s < 0:
//
//   z[t]       = bias + sum_{k<W} weight[k] * x[t-(W-1)+k]          (recomputed; needed for SiLU only)
//   dz[t]      = dout[t] * silu'(z[t])     with SiLU,   dz[t] = dout[t] without
//   dx[s]      = sum_{k<W, s+(W-1)-k < L} weight[k] * dz[s+(W-1)-k]
//   dweight[k] = sum_{b, t<L} dz[t] * x[t-(W-1)+k]
//   dbias      = sum_{b, t<L} dz[t]
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include "chapters/04_bias_epilogue/epilogue.cuh"
#include "common/async_copy.cuh"
#include "common/check.h"
#include "common/device_types.cuh"
#include "common/tensor.h"
#include "common/util.h"
#include "common/vec.cuh"

namespace conv1d::ch06 {

// [docs:ch06_tile]
// One block's tile: kRows time steps x kChannels channels, worked on by kThreads threads. The seed
// notes' choice is 64 x 64 with 128 threads; other values that pass the asserts work too (the tests run a
// second configuration). For the arithmetic a thread owns two neighbouring channels and a run of
// kRowsPerThread consecutive time steps, so one row of the tile is read by kPairsPerRow threads.
// kMinBlocksPerSM asks the compiler to fit that many blocks on a multiprocessor (at most 96
// registers a thread for 128 threads; 6 would make it spill): more blocks, more copies in flight.
// (HIP reads that argument of __launch_bounds__ as waves per SIMD: a similar register cap there.)
template <int Rows, int Channels, int Threads, int MinBlocksPerSM = 5>
struct Tile {
  static constexpr int kRows = Rows, kChannels = Channels, kThreads = Threads;
  static constexpr int kMinBlocksPerSM = MinBlocksPerSM;
  static constexpr int kPairsPerRow = kChannels / 2;
  static constexpr int kRowGroups = kThreads / kPairsPerRow;
  static constexpr int kRowsPerThread = kRows / kRowGroups;
  static_assert(kChannels % 8 == 0,
                "a tile row must be whole 16-byte chunks in every storage type");
  static_assert(kThreads % kPairsPerRow == 0 && kRows % kRowGroups == 0,
                "the threads must split the tile evenly");
};
using DefaultTile = Tile<64, 64, 128>;
// [/docs:ch06_tile]

// Where a block puts its sums of dweight and dbias.
enum class GradSink {
  partials,      // its own row of a partial-sum buffer, added up later by reduce_weight_grads
  final_values,  // straight into dweight and dbias: only when one block covers all of B x L
  atomics,       // atomically added into dweight and dbias (which must start at zero)
};

template <class T>  // device storage type
struct BwdArgs {
  const T* x;       // [B, L, D]
  const T* dout;    // [B, L, D]
  const T* weight;  // [D, W]
  const T* bias;    // [D], or nullptr
  T* dx;            // [B, L, D]
  float* partials;  // [gridDim.y][W+1][D] for GradSink::partials (k = W is dbias)
  float* dweight;   // [D, W] for the other two sinks
  float* dbias;     // [D]
  GradSink sink;
  int64_t batch, seqlen, dim;
  int64_t tiles_per_seq;    // ceil(L / kRows): tiles along one batch's sequence
  int64_t tiles_per_block;  // consecutive tiles (in batch-major order) that one block works through
  bool vectorized;          // D a multiple of the 16-byte chunk and every tensor 16-byte aligned
};

// [docs:ch06_copy]
// Chunk i (16 bytes, row-major) of a tile whose row 0 is time step `row0` of one batch, copied from
// global to shared memory asynchronously (common/async_copy.cuh: cp.async on sm_80 and later, so a
// thread has all its copies in flight at once at little register cost); zeros where the chunk falls
// outside the tensor (the causal zeros before t = 0, nothing after L or past D). Vectorized case
// only: D is a multiple of the chunk, so a chunk lies wholly inside or outside D.
template <class T, int kChannels>
__device__ inline void copy_chunk_async(T* tile, const T* __restrict__ src, int i, int64_t row0,
                                        int64_t seqlen, int64_t dim, int64_t c0) {
  constexpr int kChunksPerRow = kChannels / kPer16<T>;
  const int64_t row = row0 + i / kChunksPerRow;
  const int64_t c = c0 + (i % kChunksPerRow) * kPer16<T>;
  const bool inside = row >= 0 && row < seqlen && c < dim;
  copy16_async(reinterpret_cast<Bytes16*>(tile) + i, inside ? src + row * dim + c : src,
               inside ? 16 : 0);
}
// [/docs:ch06_copy]

// x[row, c] of one batch, or zero outside the tensor (the element-wise path for D not a multiple of
// the 16-byte chunk).
template <class T>
__device__ inline T element_or_zero(const T* __restrict__ src, int64_t row, int64_t c,
                                    int64_t seqlen, int64_t dim) {
  return row >= 0 && row < seqlen && c < dim ? src[row * dim + c] : from_float<T>(0.0f);
}

// The two channels at (row, lc) of a shared-memory tile, in fp32.
template <class T, int kChannels>
__device__ inline float2 two_at(const T* tile, int row, int lc) {
  const Vec<T, 2> v = *reinterpret_cast<const Vec<T, 2>*>(tile + row * kChannels + lc);
  return make_float2(to_float(v.v[0]), to_float(v.v[1]));
}

// [docs:ch06_kernel]
// Grid: x = chunks of kChannels channels (neighbouring blocks read neighbouring bytes of the same time
// steps), y = runs of tiles_per_block consecutive (batch, time) tiles.
template <class T, int W, bool kSilu, class TileT>
__global__ void __launch_bounds__(TileT::kThreads, TileT::kMinBlocksPerSM)
    conv_bwd_channel_last(const BwdArgs<T> a) {
  constexpr int kRows = TileT::kRows, kCh = TileT::kChannels, kThreads = TileT::kThreads;
  constexpr int kR = TileT::kRowsPerThread;
  // x: W-1 rows before the tile (z and dweight of its first rows need them) and, with SiLU, W-1
  // after it (z of the dout halo). dout: W-1 rows after the tile (dx of its last rows needs them).
  constexpr int kXRows = kRows + (W - 1) + (kSilu ? W - 1 : 0), kGRows = kRows + (W - 1);
  constexpr int kChunksPerRow = kCh * int(sizeof(T)) / 16;
  constexpr int kXChunks = kXRows * kChunksPerRow, kGChunks = kGRows * kChunksPerRow;
  constexpr int kXCopies = ceil_div(kXChunks, kThreads), kGCopies = ceil_div(kGChunks, kThreads);
  constexpr int kTileBytes = (kXRows + kGRows) * kCh * int(sizeof(T));
  constexpr int kSumBytes = TileT::kRowGroups * (W + 1) * kCh * int(sizeof(float));
  alignas(16) __shared__ unsigned char smem[kTileBytes > kSumBytes ? kTileBytes : kSumBytes];
  T* xs = reinterpret_cast<T*>(smem);  // [kXRows][kCh]: row i is time step l0 - (W-1) + i
  T* gs = xs + kXRows * kCh;           // [kGRows][kCh]: row i is time step l0 + i

  const int tid = threadIdx.x;
  const int lc = 2 * (tid % TileT::kPairsPerRow);  // this thread's two channels within the tile
  const int group = tid / TileT::kPairsPerRow;
  const int r0 = group * kR;  // and its first row
  const int64_t c0 = int64_t(blockIdx.x) * kCh;

  float w[2][W], bias[2], dw[2][W] = {}, db[2] = {};
  for (int j = 0; j < 2; ++j) {
    const int64_t d = c0 + lc + j;
    for (int k = 0; k < W; ++k) w[j][k] = d < a.dim ? to_float(a.weight[d * W + k]) : 0.0f;
    bias[j] = d < a.dim && a.bias ? to_float(a.bias[d]) : 0.0f;
  }

  const int64_t first = int64_t(blockIdx.y) * a.tiles_per_block;
  const int64_t tiles = a.batch * a.tiles_per_seq;
  const int64_t end = first + a.tiles_per_block < tiles ? first + a.tiles_per_block : tiles;
  for (int64_t tile = first; tile < end; ++tile) {
    const int64_t l0 = (tile % a.tiles_per_seq) * kRows;
    const int64_t base = (tile / a.tiles_per_seq) * a.seqlen * a.dim;  // batch offset

    // 1. Both tiles and their halos into shared memory.
    if (tile != first) __syncthreads();  // everyone is done with the previous tile
    if (a.vectorized) {
#pragma unroll
      for (int i = 0; i < kXCopies; ++i)
        if (i * kThreads + tid < kXChunks)
          copy_chunk_async<T, kCh>(xs, a.x + base, i * kThreads + tid, l0 - (W - 1), a.seqlen,
                                   a.dim, c0);
#pragma unroll
      for (int i = 0; i < kGCopies; ++i)
        if (i * kThreads + tid < kGChunks)
          copy_chunk_async<T, kCh>(gs, a.dout + base, i * kThreads + tid, l0, a.seqlen, a.dim, c0);
      async_wait_all();
    } else {  // D not a multiple of the chunk: element by element (not tuned)
#pragma unroll 1
      for (int e = tid; e < kXRows * kCh; e += kThreads)
        xs[e] = element_or_zero(a.x + base, l0 - (W - 1) + e / kCh, c0 + e % kCh, a.seqlen, a.dim);
#pragma unroll 1
      for (int e = tid; e < kGRows * kCh; e += kThreads)
        gs[e] = element_or_zero(a.dout + base, l0 + e / kCh, c0 + e % kCh, a.seqlen, a.dim);
    }
    __syncthreads();

    // 2. Down the thread's rows t = r0, r0+1, ... with the last W inputs and the last W dz in
    //    registers: dz(t) from dout (and z(t) with SiLU); dweight and dbias over its own kR rows;
    //    dx(t-(W-1)) as soon as dz(t) is known. The W-1 steps past the own rows only finish dx.
    float xw[2][W] = {}, gw[2][W] = {};  // xw[.][k] = x(t-(W-1)+k), gw[.][m] = dz(t-m)
#pragma unroll
    for (int k = 0; k + 1 < W; ++k) {
      const float2 v = two_at<T, kCh>(xs, r0 + k, lc);  // time step r0-(W-1)+k
      xw[0][k + 1] = v.x;
      xw[1][k + 1] = v.y;
    }
#pragma unroll
    for (int s = 0; s < kR + W - 1; ++s) {
      const int t = r0 + s;
      const bool own = s < kR;
      const float2 g = two_at<T, kCh>(gs, t, lc);
      float dz[2] = {g.x, g.y};
      if (kSilu || own) {
        const float2 v = two_at<T, kCh>(xs, t + (W - 1), lc);
        const float in[2] = {v.x, v.y};
        for (int j = 0; j < 2; ++j) {
          for (int k = 0; k + 1 < W; ++k) xw[j][k] = xw[j][k + 1];
          xw[j][W - 1] = in[j];
        }
      }
      float dx[2];
      for (int j = 0; j < 2; ++j) {
        if (kSilu) {
          float z = bias[j];
          for (int k = 0; k < W; ++k) z += w[j][k] * xw[j][k];
          dz[j] *= silu_grad_f32(z);
        }
        if (own) {
          for (int k = 0; k < W; ++k) dw[j][k] += dz[j] * xw[j][k];
          db[j] += dz[j];
        }
        for (int m = W - 1; m > 0; --m) gw[j][m] = gw[j][m - 1];
        gw[j][0] = dz[j];
        dx[j] = 0.0f;
        for (int k = 0; k < W; ++k) dx[j] += w[j][k] * gw[j][k];  // dz(t-k) = dz(u+(W-1)-k)
      }
      const int64_t row = l0 + t - (W - 1);  // the time step u whose dx is now complete
      if (s >= W - 1 && row < a.seqlen) {
        const int64_t d = c0 + lc;
        T* p = a.dx + base + row * a.dim + d;
        if (a.vectorized) {
          if (d < a.dim)
            *reinterpret_cast<Vec<T, 2>*>(p) = {from_float<T>(dx[0]), from_float<T>(dx[1])};
        } else {
          if (d < a.dim) p[0] = from_float<T>(dx[0]);
          if (d + 1 < a.dim) p[1] = from_float<T>(dx[1]);
        }
      }
    }
  }

  // 3. The block's sums: each row group's through shared memory (the tiles' memory, no longer read),
  //    added in a fixed order, then written to the sink.
  __syncthreads();
  float* sums = reinterpret_cast<float*>(smem);  // [kRowGroups][W+1][kCh]
  for (int j = 0; j < 2; ++j) {
    for (int k = 0; k < W; ++k) sums[(group * (W + 1) + k) * kCh + lc + j] = dw[j][k];
    sums[(group * (W + 1) + W) * kCh + lc + j] = db[j];
  }
  __syncthreads();
  for (int i = tid; i < (W + 1) * kCh; i += kThreads) {
    const int k = i / kCh, c = i % kCh;
    const int64_t d = c0 + c;
    if (d >= a.dim) continue;
    float total = 0.0f;
    for (int g = 0; g < TileT::kRowGroups; ++g) total += sums[(g * (W + 1) + k) * kCh + c];
    if (a.sink == GradSink::partials) {
      a.partials[(int64_t(blockIdx.y) * (W + 1) + k) * a.dim + d] = total;
    } else {
      float* out = k < W ? &a.dweight[d * W + k] : &a.dbias[d];
      if (a.sink == GradSink::atomics)
        atomicAdd(out, total);
      else
        *out = total;
    }
  }
}
// [/docs:ch06_kernel]

// [docs:ch06_reduce]
constexpr int kReduceColumns = 32, kReduceLanes = 8;

// dweight[d, k] = sum over block rows g of partials[g][k][d] (and dbias with k = W). Lane l of a
// column adds g = l, l + kReduceLanes, ... in that order, then lane 0 adds the lane sums in order:
// the order depends on the shape only, so every run gives the same bits.
__global__ void __launch_bounds__(kReduceColumns* kReduceLanes)
    reduce_weight_grads(const float* __restrict__ partials, int64_t block_rows, int64_t dim,
                        int width, float* __restrict__ dweight, float* __restrict__ dbias) {
  __shared__ float lane_sums[kReduceLanes][kReduceColumns];
  const int64_t per_row = int64_t(width + 1) * dim;
  const int64_t j = int64_t(blockIdx.x) * kReduceColumns + threadIdx.x;  // j = k * dim + d
  float s = 0.0f;
  if (j < per_row)
    for (int64_t g = threadIdx.y; g < block_rows; g += kReduceLanes) s += partials[g * per_row + j];
  lane_sums[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y != 0 || j >= per_row) return;
  float total = 0.0f;
  for (int l = 0; l < kReduceLanes; ++l) total += lane_sums[l][threadIdx.x];
  const int64_t k = j / dim, d = j % dim;
  if (k < width)
    dweight[d * width + k] = total;
  else
    dbias[d] = total;
}
// [/docs:ch06_reduce]

enum class Reduction { deterministic, atomic };

// How one backward is laid out on the GPU.
struct BwdPlan {
  int64_t tiles_per_seq = 0;    // ceil(L / kRows)
  int64_t tiles_per_block = 0;  // consecutive tiles per block
  int64_t blocks_x = 0;         // channel chunks
  int64_t blocks_y = 0;         // runs of tiles (at most 65535)
  GradSink sink = GradSink::partials;
  int64_t partial_floats(int width, int64_t dim) const {
    return sink == GradSink::partials ? blocks_y * (width + 1) * dim : 0;
  }
};

// [docs:ch06_plan]
// Blocks enough to fill any current GPU several times over; past that, more tiles per block cost
// nothing and every halving of the block count halves the partial sums written and read again.
constexpr int64_t kFillBlocks = 8192;
constexpr int64_t kMaxAutoTilesPerBlock = 8;

template <class TileT = DefaultTile>
BwdPlan plan_backward(const ConvShape& s, Reduction r,
                      int64_t tiles_per_block = 0 /* 0: choose */) {
  BwdPlan p;
  p.tiles_per_seq = ceil_div(s.seqlen, TileT::kRows);
  p.blocks_x = ceil_div(s.dim, TileT::kChannels);
  const int64_t tiles = s.batch * p.tiles_per_seq;
  int64_t n = tiles_per_block;
  if (n <= 0) {
    n = 1;
    while (n < kMaxAutoTilesPerBlock && p.blocks_x * ((tiles + 2 * n - 1) / (2 * n)) >= kFillBlocks)
      n *= 2;
  }
  n = std::max(n, ceil_div(tiles, kMaxGridY));  // the grid's y dimension stops at 65535
  p.tiles_per_block = std::min(n, tiles);
  p.blocks_y = ceil_div(tiles, p.tiles_per_block);
  if (r == Reduction::atomic)
    p.sink = GradSink::atomics;
  else
    p.sink = p.blocks_y == 1 ? GradSink::final_values : GradSink::partials;
  return p;
}
// [/docs:ch06_plan]

template <class T, class TileT = DefaultTile>
void launch_conv_bwd(const BwdArgs<T>& a, int width, bool silu, const BwdPlan& p,
                     cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(p.blocks_x), static_cast<unsigned>(p.blocks_y));
  const dim3 block(TileT::kThreads);
  auto go = [&](auto kernel) { kernel<<<grid, block, 0, stream>>>(a); };
  switch (width * 2 + (silu ? 1 : 0)) {
    case 4: go(conv_bwd_channel_last<T, 2, false, TileT>); break;
    case 5: go(conv_bwd_channel_last<T, 2, true, TileT>); break;
    case 6: go(conv_bwd_channel_last<T, 3, false, TileT>); break;
    case 7: go(conv_bwd_channel_last<T, 3, true, TileT>); break;
    case 8: go(conv_bwd_channel_last<T, 4, false, TileT>); break;
    case 9: go(conv_bwd_channel_last<T, 4, true, TileT>); break;
    default: throw std::invalid_argument("conv_bwd_channel_last: width must be 2, 3 or 4");
  }
  GPU_CHECK_LAUNCH("conv_bwd_channel_last");
}

inline void launch_reduce_weight_grads(const float* partials, int64_t block_rows, int64_t dim,
                                       int width, float* dweight, float* dbias,
                                       cudaStream_t stream) {
  const int64_t outputs = int64_t(width + 1) * dim;
  const dim3 grid(static_cast<unsigned>(ceil_div(outputs, kReduceColumns)));
  reduce_weight_grads<<<grid, dim3(kReduceColumns, kReduceLanes), 0, stream>>>(
      partials, block_rows, dim, width, dweight, dbias);
  GPU_CHECK_LAUNCH("reduce_weight_grads");
}

}  // namespace conv1d::ch06
