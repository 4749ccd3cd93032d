// Chapter 09's kernels in fp32 storage (see kernels.cuh).
#include "chapters/09_direct_backward/kernels.cuh"

namespace conv1d::ch09 {
CONV1D_CH09_LAUNCHES(, float)
}  // namespace conv1d::ch09
