// Chapter 10's forward kernels in fp16 storage (see forward_kernels.cuh).
#include "chapters/10_packed_sequences/forward_kernels.cuh"

namespace conv1d::ch10 {
template void run_forward<__half>(const Forward<__half>&, int, int, int, cudaStream_t,
                                  KernelFacts*);
template void run_tap_words<__half>(const Forward<__half>&, int, cudaStream_t);
template void run_row_edges<__half>(const Forward<__half>&, int, cudaStream_t);
}  // namespace conv1d::ch10
