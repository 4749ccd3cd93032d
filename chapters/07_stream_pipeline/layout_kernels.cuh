// Chapter 07's two new kernels: the layout changes that chapters 01-05 did on the host, moved to the
// GPU and applied to one chunk of the sequence at a time.
//
//   img2col_channel_first       x chunk, channel-first [D][pitch] with the W-1 halo in front
//                               -> A [n][W*D] (time-first, as chapter 05's sparse GEMM reads it)
//   time_to_channel_first       C [n][D] (time-first, as the GEMM writes it) -> out [D][pitch]
//
// Both only move 16-bit patterns (fp16 here), so they work on uint16_t. Each turns rows into columns,
// so each goes through a shared-memory tile: read along one side, written along the other, and both
// sides of global memory are touched in whole consecutive runs (coalesced). Like chapter 02's
// kernels, each moves 16 bytes per global access where the sizes allow it (D a multiple of 8, and
// chunk buffers whose rows are padded to whole tiles: img2col_pitch() and out_pitch() say how), and
// single elements otherwise. The tile is transposed in shared memory one element at a time, which is
// cheap next to the global traffic.
#pragma once

#include <cstdint>

#include "common/check.h"
#include "common/gpu.h"
#include "common/util.h"
#include "common/vec.cuh"

namespace conv1d::ch07 {

constexpr int kLayoutTile = 64;  // time rows x channels per block of either kernel
constexpr int kLayoutThreads = 256;
constexpr int kHalves16 = 8;  // fp16 elements in 16 bytes

// Row pitches of the chunk buffers that let both kernels take their 16-byte paths: a whole number
// of tiles, plus (for x) the 8 columns that the halo of the last tile reaches into.
inline int64_t img2col_pitch(int64_t n) {
  return ceil_div(n, kLayoutTile) * kLayoutTile + kHalves16;
}
inline int64_t out_pitch(int64_t n) { return ceil_div(n, kLayoutTile) * kLayoutTile; }

// Shared tiles are indexed [row][column] with rows padded by 2 halves (one 4-byte bank word): the
// transposing reads walk down a column, and an odd number of words per row spreads them over banks.
constexpr int kImgCols =
    kLayoutTile + kHalves16;  // times a tile of img2col reads: 64 + the halo, in vectors
constexpr int kImgPitch = kImgCols + 2;
constexpr int kOutPitch = kLayoutTile + 2;

// Four 4-byte words of 16-bit lanes from 8 halves, and back.
__device__ __forceinline__ Bytes16 pack8(const uint16_t* h) {
  Bytes16 v;
#pragma unroll
  for (int j = 0; j < 4; ++j) v.v[j] = uint32_t(h[2 * j]) | (uint32_t(h[2 * j + 1]) << 16);
  return v;
}

// [docs:img2col_channel_first]
// A[r, k*D + c] = x(c, t0 - (W-1) + r + k), where the chunk buffer holds x(c, t0 - (W-1) + j) at
// column j of row c, and columns j < skip lie before t = 0: zeros (the buffer may hold anything
// there, as it may past column n + W - 1). kVec: 16-byte loads of 8 times of one channel, 16-byte
// stores of 8 channels of one row of A; otherwise one element per access.
template <bool kVec>
__global__ void __launch_bounds__(kLayoutThreads)
    img2col_channel_first(const uint16_t* __restrict__ x, int64_t x_pitch, int skip,
                          uint16_t* __restrict__ a, int64_t n, int64_t dim, int width) {
  __shared__ __align__(16)
      uint16_t tile[kLayoutTile][kImgPitch];  // [channel][time], the halo included
  const int64_t r0 = int64_t(blockIdx.x) * kLayoutTile, c0 = int64_t(blockIdx.y) * kLayoutTile;
  const int64_t valid_end = n + width - 1;  // columns [skip, valid_end) hold inputs
  constexpr int kPer = kVec ? kHalves16 : 1;
  // 1. Read: consecutive threads take consecutive runs of times of one channel.
  constexpr int kRuns = kImgCols / kPer;  // per channel
  for (int i = threadIdx.x; i < kLayoutTile * kRuns; i += kLayoutThreads) {
    const int c = i / kRuns, j = (i % kRuns) * kPer;
    const int64_t col = r0 + j;
    uint16_t h[kPer];
    if (c0 + c < dim && (kVec || col < valid_end)) {
      if constexpr (kVec) {
        const Bytes16 v = *reinterpret_cast<const Bytes16*>(x + (c0 + c) * x_pitch + col);
#pragma unroll
        for (int e = 0; e < kPer; ++e) h[e] = static_cast<uint16_t>(v.v[e / 2] >> (16 * (e % 2)));
      } else {
        h[0] = x[(c0 + c) * x_pitch + col];
      }
    } else {
#pragma unroll
      for (int e = 0; e < kPer; ++e) h[e] = 0;
    }
#pragma unroll
    for (int e = 0; e < kPer; ++e)
      tile[c][j + e] = col + e >= skip && col + e < valid_end ? h[e] : uint16_t(0);
  }
  __syncthreads();
  // 2. Write: consecutive threads take consecutive runs of channels of one row of A, for each tap k.
  constexpr int kGroups = kLayoutTile / kPer;  // runs of channels per row and tap
  for (int i = threadIdx.x; i < kLayoutTile * width * kGroups; i += kLayoutThreads) {
    const int g = i % kGroups, k = (i / kGroups) % width, r = i / (kGroups * width);
    const int c = g * kPer;
    if (r0 + r >= n || c0 + c >= dim) continue;  // with kVec, D % 8 == 0: a run is wholly in or out
    uint16_t* dst = a + (r0 + r) * width * dim + k * dim + c0 + c;
    if constexpr (kVec) {
      uint16_t h[kPer];
#pragma unroll
      for (int e = 0; e < kPer; ++e) h[e] = tile[c + e][r + k];
      *reinterpret_cast<Bytes16*>(dst) = pack8(h);
    } else {
      *dst = tile[c][r + k];
    }
  }
}
// [/docs:img2col_channel_first]

// out[c * pitch + r] = C[r * dim + c] for r < n, c < dim. kVec: 16-byte loads of 8 channels of one
// time, 16-byte stores of 8 times of one channel (times past n get zeros: the buffer's padding).
template <bool kVec>
__global__ void __launch_bounds__(kLayoutThreads)
    time_to_channel_first(const uint16_t* __restrict__ c_mat, uint16_t* __restrict__ out,
                          int64_t pitch, int64_t n, int64_t dim) {
  __shared__ __align__(16) uint16_t tile[kLayoutTile][kOutPitch];  // [time][channel]
  const int64_t r0 = int64_t(blockIdx.x) * kLayoutTile, c0 = int64_t(blockIdx.y) * kLayoutTile;
  constexpr int kPer = kVec ? kHalves16 : 1;
  constexpr int kRuns = kLayoutTile / kPer;
  // 1. Read: consecutive threads take consecutive runs of channels of one time.
  for (int i = threadIdx.x; i < kLayoutTile * kRuns; i += kLayoutThreads) {
    const int r = i / kRuns, c = (i % kRuns) * kPer;
    const bool inside = r0 + r < n && c0 + c < dim;  // with kVec, a run is wholly in or out
    if constexpr (kVec) {
      const Bytes16 v =
          inside ? *reinterpret_cast<const Bytes16*>(c_mat + (r0 + r) * dim + c0 + c) : Bytes16{};
#pragma unroll
      for (int e = 0; e < kPer; ++e)
        tile[r][c + e] = static_cast<uint16_t>(v.v[e / 2] >> (16 * (e % 2)));
    } else {
      tile[r][c] = inside ? c_mat[(r0 + r) * dim + c0 + c] : uint16_t(0);
    }
  }
  __syncthreads();
  // 2. Write: consecutive threads take consecutive runs of times of one channel.
  for (int i = threadIdx.x; i < kLayoutTile * kRuns; i += kLayoutThreads) {
    const int c = i / kRuns, r = (i % kRuns) * kPer;
    if (c0 + c >= dim) continue;
    uint16_t* dst = out + (c0 + c) * pitch + r0 + r;
    if constexpr (kVec) {  // the buffer's rows are whole tiles long: the run is inside it
      uint16_t h[kPer];
#pragma unroll
      for (int e = 0; e < kPer; ++e) h[e] = tile[r + e][c];
      *reinterpret_cast<Bytes16*>(dst) = pack8(h);
    } else if (r0 + r < n) {
      *dst = tile[r][c];
    }
  }
}

// Launchers: the 16-byte path when D and the buffers allow it. Each returns the bytes one thread
// moves per global access (16, or 2), so tests can see which path ran.
inline int launch_img2col_channel_first(const uint16_t* x, int64_t x_pitch, int skip, uint16_t* a,
                                        int64_t n, int64_t dim, int width, cudaStream_t s) {
  const dim3 grid(static_cast<unsigned>(ceil_div(n, kLayoutTile)),
                  static_cast<unsigned>(ceil_div(dim, kLayoutTile)));
  const bool vec = dim % kHalves16 == 0 && x_pitch % kHalves16 == 0 &&
                   x_pitch >= img2col_pitch(n) && aligned_to(x, 16) && aligned_to(a, 16);
  if (vec)
    img2col_channel_first<true><<<grid, kLayoutThreads, 0, s>>>(x, x_pitch, skip, a, n, dim, width);
  else
    img2col_channel_first<false>
        <<<grid, kLayoutThreads, 0, s>>>(x, x_pitch, skip, a, n, dim, width);
  GPU_CHECK_LAUNCH("img2col_channel_first");
  return vec ? 16 : 2;
}

inline int launch_time_to_channel_first(const uint16_t* c_mat, uint16_t* out, int64_t pitch,
                                        int64_t n, int64_t dim, cudaStream_t s) {
  const dim3 grid(static_cast<unsigned>(ceil_div(n, kLayoutTile)),
                  static_cast<unsigned>(ceil_div(dim, kLayoutTile)));
  const bool vec = dim % kHalves16 == 0 && pitch % kHalves16 == 0 && pitch >= out_pitch(n) &&
                   aligned_to(c_mat, 16) && aligned_to(out, 16);
  if (vec)
    time_to_channel_first<true><<<grid, kLayoutThreads, 0, s>>>(c_mat, out, pitch, n, dim);
  else
    time_to_channel_first<false><<<grid, kLayoutThreads, 0, s>>>(c_mat, out, pitch, n, dim);
  GPU_CHECK_LAUNCH("time_to_channel_first");
  return vec ? 16 : 2;
}

}  // namespace conv1d::ch07
