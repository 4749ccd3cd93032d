// Small pieces of arithmetic that host and device code share.
#pragma once

#include <cstdint>

// __host__ __device__ where a GPU compiler reads the file, nothing where a plain C++ compiler does.
#if defined(__CUDACC__) || defined(__HIP__)
#define CONV1D_HOST_DEVICE __host__ __device__
#else
#define CONV1D_HOST_DEVICE
#endif

namespace conv1d {

// How many pieces of size b cover a (a >= 0, b > 0): blocks for a grid, tiles for a length.
CONV1D_HOST_DEVICE constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// A grid's y and z dimensions stop at 65535 blocks (x at 2^31 - 1): kernels that put work there
// stride over what lies beyond.
constexpr int64_t kMaxGridY = 65535;
constexpr int64_t kMaxGridZ = 65535;

}  // namespace conv1d
