// Chapter 08's kernels in fp16 storage (see kernels.cuh).
#include "chapters/08_direct_forward/kernels.cuh"

namespace conv1d::ch08 {
CONV1D_CH08_LAUNCHES(, __half)
}  // namespace conv1d::ch08
