// Named ranges for external profilers: NVTX on CUDA (header-only nvtx3, costs nothing when no tool
// is attached), roctx on AMD when its header exists, nothing otherwise.
#pragma once

#if defined(CONV1D_BACKEND_HIP)
#if defined(CONV1D_HAVE_ROCTX)  // set by CMake when libroctx64 and its header are found
#include <roctracer/roctx.h>
#endif
#else
#include <nvtx3/nvToolsExt.h>
#endif

namespace conv1d {

class NvtxRange {
 public:
  explicit NvtxRange(const char* name) {
#if defined(CONV1D_BACKEND_HIP)
#if defined(CONV1D_HAVE_ROCTX)
    roctxRangePush(name);
#else
    (void)name;
#endif
#else
    nvtxRangePushA(name);
#endif
  }
  ~NvtxRange() {
#if defined(CONV1D_BACKEND_HIP)
#if defined(CONV1D_HAVE_ROCTX)
    roctxRangePop();
#endif
#else
    nvtxRangePop();
#endif
  }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

}  // namespace conv1d
