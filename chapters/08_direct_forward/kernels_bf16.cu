// Chapter 08's kernels in bf16 storage (see kernels.cuh).
#include "chapters/08_direct_forward/kernels.cuh"

namespace conv1d::ch08 {
CONV1D_CH08_LAUNCHES(, __nv_bfloat16)
}  // namespace conv1d::ch08
