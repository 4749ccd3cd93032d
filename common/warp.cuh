// Warps on either vendor. NVIDIA GPUs run 32 threads in lockstep (a warp), AMD Instinct (CDNA) GPUs
// 64 (a wavefront): lane arithmetic goes through kWarpLanes, and shuffles through these wrappers
// (CUDA's take a 32-bit mask of the lanes that take part; HIP's older ones take none).
#pragma once

#include <cstdint>

#include "common/gpu.h"

namespace conv1d {

#if defined(CONV1D_BACKEND_HIP)
constexpr int kWarpLanes = 64;
#else
constexpr int kWarpLanes = 32;
#endif

// The value `v` of lane (this lane - delta); lanes below delta get their own value back. Every lane
// of the warp must call it.
__device__ __forceinline__ uint32_t shuffle_up(uint32_t v, int delta) {
#if defined(CONV1D_BACKEND_HIP)
  return __shfl_up(v, delta);
#else
  return __shfl_up_sync(0xFFFFFFFFu, v, delta);
#endif
}

// The value `v` of lane (this lane + delta); the top delta lanes get their own value back. Every
// lane of the warp must call it.
__device__ __forceinline__ uint32_t shuffle_down(uint32_t v, int delta) {
#if defined(CONV1D_BACKEND_HIP)
  return __shfl_down(v, delta);
#else
  return __shfl_down_sync(0xFFFFFFFFu, v, delta);
#endif
}

// The value `v` of lane `src`. Every lane of the warp must call it.
__device__ __forceinline__ uint32_t shuffle(uint32_t v, int src) {
#if defined(CONV1D_BACKEND_HIP)
  return __shfl(v, src);
#else
  return __shfl_sync(0xFFFFFFFFu, v, src);
#endif
}

// Orders the shared-memory accesses of a warp's lanes: what a lane wrote before it, every lane of
// the warp reads after it. Every lane that has not exited must call it. (An AMD wavefront runs in
// lockstep and its shared-memory accesses complete in order: there it only keeps the compiler from
// moving accesses across.)
__device__ __forceinline__ void sync_warp() {
#if defined(CONV1D_BACKEND_HIP)
  __builtin_amdgcn_wave_barrier();
#else
  __syncwarp();
#endif
}

// True on every lane when `p` holds on every lane of the warp (a vote: every lane must call it).
__device__ __forceinline__ bool warp_all(bool p) {
#if defined(CONV1D_BACKEND_HIP)
  return __all(p);
#else
  return __all_sync(0xFFFFFFFFu, p);
#endif
}

}  // namespace conv1d
