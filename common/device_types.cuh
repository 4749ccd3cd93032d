// Storage types on the device and the conversions kernels use: every kernel loads its storage type,
// computes in fp32, and stores back with round-to-nearest-even.
#pragma once

#include <stdexcept>
#include <string>
#include <type_traits>

#include "common/dtype.h"
#include "common/gpu.h"

namespace conv1d {

// Host storage type -> device storage type of the same bits.
template <class HostT>
struct DeviceStorage;
template <>
struct DeviceStorage<float> {
  using type = float;
};
template <>
struct DeviceStorage<Half> {
  using type = __half;
};
template <>
struct DeviceStorage<BFloat16> {
  using type = __nv_bfloat16;
};
template <class HostT>
using device_t = typename DeviceStorage<HostT>::type;

__host__ __device__ inline float to_float(float v) { return v; }
__device__ inline float to_float(__half v) { return __half2float(v); }
__device__ inline float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

template <class T>
__device__ inline T from_float(float v);
template <>
__device__ inline float from_float<float>(float v) {
  return v;
}
template <>
__device__ inline __half from_float<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ inline __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

// Calls f(tag) with tag's ::type the host storage type of `t` (float, Half or BFloat16).
template <class T>
struct TypeTag {
  using type = T;
};
template <class F>
decltype(auto) dispatch_storage(Dtype t, F&& f) {
  switch (t) {
    case Dtype::fp16: return f(TypeTag<Half>{});
    case Dtype::bf16: return f(TypeTag<BFloat16>{});
    case Dtype::fp32:
    default: return f(TypeTag<float>{});
  }
}

// Calls f(width) with width a compile-time constant (std::integral_constant<int, W>) for W = 2, 3,
// 4: kernels keep their W taps in registers, which needs W known when they are compiled.
template <class F>
decltype(auto) dispatch_width(int width, F&& f) {
  switch (width) {
    case 2: return f(std::integral_constant<int, 2>{});
    case 3: return f(std::integral_constant<int, 3>{});
    case 4: return f(std::integral_constant<int, 4>{});
  }
  throw std::invalid_argument("width must be 2, 3 or 4 (got " + std::to_string(width) + ")");
}

}  // namespace conv1d
