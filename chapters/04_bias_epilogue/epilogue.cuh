// The epilogue of the forward pass: what happens to a finished fp32 accumulator before it is
// stored. One device function, shared by every kernel that ends the convolution: chapter 04's
// separate add_bias pass and its fused naive GEMM, chapter 05's tensor-core GEMMs, chapter 08's
// direct kernels (which add the bias they hold in registers and call silu_if).
#pragma once

#include <cstdint>

#include "common/cli.h"
#include "common/device_types.cuh"

namespace conv1d {

// [docs:apply_bias_silu]
// bias[channel] added (none when bias is nullptr), then SiLU z / (1 + e^-z) when asked (silu_if); fp32 in and
// out, so the caller rounds once, when it stores. The fast intrinsics (__expf is off by 2 ulp plus
// about one per unit of |z|) are far inside every tolerance; the IEEE exp and division take several
// times their instructions, and a pass over fp16 C finishes eight elements per 16-byte word, so
// they could make that pass compute-bound. Far below zero, e^-z overflows to infinity and z / inf
// gives the right limit, -0.
__device__ __forceinline__ float silu_if(float z, bool silu) {
  return silu ? __fdividef(z, 1.0f + __expf(-z)) : z;
}

template <class T>
__device__ __forceinline__ float apply_bias_silu(float acc, const T* __restrict__ bias,
                                                 int64_t channel, bool silu) {
  return silu_if(bias != nullptr ? acc + to_float(bias[channel]) : acc, silu);
}
// [/docs:apply_bias_silu]

// silu'(z) = s (1 + z (1 - s)) with s = sigmoid(z), in fp32 with the fast exponential (relative
// error about 1e-6 where it matters): what the backward chapters multiply dout by.
__device__ __forceinline__ float silu_grad_f32(float z) {
  const float s = __fdividef(1.0f, 1.0f + __expf(-z));  // sigmoid(z)
  return s * (1.0f + z * (1.0f - s));
}

// The epilogue's arithmetic over a whole output, for the rate models: per element the bias add
// counts 1, SiLU 4 (negate, exponential, add, divide).
inline double epilogue_flops(const Options& o) {
  return double(o.batch) * o.seqlen * o.dim * ((o.bias ? 1 : 0) + (o.silu ? 4 : 0));
}

}  // namespace conv1d
