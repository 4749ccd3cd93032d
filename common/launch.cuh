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
};

template <class... P>
KernelFacts kernel_facts(void (*kernel)(P...), int threads) {
  cudaFuncAttributes attr{};
  GPU_CHECK(cudaFuncGetAttributes(&attr, kernel));
  KernelFacts f;
  f.registers = attr.numRegs;
  f.local_bytes = attr.localSizeBytes;
  f.threads = threads;
  GPU_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&f.blocks_per_sm, kernel, threads, 0));
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

}  // namespace conv1d
