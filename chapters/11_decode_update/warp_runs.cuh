// Chapter 11: how a warp reads and writes its lanes' runs. In the vector kernel each lane owns a
// run of K consecutive 16-byte chunks (its channels' states: K = W-1; its tokens or outputs:
// K = T), and the runs of a warp's lanes follow each other: together they are one span of 32·K
// chunks (64·K on AMD).
//
//   kSpans = false   each lane reads its own run: instruction v takes chunk v of every run, 32
//                    pieces of 16 bytes at a stride of 16·K bytes. With K > 1 each 32-byte sector
//                    of the span is touched by two instructions and only partly used by either.
//   kSpans = true    the warp reads its span: instruction v takes chunks 32v .. 32v+31, 512
//                    contiguous bytes, and shared memory deals each lane its run (write as read,
//                    sync, read the run, sync). Stores go the other way.
//
// Reading (fetch_chunks) and dealing (deal_runs) are separate steps, so that a kernel can have all
// its loads in flight before it waits for any. Lanes whose chunks lie past the end of the span (a
// warp at the end of a batch row) store nothing.
//
// In shared memory a chunk does not sit at its position in the span but at stage_slot's (below):
// read as runs, the plain order would send several lanes at once to the same banks.
#pragma once

#include "common/vec.cuh"
#include "common/warp.cuh"

namespace conv1d::ch11 {

// The chunk instruction v of `lane` reads or writes, in a span of K-chunk runs.
template <bool kSpans, int K>
__device__ __forceinline__ int chunk_of(int v, int lane) {
  return kSpans ? v * kWarpLanes + lane : lane * K + v;
}

// Where chunk p of a warp's span sits in its stage. Shared memory serves a 16-byte access eight
// lanes at a time, from eight groups of four banks (chunk p in group p % 8), and two lanes in one
// group take turns. Lanes reading their runs of K chunks ask for chunks lane·K + v: for K = 4 the
// eight lanes fall on two groups, four turns each. Flipping p's low three bits by the next three
// (which stay put, so chunks only trade places within their group of eight) spreads them over all
// eight groups. The warp's own order (chunks 32v + lane) stays without turns: the eight lanes
// served together share bits 3-5, so all their chunks flip alike.
//
// The same flip removes the turns of K = 2 (two) and K = 8 (eight) too, but measured on an H100
// and an H200 it made steps of 2 and 8 tokens slower (docs/11_decode_update.md): the flip costs
// instructions and registers, and at K = 8 registers are what the step is short of. So only runs
// of 4 chunks (4 tokens a step) are flipped. Odd K already fall on distinct groups. (The eight
// lanes and eight groups are NVIDIA's; on AMD the flip is harmless, not tuned.)
template <int K>
__host__ __device__ constexpr int stage_slot(int p) {
  return K == 4 ? p ^ ((p >> 3) & 7) : p;
}

// [docs:ch11_warp_runs]
// raw[v] = chunk chunk_of(v, lane) of the span `src` of n chunks. Past n, the lane reads the span's
// last chunk again (only lanes whose own run lies past n get those chunks, and they store nothing).
//
// Every load is made, from an address that is always inside the span, rather than skipped where a
// lane has nothing to read: given a loaded vector or nothing to choose from, the compiler picks the
// loaded words apart into 16-bit pieces at once, and that waits for the load to arrive. A thread
// would wait for its tokens before it even asked for its state.
template <bool kSpans, int K, class V>
__device__ __forceinline__ void fetch_chunks(const V* src, int n, int lane, V (&raw)[K]) {
#pragma unroll
  for (int v = 0; v < K; ++v) {
    const int c = chunk_of<kSpans, K>(v, lane);
    raw[v] = src[c < n ? c : n - 1];
  }
}

// Turns what fetch_chunks read into the lane's run (chunk lane·K + v in raw[v]), through `stage`,
// this warp's 32·K chunks of shared memory (64·K on AMD). Nothing to do for a lane's own run, or
// for K = 1.
template <bool kSpans, int K, class V>
__device__ __forceinline__ void deal_runs(V (&raw)[K], V* stage, int lane) {
  if constexpr (kSpans && K > 1) {
#pragma unroll
    for (int v = 0; v < K; ++v) stage[stage_slot<K>(v * kWarpLanes + lane)] = raw[v];
    sync_warp();
#pragma unroll
    for (int v = 0; v < K; ++v) raw[v] = stage[stage_slot<K>(lane * K + v)];
    sync_warp();  // (stage is free again)
  }
}
// [/docs:ch11_warp_runs]

// The way back: the lane's run into what put_chunks writes.
template <bool kSpans, int K, class V>
__device__ __forceinline__ void collect_runs(V (&run)[K], V* stage, int lane) {
  if constexpr (kSpans && K > 1) {
#pragma unroll
    for (int v = 0; v < K; ++v) stage[stage_slot<K>(lane * K + v)] = run[v];
    sync_warp();
#pragma unroll
    for (int v = 0; v < K; ++v) run[v] = stage[stage_slot<K>(v * kWarpLanes + lane)];
    sync_warp();
  }
}

// Chunk chunk_of(v, lane) of the span `dst` = raw[v], for the first n chunks only.
template <bool kSpans, int K>
__device__ __forceinline__ void put_chunks(Bytes16* dst, int n, int lane, const Bytes16 (&raw)[K]) {
#pragma unroll
  for (int v = 0; v < K; ++v) {
    const int c = chunk_of<kSpans, K>(v, lane);
    if (c < n) store16(reinterpret_cast<uint32_t*>(dst + c), raw[v]);
  }
}

// Bytes of shared memory a block of `threads` needs to deal runs of up to K chunks (none when no
// run needs dealing).
template <bool kSpans>
constexpr size_t stage_bytes(int threads, int k) {
  return kSpans && k > 1 ? size_t(threads) * k * 16 : 0;
}

}  // namespace conv1d::ch11
