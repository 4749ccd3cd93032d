// Chapter 10's backward kernels in fp16 storage (see backward_kernels.cuh).
#include "chapters/10_packed_sequences/backward_kernels.cuh"

namespace conv1d::ch10 {
template void run_backward<__half>(const Backward<__half>&, int, const BwdChoices&, cudaStream_t,
                                   KernelFacts*);
template void run_tap_words<__half>(const Backward<__half>&, int, cudaStream_t);
}  // namespace conv1d::ch10
