// Chapter 10's backward kernels in fp32 storage (see backward_kernels.cuh).
#include "chapters/10_packed_sequences/backward_kernels.cuh"

namespace conv1d::ch10 {
template void run_backward<float>(const Backward<float>&, int, const BwdChoices&, cudaStream_t,
                                  KernelFacts*);
template void run_tap_words<float>(const Backward<float>&, int, cudaStream_t);
}  // namespace conv1d::ch10
