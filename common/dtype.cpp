// Host-side conversions between double/float and the 16-bit storage formats.
//
// All rounding goes through one routine, `round_to_format`, that rounds a double straight to a
// binary floating-point format of any width up to 32 bits (fp32, fp16, bf16). Rounding the double
// directly matters: double -> float -> half rounds twice, and the first rounding can turn a value
// slightly off a half-way point into an exact tie that the second rounding then breaks the wrong
// way. A float converts to double exactly, so the float -> half/bf16 functions share the routine.
#include "common/dtype.h"

#include <cmath>
#include <cstring>

namespace conv1d {

namespace {

// A binary interchange format: `exp_bits` exponent bits, `man_bits` stored mantissa bits.
struct Format {
  int exp_bits, man_bits;
};
constexpr Format kFp32{8, 23};
constexpr Format kFp16{5, 10};
constexpr Format kBf16{8, 7};

uint64_t double_bits(double v) {
  uint64_t u;
  std::memcpy(&u, &v, sizeof u);
  return u;
}

uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

float float_from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// Rounds `v` to the nearest value of format `fmt` (ties to even) and returns its bit pattern.
// Finite values beyond the largest finite one round to infinity as IEEE 754 prescribes (anything
// at or above max + half an ulp). NaN gives a quiet NaN that keeps the sign and the top bits of
// the payload.
uint32_t round_to_format(double v, Format fmt) {
  const uint64_t u = double_bits(v);
  const uint32_t sign = static_cast<uint32_t>(u >> 63) << (fmt.exp_bits + fmt.man_bits);
  const int dexp = static_cast<int>((u >> 52) & 0x7FF);
  const uint64_t dman = u & ((uint64_t{1} << 52) - 1);

  const uint32_t exp_ones = ((uint32_t{1} << fmt.exp_bits) - 1) << fmt.man_bits;
  if (dexp == 0x7FF) {  // infinity or NaN
    if (dman == 0) return sign | exp_ones;
    const uint32_t quiet = uint32_t{1} << (fmt.man_bits - 1);
    const uint32_t payload = static_cast<uint32_t>(dman >> (52 - fmt.man_bits));
    return sign | exp_ones | quiet | payload;
  }
  if (dexp == 0 && dman == 0) return sign;  // +-0

  // v = sig * 2^e exactly, with the leading one of sig at bit `msb`.
  uint64_t sig;
  int e, msb;
  if (dexp != 0) {
    sig = dman | (uint64_t{1} << 52);
    e = dexp - 1075;  // bias 1023, plus 52 fraction bits
    msb = 52;
  } else {
    sig = dman;
    e = -1074;
    msb = 51;
    while (!(sig >> msb)) --msb;
  }

  const int bias = (1 << (fmt.exp_bits - 1)) - 1;
  const int emin = 1 - bias;             // exponent of the smallest normal
  const int emax = bias;                 // exponent of the largest finite
  const int x = msb + e;                 // v = 1.f * 2^x
  if (x > emax) return sign | exp_ones;  // >= 2^(emax+1): beyond every finite value

  // The spacing of the target's values around v is 2^q: normals carry man_bits fraction bits,
  // subnormals share the smallest normal's spacing.
  const bool normal = x >= emin;
  const int q = (normal ? x : emin) - fmt.man_bits;
  const int shift = q - e;  // drop this many low bits of sig
  uint64_t r;               // v / 2^q, rounded to an integer
  if (shift <= 0) {
    r = sig << -shift;  // exact (cannot happen for the formats above, kept for completeness)
  } else if (shift > 60) {
    r = 0;  // sig < 2^53 is far below half a spacing
  } else {
    r = sig >> shift;
    const uint64_t rest = sig & ((uint64_t{1} << shift) - 1);
    const uint64_t half = uint64_t{1} << (shift - 1);
    if (rest > half || (rest == half && (r & 1))) ++r;
  }

  // Encoding: for a subnormal the integer r is the bit pattern itself (r == 2^man_bits, reached by
  // rounding up, is the smallest normal's pattern). For a normal, the exponent field plus the
  // fraction r - 2^man_bits; a carry out of the fraction (r == 2^(man_bits+1)) adds exactly one to
  // the exponent field, and a carry into the all-ones exponent is the overflow to infinity.
  uint64_t enc;
  if (normal) {
    enc = (static_cast<uint64_t>(x + bias) << fmt.man_bits) + (r - (uint64_t{1} << fmt.man_bits));
    if (enc >= exp_ones) return sign | exp_ones;
  } else {
    enc = r;
  }
  return sign | static_cast<uint32_t>(enc);
}

// Exact decoding of a 16-bit half pattern.
float decode_half(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  const uint32_t man = h & 0x3FFu;
  if (exp == 0x1F)
    return float_from_bits(sign | 0x7F800000u | (man << 13));  // inf, NaN (payload kept)
  if (exp != 0) return float_from_bits(sign | ((exp - 15 + 127) << 23) | (man << 13));
  // Subnormal or zero: man * 2^-24, exact in float.
  const float mag = std::ldexp(static_cast<float>(man), -24);
  return sign ? -mag : mag;
}

}  // namespace

const char* dtype_name(Dtype t) {
  switch (t) {
    case Dtype::fp32: return "fp32";
    case Dtype::fp16: return "fp16";
    case Dtype::bf16: return "bf16";
  }
  return "unknown";
}

bool parse_dtype(const std::string& s, Dtype* out) {
  Dtype t;
  if (s == "fp32" || s == "float32") {
    t = Dtype::fp32;
  } else if (s == "fp16" || s == "float16") {
    t = Dtype::fp16;
  } else if (s == "bf16" || s == "bfloat16") {
    t = Dtype::bf16;
  } else {
    return false;  // *out untouched
  }
  if (out) *out = t;
  return true;
}

int dtype_bytes(Dtype t) {
  switch (t) {
    case Dtype::fp32: return 4;
    case Dtype::fp16: return 2;
    case Dtype::bf16: return 2;
  }
  return 0;
}

uint16_t float_to_half_bits(float f) {
  const uint32_t u = float_bits(f);
  if ((u & 0x7F800000u) == 0x7F800000u && (u & 0x007FFFFFu) != 0) {
    // NaN: handled on the bits, so a signaling NaN is not passed through a float->double
    // conversion.
    return static_cast<uint16_t>(((u >> 16) & 0x8000u) | 0x7E00u | ((u >> 13) & 0x03FFu));
  }
  return static_cast<uint16_t>(round_to_format(static_cast<double>(f), kFp16));
}

float half_bits_to_float(uint16_t h) { return decode_half(h); }

uint16_t float_to_bf16_bits(float f) {
  const uint32_t u = float_bits(f);
  if ((u & 0x7F800000u) == 0x7F800000u && (u & 0x007FFFFFu) != 0) {
    return static_cast<uint16_t>((u >> 16) | 0x0040u);  // NaN: quiet, sign and top payload kept
  }
  // bf16 is the upper half of a float: round the lower 16 bits away, ties to even. A carry runs
  // into the exponent as it should; the largest finite values carry into the infinity pattern.
  const uint32_t lsb = (u >> 16) & 1u;
  return static_cast<uint16_t>((u + 0x7FFFu + lsb) >> 16);
}

float bf16_bits_to_float(uint16_t b) { return float_from_bits(static_cast<uint32_t>(b) << 16); }

double round_to_dtype(double v, Dtype t) {
  switch (t) {
    case Dtype::fp32: return static_cast<double>(float_from_bits(round_to_format(v, kFp32)));
    case Dtype::fp16:
      return static_cast<double>(
          half_bits_to_float(static_cast<uint16_t>(round_to_format(v, kFp16))));
    case Dtype::bf16:
      return static_cast<double>(
          bf16_bits_to_float(static_cast<uint16_t>(round_to_format(v, kBf16))));
  }
  return v;
}

Tolerance default_tolerance(Dtype t) {
  switch (t) {
    case Dtype::fp32: return {1e-3, 3e-4};
    case Dtype::fp16: return {5e-3, 3e-3};
    case Dtype::bf16: return {5e-2, 1e-2};
  }
  return {0.0, 0.0};
}

}  // namespace conv1d
