// Chapter 08's launches for the three storage types, compiled once in the chapter's kernel library
// (kernels_fp32.cu, kernels_fp16.cu, kernels_bf16.cu, side by side in the build): the chapter, its
// tests and chapter 10 (which measures its packed kernels against these) link the library instead
// of compiling every kernel again. Include this, not the kernels' headers, to call a launch.
#pragma once

#include "chapters/08_direct_forward/cf_chunked.cuh"
#include "chapters/08_direct_forward/cf_staged.cuh"
#include "chapters/08_direct_forward/cf_vector.cuh"
#include "chapters/08_direct_forward/cl_staged.cuh"
#include "chapters/08_direct_forward/cl_tiled.cuh"
#include "chapters/08_direct_forward/cl_vector.cuh"
#include "chapters/08_direct_forward/naive.cuh"

// Every launch of the chapter for storage type T: `extern` declares them (compiled elsewhere),
// nothing before `template` defines them (the library's sources).
#define CONV1D_CH08_LAUNCHES(EXTERN, T)                                                            \
  EXTERN template void launch_naive<T>(const DirectArgs<T>&, Layout, int, cudaStream_t,            \
                                       KernelFacts*);                                              \
  EXTERN template void launch_cf_vector<T>(const DirectArgs<T>&, int, cudaStream_t, KernelFacts*); \
  EXTERN template void launch_cf_chunked<T>(const DirectArgs<T>&, int, int, cudaStream_t,          \
                                            KernelFacts*);                                         \
  EXTERN template void launch_cf_staged<T>(const DirectArgs<T>&, int, cudaStream_t, KernelFacts*,  \
                                           int64_t);                                               \
  EXTERN template void launch_cl_vector<T>(const DirectArgs<T>&, int, int, cudaStream_t,           \
                                           KernelFacts*);                                          \
  EXTERN template void launch_cl_tiled<T>(const DirectArgs<T>&, int, int, int, cudaStream_t,       \
                                          KernelFacts*);                                           \
  EXTERN template void launch_cl_staged<T>(const DirectArgs<T>&, int, int, cudaStream_t,           \
                                           KernelFacts*);

namespace conv1d::ch08 {
CONV1D_CH08_LAUNCHES(extern, float)
CONV1D_CH08_LAUNCHES(extern, __half)
CONV1D_CH08_LAUNCHES(extern, __nv_bfloat16)
}  // namespace conv1d::ch08
