// Chapter 08, channel-last step 4 (`staged`): the tiled kernel's walk, its rows fetched ahead into
// shared memory. In `cl_tiled` a thread's bytes in flight are the batch of rows it holds in
// registers, and those registers are many: in 16-bit types the kernel takes 168 a thread, so a
// multiprocessor holds 384 threads, and a thread asks for nothing while it computes and stores.
// Here each thread copies its own rows with cp.async (common/async_copy.cuh) into a ring of
// shared memory kClStagedDepth batches deep, and refills a batch's slots as soon as it has used
// them: while it computes one batch the next two are on their way, without a register to hold
// them. A thread reads only the bytes it copied itself, so it needs no barrier, only its own
// wait. The tile is longer (64 rows a thread where the shape allows), so the W-1 halo rows cost
// less, and a row is read from shared memory only when it enters the window, which keeps the
// registers at 128 (four blocks a multiprocessor). Each row a thread copies is 16 bytes: D must be
// a multiple of the 16-byte vector (8 elements in 16 bits, 4 in fp32) and the tensors 16-byte
// aligned; cl_tiled takes any D. (Measured on an H200: docs/08_direct_forward.md, step 5.)
#pragma once

#include <stdexcept>
#include <string>

#include "chapters/08_direct_forward/cl_tiled.cuh"
#include "common/async_copy.cuh"

