// Chapter 10's forward kernels in fp32 storage (see forward_kernels.cuh).
#include "chapters/10_packed_sequences/forward_kernels.cuh"

namespace conv1d::ch10 {
template void run_forward<float>(const Forward<float>&, int, int, int, cudaStream_t, KernelFacts*);
template void run_tap_words<float>(const Forward<float>&, int, cudaStream_t);
template void run_row_edges<float>(const Forward<float>&, int, cudaStream_t);
}  // namespace conv1d::ch10
