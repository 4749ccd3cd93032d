// Chapter 08's kernels in fp32 storage (see kernels.cuh).
#include "chapters/08_direct_forward/kernels.cuh"

namespace conv1d::ch08 {
CONV1D_CH08_LAUNCHES(, float)
}  // namespace conv1d::ch08