namespace conv1d::ch08 {

constexpr int kClStagedDepth = 3;      // batches of kTileBatch rows a thread has on their way
constexpr int kClStagedMinBlocks = 4;  // blocks of kClTiledThreads a multiprocessor: 128 registers
constexpr size_t kClStagedSmemBytes =  // the ring: 48 KB a block
    size_t(kClStagedDepth) * kTileBatch * kClTiledThreads * 16;

// [docs:ch08_cl_staged]
// Batch i of the tile (rows t0 + 8i ..) into its slots of the ring: a copy of 16 bytes a row, rows
// past the end as zeros. A group is committed even when there is nothing left to copy, so that
// "all but the newest kClStagedDepth - 1 groups" is always batch i.
template <class T, int N, int kBatches>
__device__ __forceinline__ void cl_fetch(const DirectArgs<T>& a, const T* x, int64_t t0, int i,
                                         Bytes16* ring) {
  if (i < kBatches) {
    Bytes16* slot = ring + (i % kClStagedDepth) * kTileBatch * kClTiledThreads + threadIdx.x;
    const int64_t t = t0 + int64_t(i) * kTileBatch;
    if (t + kTileBatch <= a.seqlen) {  // the whole batch inside: a product, then a sum a row
      const T* row = x + t * a.dim;
#pragma unroll
      for (int r = 0; r < kTileBatch; ++r, row += a.dim)
        copy16_async(slot + r * kClTiledThreads, row, 16);
    } else {
#pragma unroll
      for (int r = 0; r < kTileBatch; ++r)
        copy16_async(slot + r * kClTiledThreads, t + r < a.seqlen ? x + (t + r) * a.dim : x,
                     t + r < a.seqlen ? 16 : 0);
    }
  }
  async_commit();
}

// [docs:ch08_cl_staged_kernel]
template <class T, int W, int N, int kRows>
__global__ void __launch_bounds__(kClTiledThreads, kClStagedMinBlocks)
    conv_fwd_cl_staged(DirectArgs<T> a, FastDivmod by_cols, FastDivmod by_tiles) {
  static_assert(sizeof(Vec<T, N>) == 16, "a row of a thread's channels is one 16-byte copy");
  static_assert(kRows % kTileBatch == 0, "rows come in batches");
  constexpr int kBatches = kRows / kTileBatch;
  extern __shared__ Bytes16 ring[];  // [kClStagedDepth][kTileBatch][kClTiledThreads]
  int64_t b, d0, t0;
  if (!cl_place<W, N, kRows>(a, by_cols, by_tiles, b, d0, t0)) return;
  const T* x = a.x + b * a.seqlen * a.dim + d0;  // row t of this batch at x + t * D
  T* out = a.out + b * a.seqlen * a.dim + d0;

  // The first batches on their way before anything else; then, as in cl_tiled, the W-1 rows before
  // the tile and the filters, while they travel.
#pragma unroll
  for (int i = 0; i < kClStagedDepth; ++i) cl_fetch<T, N, kBatches>(a, x, t0, i, ring);
  Vec<T, N> win[W];  // win[k]: the row k - (W-1) steps back from the one being computed
  cl_halo<T, W, N>(a, x, t0, win);
  Filter<W> f[N];
  load_filters<W, N>(a, d0, f);
#pragma unroll 1
  for (int i = 0; i < kBatches; ++i) {
    async_wait<kClStagedDepth - 1>();  // batch i has landed (this thread's copies)
    const int64_t t = t0 + int64_t(i) * kTileBatch;
    const Bytes16* slots = ring + (i % kClStagedDepth) * kTileBatch * kClTiledThreads;
    const Vec<T, N>* rows = reinterpret_cast<const Vec<T, N>*>(slots + threadIdx.x);
    constexpr int kStride = kClTiledThreads;  // (from one row's slot to the next)
    T* at = out + t * a.dim;                  // row t's output; the next rows' by sums
    if (t >= W - 1) {                         // all but a row's first batch
#pragma unroll
      for (int r = 0; r < kTileBatch; ++r, at += a.dim)
        cl_row_at<true, T, W, N, true>(
            a, [&] { return at; }, t + r, f, win, rows[r * kStride], kAllTaps<W>);
    } else {  // a row's first batch: only the taps at or after t = 0 count
#pragma unroll
      for (int r = 0; r < kTileBatch; ++r, at += a.dim)
        cl_row_at<false, T, W, N, true>(
            a, [&] { return at; }, t + r, f, win, rows[r * kStride], taps_inside<W>(t + r));
    }
    cl_fetch<T, N, kBatches>(a, x, t0, i + kClStagedDepth, ring);  // into the slots just used
  }
}
// [/docs:ch08_cl_staged_kernel]
// [/docs:ch08_cl_staged]

// Whether the staged kernel takes these tensors: rows of 16-byte vectors of channels.
template <class T>
bool cl_staged_takes(const DirectArgs<T>& a) {
  return cl_access_elements(a, 16) * int(sizeof(T)) == 16;
}

// Rows per thread: 64 where that still gives every multiprocessor half the threads it can hold
// (two of its kClStagedMinBlocks blocks), else 32, else 16; `rows` > 0 asks for one. (At 32 x 2048
// x 512 in bf16, 64 rows a thread fill 97 % of an H100's or H200's slots, in one wave.)
constexpr int kClStagedFillBlocks = 2;
inline int cl_staged_rows(int64_t batch, int64_t seqlen, int64_t columns, int sm_count,
                          int rows = 0) {
  if (rows > 0) return rows;
  const int64_t fill = int64_t(sm_count) * kClStagedFillBlocks * kClTiledThreads;
  for (int r : {64, 32})
    if (batch * ceil_div(seqlen, r) * columns >= fill) return r;
  return 16;
}

template <class T>
void launch_cl_staged(const DirectArgs<T>& a, int width, int rows, cudaStream_t s = 0,
                      KernelFacts* facts = nullptr) {
  if (!cl_staged_takes(a))
    throw std::invalid_argument(
        "conv_fwd_cl_staged: a row of D channels must be 16-byte vectors (D a multiple of " +
        std::to_string(16 / sizeof(T)) + ", tensors 16-byte aligned); cl_tiled takes any D");
  constexpr int N = kPer16<T>;
  const ClGrid g = cl_grid<N>(a, rows);  // (as cl_tiled's)
  dispatch_width(width, [&](auto w) {
    constexpr int W = decltype(w)::value;
    void (*kernel)(DirectArgs<T>, FastDivmod, FastDivmod) = nullptr;
    auto pick = [&](auto r) { kernel = conv_fwd_cl_staged<T, W, N, decltype(r)::value>; };
    if (!with_rows<16, 32, 64>(rows, pick))
      throw std::invalid_argument("conv_fwd_cl_staged: rows per thread must be 16, 32 or 64");
    launch_smem_or_describe("conv_fwd_cl_staged", kernel, g.blocks, kClTiledThreads,
                            kClStagedSmemBytes, s, facts, a, g.by_cols, g.by_tiles);
  });
}

}  // namespace conv1d::ch08
