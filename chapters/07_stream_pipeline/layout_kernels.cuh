// Chapter 07's two new kernels: the layout changes that chapters 01-05 did on the host, moved to the
// GPU and applied to one chunk of the sequence at a time.
//
//   img2col_channel_first       x chunk, channel-first [D][pitch] with the W-1 halo in front
//                               -> A [n][W*D] (time-first, as chapter 05's sparse GEMM reads it)
//   time_to_channel_first       C [n][D] (time-first, as the GEMM writes it) -> out [D][pitch]
//
// Both only move 16-bit patterns (fp16 here), so they work on uint16_t. Each turns rows into columns,
// so each goes through a shared-memory tile: read along one side, written along the other, and
// both sides of global memory are touched in whole consecutive runs (coalesced).
#pragma once

#include <cstdint>

#include "common/check.h"
#include "common/gpu.h"

namespace conv1d::ch07 {

constexpr int kImgTile = 64;  // time rows x channels per block of img2col_channel_first
constexpr int kImgThreads = 256;
// A shared row holds 64 + W-1 <= 67 times of one channel. 69 halves: two channels apart is 69 words,
// an odd number, so the 32 threads reading a channel pair each at the same time hit 32 banks.
constexpr int kImgPitch = 69;

// [docs:img2col_channel_first]
// A[r, k*D + c] = x(c, t0 - (W-1) + r + k), where the chunk buffer holds x(c, t0 - (W-1) + j) at
// column j of row c, and columns j < skip lie before t = 0 (zeros: they are never read, so the
// buffer can hold anything there). kPair: D is even, so a thread stores two channels as one word.
template <bool kPair>
__global__ void __launch_bounds__(kImgThreads)
    img2col_channel_first(const uint16_t* __restrict__ x, int64_t x_pitch, int skip, uint16_t* __restrict__ a,
                          int64_t n, int64_t dim, int width) {
  __shared__ uint16_t tile[kImgTile][kImgPitch];  // [channel][time], the W-1 halo included
  const int64_t r0 = int64_t(blockIdx.x) * kImgTile, c0 = int64_t(blockIdx.y) * kImgTile;
  const int cols = kImgTile + width - 1;
  // 1. Read: consecutive threads take consecutive times of one channel.
  for (int i = threadIdx.x; i < kImgTile * cols; i += kImgThreads) {
    const int c = i / cols, j = i % cols;
    const int64_t col = r0 + j;
    const bool ok = c0 + c < dim && col >= skip && col < n + width - 1;
    tile[c][j] = ok ? x[(c0 + c) * x_pitch + col] : uint16_t(0);
  }
  __syncthreads();
  // 2. Write: consecutive threads take consecutive channels of one row of A, for each tap k.
  constexpr int kPer = kPair ? 2 : 1;
  constexpr int kLanes = kImgTile / kPer;
  for (int i = threadIdx.x; i < kImgTile * width * kLanes; i += kImgThreads) {
    const int lane = i % kLanes, k = (i / kLanes) % width, r = i / (kLanes * width);
    const int c = lane * kPer;
    if (r0 + r >= n || c0 + c >= dim) continue;
    uint16_t* dst = a + (r0 + r) * width * dim + k * dim + c0 + c;
    if constexpr (kPair) {  // c0 + c even and D even: both channels exist, the word is aligned
      *reinterpret_cast<uint32_t*>(dst) = uint32_t(tile[c][r + k]) | (uint32_t(tile[c + 1][r + k]) << 16);
    } else {
      *dst = tile[c][r + k];
    }
  }
}
// [/docs:img2col_channel_first]

constexpr int kTransTile = 32;
constexpr int kTransRows = 8;  // block 32 x 8, each thread moves 4 elements each way

// out[c * out_pitch + r] = C[r * dim + c] for r < n, c < dim: the classic tiled transpose. Rows of the
// tile are padded to 33 elements, so a warp reading one column of it spreads over the banks (two
// 16-bit elements share a bank word: a 2-way conflict at worst, in a kernel that is small next to
// the chunk's copies).
__global__ void time_to_channel_first(const uint16_t* __restrict__ c_mat, uint16_t* __restrict__ out,
                                      int64_t out_pitch, int64_t n, int64_t dim) {
  __shared__ uint16_t tile[kTransTile][kTransTile + 1];
  const int64_t r0 = int64_t(blockIdx.x) * kTransTile, c0 = int64_t(blockIdx.y) * kTransTile;
  for (int y = threadIdx.y; y < kTransTile; y += kTransRows) {
    const int64_t r = r0 + y, c = c0 + threadIdx.x;
    if (r < n && c < dim) tile[y][threadIdx.x] = c_mat[r * dim + c];
  }
  __syncthreads();
  for (int y = threadIdx.y; y < kTransTile; y += kTransRows) {
    const int64_t c = c0 + y, r = r0 + threadIdx.x;
    if (r < n && c < dim) out[c * out_pitch + r] = tile[threadIdx.x][y];
  }
}

inline void launch_img2col_channel_first(const uint16_t* x, int64_t x_pitch, int skip, uint16_t* a, int64_t n,
                                         int64_t dim, int width, cudaStream_t s) {
  const dim3 grid(static_cast<unsigned>((n + kImgTile - 1) / kImgTile),
                  static_cast<unsigned>((dim + kImgTile - 1) / kImgTile));
  if (dim % 2 == 0)
    img2col_channel_first<true><<<grid, kImgThreads, 0, s>>>(x, x_pitch, skip, a, n, dim, width);
  else
    img2col_channel_first<false><<<grid, kImgThreads, 0, s>>>(x, x_pitch, skip, a, n, dim, width);
  GPU_CHECK_LAUNCH("img2col_channel_first");
}

inline void launch_time_to_channel_first(const uint16_t* c_mat, uint16_t* out, int64_t out_pitch, int64_t n,
                                         int64_t dim, cudaStream_t s) {
  const dim3 grid(static_cast<unsigned>((n + kTransTile - 1) / kTransTile),
                  static_cast<unsigned>((dim + kTransTile - 1) / kTransTile));
  time_to_channel_first<<<grid, dim3(kTransTile, kTransRows), 0, s>>>(c_mat, out, out_pitch, n, dim);
  GPU_CHECK_LAUNCH("time_to_channel_first");
}

}  // namespace conv1d::ch07
