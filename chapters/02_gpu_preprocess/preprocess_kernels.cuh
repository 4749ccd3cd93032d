// Chapter 02's GPU kernels: pad + img2col of the time-first input into A, and the expansion of the
// depthwise weights into the block-diagonal Bw (definitions in common/preprocess.h, which the tests
// compare them with bit for bit).
//
// Neither kernel computes anything: they copy bits and write zeros. So they are written over raw
// words instead of the storage type, and the only thing that decides their speed is how they touch
// memory. Each thread moves 16 bytes per instruction when a row's byte length and the pointers allow
// it, one element otherwise (odd D, or a pointer that is not 16-byte aligned).
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>

#include "common/check.h"
#include "common/gpu.h"
#include "common/util.h"
#include "common/vec.cuh"

namespace conv1d {

constexpr int kMaxWidth = 4;  // the widest filter the chapters support (--width 2..4)

// Geometry of the kernels that walk rows of `words` words: threads along x take neighbouring words
// of one row, so a warp's accesses are contiguous; y takes rows, z takes the batch (or, for Bw, the
// tap k), so no thread divides to find its coordinates. Blocks have 256 threads, as wide along x as
// a row needs (at most 128), so short rows still fill whole warps. Grid y and z stop at 65535: the
// kernels stride over what lies beyond.
struct RowLaunch {
  dim3 grid, block;
};
inline RowLaunch row_launch(int64_t rows, int64_t words, int64_t planes) {
  unsigned bx = 1;
  while (bx < 128 && bx < words) bx *= 2;
  const unsigned by = 256 / bx;
  const int64_t gx = ceil_div(words, bx);
  const int64_t gy = std::min(ceil_div(rows, by), kMaxGridY);
  const int64_t gz = std::min(planes, kMaxGridZ);
  return {dim3(static_cast<unsigned>(gx), static_cast<unsigned>(gy), static_cast<unsigned>(gz)),
          dim3(bx, by)};
}

// True when rows of `row_bytes` bytes starting at each pointer can be moved in 16-byte words.
inline bool rows_fit_bytes16(int64_t row_bytes, std::initializer_list<const void*> pointers) {
  bool ok = row_bytes % 16 == 0;
  for (const void* p : pointers) ok = ok && aligned_to(p, 16);
  return ok;
}

// [docs:preprocess_input]
// A[b, t, k*D + c] = xt[b, t - (W-1) + k, c], zero where t - (W-1) + k < 0 (the padding). One thread
// per word of a D-wide chunk of A: it issues the loads of all W chunks before the first store, so W
// loads per thread are in flight at once. Rows t and t+1 read W-1 of the same xt rows, so xt comes
// from DRAM about once and its re-reads hit the L2.
template <class Word>
__global__ void preprocess_input(const Word* __restrict__ xt, Word* __restrict__ a, int64_t batch,
                                 int64_t seqlen, int64_t words, int width) {
  const int64_t w = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (w >= words) return;
  for (int64_t b = blockIdx.z; b < batch; b += gridDim.z)
    for (int64_t t = blockIdx.y * int64_t(blockDim.y) + threadIdx.y; t < seqlen;
         t += int64_t(gridDim.y) * blockDim.y) {
      const int64_t r = b * seqlen + t;
      Word v[kMaxWidth];
#pragma unroll
      for (int k = 0; k < kMaxWidth; ++k)
        if (k < width) v[k] = t + k >= width - 1 ? xt[(r - (width - 1) + k) * words + w] : Word{};
#pragma unroll
      for (int k = 0; k < kMaxWidth; ++k)
        if (k < width) a[(r * width + k) * words + w] = v[k];
    }
}
// [/docs:preprocess_input]

// A word whose bits are all zero except element `pos`, which holds `v`.
template <class Word, class Elem>
__device__ __forceinline__ Word word_holding(Elem v, int pos) {
  if constexpr (sizeof(Word) == sizeof(Elem)) {
    return v;
  } else {
    constexpr int kPerLane = 4 / sizeof(Elem);
    const uint32_t bits = uint32_t(v)
                          << (8 * sizeof(Elem) * (pos % kPerLane));  // little-endian lanes
    Word out;
#pragma unroll
    for (int j = 0; j < 4; ++j)
      out.v[j] = j == pos / kPerLane ? bits : 0u;  // no dynamic index: registers
    return out;
  }
}

// [docs:expand_weights]
// Bw[k*D + ci, co] = weight[ci, k] where co == ci, else 0. Every one of the W*D*D elements is
// written, and all but W*D of them are zeros: the kernel is a memset with a diagonal. One thread per
// word of a row, z runs over the taps k; only the thread whose word holds the diagonal reads a weight.
template <class Word, class Elem>
__global__ void expand_weights(const Elem* __restrict__ weight, Word* __restrict__ bw, int64_t dim,
                               int64_t words, int width) {
  constexpr int kPerWord = sizeof(Word) / sizeof(Elem);
  const int64_t w = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  const int k = blockIdx.z;
  if (w >= words) return;
  for (int64_t ci = blockIdx.y * int64_t(blockDim.y) + threadIdx.y; ci < dim;
       ci += int64_t(gridDim.y) * blockDim.y) {
    const int64_t pos = ci - w * kPerWord;  // where the diagonal falls inside this word, if it does
    Word out{};
    if (pos >= 0 && pos < kPerWord)
      out = word_holding<Word>(weight[ci * width + k], static_cast<int>(pos));
    bw[(k * dim + ci) * words + w] = out;
  }
}
// [/docs:expand_weights]

// Launchers: the storage type T only decides the element size. Each returns the bytes one thread
// moves per access (16, or the element size on the fallback path), so tests can see which ran.
template <class Word, class T>
void launch_preprocess_input_words(const T* xt, T* a, int64_t batch, int64_t seqlen, int64_t dim,
                                   int width, cudaStream_t s) {
  const int64_t words = dim * int64_t(sizeof(T)) / int64_t(sizeof(Word));
  const RowLaunch g = row_launch(seqlen, words, batch);
  preprocess_input<<<g.grid, g.block, 0, s>>>(
      reinterpret_cast<const Word*>(xt), reinterpret_cast<Word*>(a), batch, seqlen, words, width);
  GPU_CHECK_LAUNCH("preprocess_input");
}

// xt [batch, L, D] (time-first) -> a [batch, L, W*D].
template <class T>
int launch_preprocess_input(const T* xt, T* a, int64_t batch, int64_t seqlen, int64_t dim,
                            int width, cudaStream_t s = 0) {
  if (rows_fit_bytes16(dim * int64_t(sizeof(T)), {xt, a})) {
    launch_preprocess_input_words<Bytes16>(xt, a, batch, seqlen, dim, width, s);
    return 16;
  }
  launch_preprocess_input_words<bits_t<T>>(xt, a, batch, seqlen, dim, width, s);
  return sizeof(T);
}

template <class Word, class T>
void launch_expand_weights_words(const T* weight, T* bw, int64_t dim, int width, cudaStream_t s) {
  const int64_t words = dim * int64_t(sizeof(T)) / int64_t(sizeof(Word));
  const RowLaunch g = row_launch(dim, words, width);
  expand_weights<<<g.grid, g.block, 0, s>>>(reinterpret_cast<const bits_t<T>*>(weight),
                                            reinterpret_cast<Word*>(bw), dim, words, width);
  GPU_CHECK_LAUNCH("expand_weights");
}

// weight [D, W] -> bw [W*D, D].
template <class T>
int launch_expand_weights(const T* weight, T* bw, int64_t dim, int width, cudaStream_t s = 0) {
  if (rows_fit_bytes16(dim * int64_t(sizeof(T)), {bw})) {
    launch_expand_weights_words<Bytes16>(weight, bw, dim, width, s);
    return 16;
  }
  launch_expand_weights_words<bits_t<T>>(weight, bw, dim, width, s);
  return sizeof(T);
}

}  // namespace conv1d
