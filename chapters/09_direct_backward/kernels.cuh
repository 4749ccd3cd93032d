// Chapter 09's launches for the three storage types, compiled once in the chapter's kernel library
// (kernels_fp32.cu, kernels_fp16.cu, kernels_bf16.cu and reduce.cu, side by side in the build):
// the chapter, its tests and chapter 10 (which measures its packed kernels against these) link the
// library instead of compiling every kernel again. Include this, not the kernels' headers, to call
// a launch.
#pragma once

#include "chapters/09_direct_backward/cf_fused.cuh"
#include "chapters/09_direct_backward/cf_staged.cuh"
#include "chapters/09_direct_backward/cl_staged.cuh"
#include "chapters/09_direct_backward/cl_tiled.cuh"
#include "chapters/09_direct_backward/naive.cuh"
#include "chapters/09_direct_backward/reduce.cuh"

// Every launch of the chapter for storage type T: `extern` declares them (compiled elsewhere),
// nothing before `template` defines them (the library's sources).
#define CONV1D_CH09_LAUNCHES(EXTERN, T)                                                            \
  EXTERN template void launch_naive_dx<T>(const BwdArgs<T>&, Layout, int, cudaStream_t,            \
                                          KernelFacts*);                                           \
  EXTERN template void launch_naive_dweight<T>(const BwdArgs<T>&, Layout, int, cudaStream_t,       \
                                               KernelFacts*);                                      \
  EXTERN template void launch_cf_bwd<T>(const BwdArgs<T>&, int, int, cudaStream_t, KernelFacts*);  \
  EXTERN template void launch_cf_bwd_staged<T>(const BwdArgs<T>&, int, cudaStream_t, KernelFacts*, \
                                               int64_t);                                           \
  EXTERN template void launch_cl_bwd<T>(const BwdArgs<T>&, int, int, int, cudaStream_t,            \
                                        KernelFacts*);                                             \
  EXTERN template void launch_cl_bwd_staged<T>(const BwdArgs<T>&, int, int, cudaStream_t,          \
                                               KernelFacts*);

namespace conv1d::ch09 {
CONV1D_CH09_LAUNCHES(extern, float)
CONV1D_CH09_LAUNCHES(extern, __half)
CONV1D_CH09_LAUNCHES(extern, __nv_bfloat16)
}  // namespace conv1d::ch09
