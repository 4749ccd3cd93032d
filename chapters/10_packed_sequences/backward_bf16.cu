// Chapter 10's backward kernels in bf16 storage (see backward_kernels.cuh).
#include "chapters/10_packed_sequences/backward_kernels.cuh"

namespace conv1d::ch10 {
template void run_backward<__nv_bfloat16>(const Backward<__nv_bfloat16>&, int, const BwdChoices&,
                                          cudaStream_t, KernelFacts*);
template void run_tap_words<__nv_bfloat16>(const Backward<__nv_bfloat16>&, int, cudaStream_t);
}  // namespace conv1d::ch10
