// Asynchronous copies (16 or 8 bytes) from global to shared memory. On sm_80 and later `cp.async` moves the
// bytes without a register holding them, so a thread can have many copies in flight at little
// register cost, and a block can load its next tile while it computes on this one. Elsewhere (older
// NVIDIA GPUs, AMD) the same calls are a plain load and store, and the waits do nothing.
//
//   copy16_async(smem, gmem, 16);  ...  async_commit();   // a group of copies
//   async_wait<1>();  __syncthreads();                    // all but the newest group have landed
#pragma once

#include "common/gpu.h"
#include "common/vec.cuh"

#if !defined(CONV1D_BACKEND_HIP) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define CONV1D_HAVE_CP_ASYNC 1
#endif

namespace conv1d {

// Copies 16 bytes from `gmem` to `smem` (both 16-byte aligned); bytes past `src_bytes` (0 or 16)
// are filled with zeros, so a copy from outside a tensor writes zeros and reads nothing.
__device__ inline void copy16_async(void* smem, const void* gmem, int src_bytes) {
#if defined(CONV1D_HAVE_CP_ASYNC)
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem),
               "r"(src_bytes));
#else
  Bytes16 v{};
  if (src_bytes == 16) v = *reinterpret_cast<const Bytes16*>(gmem);
  *reinterpret_cast<Bytes16*>(smem) = v;
#endif
}

// The same for 8 bytes (both 8-byte aligned; `src_bytes` 0 or 8). cp.async takes 8-byte copies
// only through the L1 (`.ca`); 16-byte ones may bypass it (`.cg`, above).
__device__ inline void copy8_async(void* smem, const void* gmem, int src_bytes) {
#if defined(CONV1D_HAVE_CP_ASYNC)
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(s), "l"(gmem),
               "r"(src_bytes));
#else
  uint2 v{};
  if (src_bytes == 8) v = *reinterpret_cast<const uint2*>(gmem);
  *reinterpret_cast<uint2*>(smem) = v;
#endif
}

// Closes the group of copies this thread issued since the last commit.
__device__ inline void async_commit() {
#if defined(CONV1D_HAVE_CP_ASYNC)
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}

// Waits until at most kPending of this thread's committed groups are still in flight (a barrier
// then makes everyone's copies visible to the block).
template <int kPending>
__device__ inline void async_wait() {
#if defined(CONV1D_HAVE_CP_ASYNC)
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
#endif
}

// Waits for all of this thread's copies, committed or not.
__device__ inline void async_wait_all() {
#if defined(CONV1D_HAVE_CP_ASYNC)
  asm volatile("cp.async.wait_all;\n" ::: "memory");
#endif
}

}  // namespace conv1d
