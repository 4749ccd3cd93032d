// Launching a kernel, or describing it instead. A chapter that reports what the compiler made of
// its kernels (registers per thread, local memory, blocks that fit on a multiprocessor) asks the
// same launcher that runs them, so the report is about the very instantiation a run uses.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

#include "common/check.h"

namespace conv1d {

struct KernelFacts {
  int registers = 0;       // per thread
  size_t local_bytes = 0;  // per thread: spills and arrays the compiler could not keep in registers
  int threads = 0;         // per block
  int blocks_per_sm = 0;   // resident at once on one multiprocessor (occupancy)
  bool early = false;      // launched early (launch_early_or_describe)
};

// (`smem`: the bytes of dynamic shared memory a block of the launch takes.)
template <class... P>
KernelFacts kernel_facts(void (*kernel)(P...), int threads, size_t smem = 0) {
  cudaFuncAttributes attr{};
  GPU_CHECK(cudaFuncGetAttributes(&attr, kernel));
  KernelFacts f;
  f.registers = attr.numRegs;
  f.local_bytes = attr.localSizeBytes;
  f.threads = threads;
  GPU_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&f.blocks_per_sm, kernel, threads, smem));
  return f;
}

// kernel<<<blocks, threads, 0, stream>>>(args...) and its launch check, or, when `facts` is given,
// only the kernel's facts.
template <class... P, class... A>
void launch_or_describe(const char* name, void (*kernel)(P...), int64_t blocks, int threads,
                        cudaStream_t stream, KernelFacts* facts, A&&... args) {
  if (facts != nullptr) {
    *facts = kernel_facts(kernel, threads);
    return;
  }
  kernel<<<static_cast<unsigned>(blocks), threads, 0, stream>>>(std::forward<A>(args)...);
  GPU_CHECK_LAUNCH(name);
}

// Programmatic dependent launch (NVIDIA, compute capability 9.0 and later). A kernel launched with
// it may start while the kernel before it in the stream is still running: its blocks are scheduled
// once every block of that kernel has called allow_next_launch() (or exited), and
// wait_for_previous_launch() holds a thread until that kernel has finished and its writes are
// visible. What a kernel does before its wait overlaps the previous kernel's tail and the launch
// gap between them; it must not read anything the previous kernel writes, nor write anything that
// kernel reads. Without the launch attribute (and on AMD and older GPUs) both calls do nothing and
// the launch is an ordinary one.
__device__ __forceinline__ void allow_next_launch() {
#if !defined(CONV1D_BACKEND_HIP) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
__device__ __forceinline__ void wait_for_previous_launch() {
#if !defined(CONV1D_BACKEND_HIP) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Whether `kernel` may be launched early: the code this device runs for it was compiled from PTX
// of compute capability 9.0 or later, so its two calls above are real instructions. (A kernel
// built only for an older architecture runs on a newer GPU without them: launched early, it would
// not wait.) Asked once per kernel.
bool takes_early_launch(const void* kernel);

// The blocks of `kernel` (`threads` each, `smem` bytes of dynamic shared memory) the GPU holds at
// once: blocks a multiprocessor takes, times the multiprocessors. A persistent kernel's grid, whose
// blocks loop over the work: more would only wait for a place. Asked once per kernel and device.
int64_t resident_blocks(const void* kernel, int threads, size_t smem);

// launch_or_describe, with the launch allowed to start early (above) when `early` is set and the
// kernel takes it, and `smem` bytes of dynamic shared memory a block (more than the 48 KB a kernel
// gets without asking are asked for).
template <class... P, class... A>
void launch_early_or_describe(const char* name, void (*kernel)(P...), int64_t blocks, int threads,
                              size_t smem, cudaStream_t stream, KernelFacts* facts, bool early,
                              A&&... args) {
  if (smem > 48 * 1024)
    GPU_CHECK(cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel),
                                   cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   static_cast<int>(smem)));
#if !defined(CONV1D_BACKEND_HIP)
  early = early && takes_early_launch(reinterpret_cast<const void*>(kernel));
#else
  early = false;
#endif
  if (facts != nullptr) {
    *facts = kernel_facts(kernel, threads, smem);
    facts->early = early;
    return;
  }
#if !defined(CONV1D_BACKEND_HIP)
  if (early) {
    cudaLaunchConfig_t config{};
    config.gridDim = dim3(static_cast<unsigned>(blocks));
    config.blockDim = dim3(threads);
    config.dynamicSmemBytes = smem;
    config.stream = stream;
    cudaLaunchAttribute attribute{};
    attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attribute.val.programmaticStreamSerializationAllowed = 1;
    config.attrs = &attribute;
    config.numAttrs = 1;
    GPU_CHECK(cudaLaunchKernelEx(&config, kernel, std::forward<A>(args)...));
    GPU_CHECK_LAUNCH(name);
    return;
  }
#endif
  kernel<<<static_cast<unsigned>(blocks), threads, smem, stream>>>(std::forward<A>(args)...);
  GPU_CHECK_LAUNCH(name);
}

// launch_or_describe with `smem` bytes of dynamic shared memory a block (an ordinary launch).
template <class... P, class... A>
void launch_smem_or_describe(const char* name, void (*kernel)(P...), int64_t blocks, int threads,
                             size_t smem, cudaStream_t stream, KernelFacts* facts, A&&... args) {
  launch_early_or_describe(name, kernel, blocks, threads, smem, stream, facts, false,
                           std::forward<A>(args)...);
}

}  // namespace conv1d
