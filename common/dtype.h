// Storage formats and their host-side conversions.
//
// fp16 and bf16 values live on the host as their raw 16-bit patterns (`Half`, `BFloat16`), which
// have the same size and layout as the device types (__half, __nv_bfloat16), so host buffers can be
// copied to the device unchanged. Conversions from float round to nearest, ties to even, exactly as
// the hardware's default conversion does; NaN stays NaN and overflow goes to infinity.
#pragma once

#include <cstdint>
#include <string>

namespace conv1d {

enum class Dtype { fp32, fp16, bf16 };

const char* dtype_name(Dtype t);  // "fp32", "fp16", "bf16"
bool parse_dtype(const std::string& s, Dtype* out);
int dtype_bytes(Dtype t);  // 4, 2, 2

struct Half {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};
static_assert(sizeof(Half) == 2 && sizeof(BFloat16) == 2, "16-bit storage types must be 2 bytes");

uint16_t float_to_half_bits(float f);  // round to nearest even, subnormals included
float half_bits_to_float(uint16_t h);
uint16_t float_to_bf16_bits(float f);  // round to nearest even
float bf16_bits_to_float(uint16_t b);

// Value `v` after a round trip through the storage format (what the device will see).
double round_to_dtype(double v, Dtype t);

// Per-dtype verification tolerance: |out - ref| <= atol + rtol * |ref|.
struct Tolerance {
  double atol, rtol;
};
Tolerance default_tolerance(Dtype t);

}  // namespace conv1d
