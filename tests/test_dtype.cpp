// Storage-format conversions: exhaustive round trips, hand-picked rounding cases, and a randomized
// comparison against a slow reference that finds the nearest value by exact comparisons.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#include "common/dtype.h"

namespace conv1d {
namespace {

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

bool half_is_nan(uint16_t h) { return (h & 0x7C00u) == 0x7C00u && (h & 0x03FFu) != 0; }
bool bf16_is_nan(uint16_t b) { return (b & 0x7F80u) == 0x7F80u && (b & 0x007Fu) != 0; }

// Independent decoders (not the library's): value = mantissa * 2^exponent in double arithmetic.
double ref_half_value(uint16_t h) {
  const int e = (h >> 10) & 0x1F, m = h & 0x3FF;
  const double mag = e == 31  ? (m ? std::numeric_limits<double>::quiet_NaN()
                                   : std::numeric_limits<double>::infinity())
                     : e == 0 ? std::ldexp(m, -24)
                              : std::ldexp(1024 + m, e - 25);
  return (h & 0x8000) ? -mag : mag;
}
double ref_bf16_value(uint16_t b) {
  const int e = (b >> 7) & 0xFF, m = b & 0x7F;
  const double mag = e == 255 ? (m ? std::numeric_limits<double>::quiet_NaN()
                                   : std::numeric_limits<double>::infinity())
                     : e == 0 ? std::ldexp(m, -133)
                              : std::ldexp(128 + m, e - 134);
  return (b & 0x8000) ? -mag : mag;
}

// Slow reference rounding of a finite double to a 16-bit format: binary-search the largest
// non-negative pattern whose value is <= |x| (the positive patterns are ordered like their values),
// then compare |x| with the midpoint to the next pattern. Midpoints of 16-bit values are exact in
// double, so every comparison is exact. Past the largest finite value, the next "pattern" is
// infinity, placed at max + 1 ulp for the comparison (IEEE 754 overflow rule).
template <class Decode>
uint16_t ref_round(double x, Decode value_of, uint16_t max_finite, uint16_t inf_bits) {
  const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  const double a = std::fabs(x);
  uint16_t lo = 0, hi = max_finite;  // invariant: value_of(lo) <= a
  if (a >= value_of(max_finite)) {
    lo = max_finite;
  } else {
    while (hi - lo > 1) {
      const uint16_t mid = static_cast<uint16_t>((lo + hi) / 2);
      if (value_of(mid) <= a)
        lo = mid;
      else
        hi = mid;
    }
  }
  const double v_lo = value_of(lo);
  const double v_hi = lo == max_finite ? 2 * v_lo - value_of(static_cast<uint16_t>(max_finite - 1))
                                       : value_of(static_cast<uint16_t>(lo + 1));
  const uint16_t up = lo == max_finite ? inf_bits : static_cast<uint16_t>(lo + 1);
  const double mid = (v_lo + v_hi) / 2;
  uint16_t r;
  if (a < mid)
    r = lo;
  else if (a > mid)
    r = up;
  else
    r = (lo & 1) ? up : lo;  // tie: the even pattern
  return static_cast<uint16_t>(sign | r);
}
uint16_t ref_half(double x) { return ref_round(x, ref_half_value, 0x7BFF, 0x7C00); }
uint16_t ref_bf16(double x) { return ref_round(x, ref_bf16_value, 0x7F7F, 0x7F80); }

// A small deterministic generator local to this test (independent of the library's Rng).
struct Lcg {
  uint64_t s;
  uint32_t next() {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<uint32_t>(s >> 32);
  }
};

// ---- names, parsing, sizes, tolerances ------------------------------------------------------------

TEST(Dtype, NamesAndSizes) {
  EXPECT_STREQ(dtype_name(Dtype::fp32), "fp32");
  EXPECT_STREQ(dtype_name(Dtype::fp16), "fp16");
  EXPECT_STREQ(dtype_name(Dtype::bf16), "bf16");
  EXPECT_EQ(dtype_bytes(Dtype::fp32), 4);
  EXPECT_EQ(dtype_bytes(Dtype::fp16), 2);
  EXPECT_EQ(dtype_bytes(Dtype::bf16), 2);
}

TEST(Dtype, ParseGood) {
  const struct {
    const char* s;
    Dtype t;
  } cases[] = {{"fp32", Dtype::fp32},    {"float32", Dtype::fp32}, {"fp16", Dtype::fp16},
               {"float16", Dtype::fp16}, {"bf16", Dtype::bf16},    {"bfloat16", Dtype::bf16}};
  for (const auto& c : cases) {
    Dtype t = c.t == Dtype::fp32 ? Dtype::bf16 : Dtype::fp32;  // something else first
    EXPECT_TRUE(parse_dtype(c.s, &t)) << c.s;
    EXPECT_EQ(t, c.t) << c.s;
  }
  // Every name parses back to itself.
  for (Dtype t : {Dtype::fp32, Dtype::fp16, Dtype::bf16}) {
    Dtype u = Dtype::fp32;
    EXPECT_TRUE(parse_dtype(dtype_name(t), &u));
    EXPECT_EQ(u, t);
  }
}

TEST(Dtype, ParseBad) {
  for (const char* s : {"", "FP32", "Fp16", "fp64", "half", "float", "bfloat", " fp16", "fp16 ",
                        "bf16x", "f32", "int8", "float32\n"}) {
    Dtype t = Dtype::bf16;
    EXPECT_FALSE(parse_dtype(s, &t)) << '"' << s << '"';
    EXPECT_EQ(t, Dtype::bf16) << "output must be untouched on failure: " << s;
  }
}

TEST(Dtype, DefaultTolerances) {
  EXPECT_DOUBLE_EQ(default_tolerance(Dtype::fp32).atol, 1e-3);
  EXPECT_DOUBLE_EQ(default_tolerance(Dtype::fp32).rtol, 3e-4);
  EXPECT_DOUBLE_EQ(default_tolerance(Dtype::fp16).atol, 5e-3);
  EXPECT_DOUBLE_EQ(default_tolerance(Dtype::fp16).rtol, 3e-3);
  EXPECT_DOUBLE_EQ(default_tolerance(Dtype::bf16).atol, 5e-2);
  EXPECT_DOUBLE_EQ(default_tolerance(Dtype::bf16).rtol, 1e-2);
}

// ---- exhaustive round trips -----------------------------------------------------------------------

TEST(Half, EveryPatternRoundTrips) {
  for (uint32_t i = 0; i < 0x10000; ++i) {
    const uint16_t h = static_cast<uint16_t>(i);
    const float f = half_bits_to_float(h);
    const uint16_t back = float_to_half_bits(f);
    if (half_is_nan(h)) {
      ASSERT_TRUE(std::isnan(f)) << std::hex << i;
      ASSERT_TRUE(half_is_nan(back)) << std::hex << i;
      ASSERT_EQ(back & 0x8000, h & 0x8000) << "sign of NaN " << std::hex << i;
      ASSERT_EQ(back, h | 0x0200) << "NaN comes back quiet with its payload " << std::hex << i;
    } else {
      ASSERT_EQ(back, h) << std::hex << i;
      ASSERT_EQ(static_cast<double>(f), ref_half_value(h)) << "exact decoding " << std::hex << i;
    }
  }
}

TEST(BFloat16, EveryPatternRoundTrips) {
  for (uint32_t i = 0; i < 0x10000; ++i) {
    const uint16_t b = static_cast<uint16_t>(i);
    const float f = bf16_bits_to_float(b);
    const uint16_t back = float_to_bf16_bits(f);
    if (bf16_is_nan(b)) {
      ASSERT_TRUE(std::isnan(f)) << std::hex << i;
      ASSERT_TRUE(bf16_is_nan(back)) << std::hex << i;
      ASSERT_EQ(back, b | 0x0040) << "NaN comes back quiet with its payload " << std::hex << i;
    } else {
      ASSERT_EQ(back, b) << std::hex << i;
      ASSERT_EQ(bits_of(f), static_cast<uint32_t>(b) << 16) << std::hex << i;
      ASSERT_EQ(static_cast<double>(f), ref_bf16_value(b)) << std::hex << i;
    }
  }
}

// ---- hand-picked cases ----------------------------------------------------------------------------

TEST(Half, HandPickedCases) {
  EXPECT_EQ(float_to_half_bits(1.0f), 0x3C00);
  EXPECT_EQ(float_to_half_bits(-2.0f), 0xC000);
  EXPECT_EQ(float_to_half_bits(0.0f), 0x0000);
  EXPECT_EQ(float_to_half_bits(-0.0f), 0x8000);
  EXPECT_EQ(float_to_half_bits(65504.0f), 0x7BFF);   // largest finite
  EXPECT_EQ(float_to_half_bits(65519.99f), 0x7BFF);  // just below the tie with infinity
  EXPECT_EQ(float_to_half_bits(65520.0f), 0x7C00);   // tie: the even neighbour is infinity
  EXPECT_EQ(float_to_half_bits(-65520.0f), 0xFC00);
  EXPECT_EQ(float_to_half_bits(1e10f), 0x7C00);
  EXPECT_EQ(float_to_half_bits(std::numeric_limits<float>::max()), 0x7C00);
  EXPECT_EQ(float_to_half_bits(std::numeric_limits<float>::infinity()), 0x7C00);
  EXPECT_EQ(float_to_half_bits(-std::numeric_limits<float>::infinity()), 0xFC00);
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.0f, -14)), 0x0400);     // smallest normal
  EXPECT_EQ(float_to_half_bits(std::ldexp(1023.0f, -24)), 0x03FF);  // largest subnormal
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.0f, -24)), 0x0001);     // smallest subnormal
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.0f, -25)), 0x0000);     // tie to even: zero
  EXPECT_EQ(float_to_half_bits(-std::ldexp(1.0f, -25)), 0x8000);
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.5f, -25)), 0x0001);  // above the tie
  EXPECT_EQ(float_to_half_bits(std::ldexp(3.0f, -25)), 0x0002);  // tie 1.5 ulp: even is 2
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.0f, -26)), 0x0000);
  EXPECT_EQ(float_to_half_bits(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(float_to_half_bits(std::ldexp(2047.0f, -25)), 0x0400);  // subnormal rounds up to normal
  EXPECT_EQ(float_to_half_bits(1.0f + std::ldexp(1.0f, -11)), 0x3C00);      // tie, down to even
  EXPECT_EQ(float_to_half_bits(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);  // tie, up to even
  EXPECT_EQ(float_to_half_bits(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)), 0x3C01);
  EXPECT_EQ(float_to_half_bits(2048.0f + 1.0f), 0x6800);  // tie at ulp 2
  EXPECT_EQ(float_to_half_bits(2048.0f + 3.0f), 0x6802);
  EXPECT_EQ(float_to_half_bits(0.1f), 0x2E66);
  EXPECT_EQ(float_to_half_bits(1.0f / 3.0f), 0x3555);

  const uint16_t qnan = float_to_half_bits(std::numeric_limits<float>::quiet_NaN());
  EXPECT_TRUE(half_is_nan(qnan));
  EXPECT_TRUE(qnan & 0x0200) << "quiet";
  const uint16_t snan = float_to_half_bits(std::numeric_limits<float>::signaling_NaN());
  EXPECT_TRUE(half_is_nan(snan));
  EXPECT_TRUE(snan & 0x0200) << "a signaling NaN comes out quiet";
  EXPECT_TRUE(half_is_nan(float_to_half_bits(float_of(0x7F800001u))))
      << "payload only in the low bits";
  EXPECT_EQ(float_to_half_bits(float_of(0xFFFFFFFFu)), 0xFFFF) << "all-ones poison stays all-ones";

  EXPECT_EQ(half_bits_to_float(0x3C00), 1.0f);
  EXPECT_EQ(half_bits_to_float(0x7BFF), 65504.0f);
  EXPECT_EQ(half_bits_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(half_bits_to_float(0x7C00), std::numeric_limits<float>::infinity());
  EXPECT_EQ(half_bits_to_float(0xFC00), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::signbit(half_bits_to_float(0x8000)));
  EXPECT_TRUE(std::isnan(half_bits_to_float(0xFFFF)));
}

TEST(BFloat16, HandPickedCases) {
  EXPECT_EQ(float_to_bf16_bits(1.0f), 0x3F80);
  EXPECT_EQ(float_to_bf16_bits(-1.0f), 0xBF80);
  EXPECT_EQ(float_to_bf16_bits(-0.0f), 0x8000);
  EXPECT_EQ(float_to_bf16_bits(1.0f + std::ldexp(1.0f, -8)), 0x3F80);      // tie, down to even
  EXPECT_EQ(float_to_bf16_bits(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3F82);  // tie, up to even
  EXPECT_EQ(float_to_bf16_bits(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -23)), 0x3F81);
  EXPECT_EQ(float_to_bf16_bits(float_of(0x7F7F0000u)), 0x7F7F);  // largest finite
  EXPECT_EQ(float_to_bf16_bits(float_of(0x7F7F7FFFu)), 0x7F7F);  // just below the tie
  EXPECT_EQ(float_to_bf16_bits(float_of(0x7F7F8000u)), 0x7F80);  // tie: even neighbour is infinity
  EXPECT_EQ(float_to_bf16_bits(std::numeric_limits<float>::max()), 0x7F80);
  EXPECT_EQ(float_to_bf16_bits(-std::numeric_limits<float>::max()), 0xFF80);
  EXPECT_EQ(float_to_bf16_bits(std::numeric_limits<float>::infinity()), 0x7F80);
  EXPECT_EQ(float_to_bf16_bits(float_of(0x00000001u)), 0x0000);  // float subnormals
  EXPECT_EQ(float_to_bf16_bits(float_of(0x00008000u)), 0x0000);  // tie to even zero
  EXPECT_EQ(float_to_bf16_bits(float_of(0x00018000u)), 0x0002);
  EXPECT_EQ(float_to_bf16_bits(float_of(0x007FFFFFu)), 0x0080);  // rounds up to the smallest normal
  EXPECT_EQ(float_to_bf16_bits(3.14159265f), 0x4049);
  const uint16_t nan = float_to_bf16_bits(std::numeric_limits<float>::quiet_NaN());
  EXPECT_TRUE(bf16_is_nan(nan));
  EXPECT_TRUE(bf16_is_nan(float_to_bf16_bits(float_of(0x7F800001u))))
      << "NaN must not round to infinity";
  EXPECT_TRUE(bf16_is_nan(float_to_bf16_bits(float_of(0x7FFFFFFFu))))
      << "NaN must not carry into the sign";
  EXPECT_EQ(float_to_bf16_bits(float_of(0x7FFFFFFFu)), 0x7FFF);
  EXPECT_EQ(float_to_bf16_bits(float_of(0xFFFFFFFFu)), 0xFFFF);
  EXPECT_EQ(bf16_bits_to_float(0x3F80), 1.0f);
  EXPECT_EQ(bits_of(bf16_bits_to_float(0x7F7F)), 0x7F7F0000u);
}

// ---- randomized comparison with the slow reference ------------------------------------------------

// Floats near the interesting ranges: random bits with exponents from below the smallest subnormal
// to above the overflow threshold, exact midpoints between neighbours and their float neighbours.
TEST(Half, RandomAgainstReference) {
  Lcg g{12345};
  for (int i = 0; i < 200000; ++i) {
    float f;
    switch (i % 4) {
      case 0: f = float_of(g.next()); break;  // anything
      case 1: {                               // exponent in [2^-27, 2^17)
        const uint32_t e = 100 + g.next() % 44;
        f = float_of((g.next() & 0x807FFFFFu) | (e << 23));
        break;
      }
      default: {  // a midpoint between two neighbouring halves, nudged by -1, 0, +1 float ulp
        const uint16_t h = static_cast<uint16_t>(g.next() % 0x7BFF);
        const float mid = static_cast<float>(
            (ref_half_value(h) + ref_half_value(static_cast<uint16_t>(h + 1))) / 2);
        const int nudge = static_cast<int>(g.next() % 3) - 1;
        f = nudge == 0 ? mid : std::nextafter(mid, nudge > 0 ? 1e30f : -1e30f);
        if (g.next() & 1) f = -f;
      }
    }
    if (std::isnan(f)) continue;
    ASSERT_EQ(float_to_half_bits(f), ref_half(f)) << "float bits 0x" << std::hex << bits_of(f);
  }
}

TEST(BFloat16, RandomAgainstReference) {
  Lcg g{777};
  for (int i = 0; i < 200000; ++i) {
    float f;
    if (i % 2) {
      f = float_of(g.next());
    } else {
      const uint16_t b = static_cast<uint16_t>(g.next() % 0x7F7F);
      const float mid = static_cast<float>(
          (ref_bf16_value(b) + ref_bf16_value(static_cast<uint16_t>(b + 1))) / 2);
      const int nudge = static_cast<int>(g.next() % 3) - 1;
      f = nudge == 0 ? mid : std::nextafter(mid, nudge > 0 ? 1e38f : -1e38f);
    }
    if (std::isnan(f)) continue;
    ASSERT_EQ(float_to_bf16_bits(f), ref_bf16(f)) << "float bits 0x" << std::hex << bits_of(f);
  }
}

// ---- round_to_dtype: one rounding, straight from the double ---------------------------------------

TEST(RoundToDtype, RoundsTheDoubleDirectly) {
  // 1 + 2^-11 is the half-way point between the halves 1 and 1 + 2^-10. A double slightly above it
  // rounds up; going through float first would land exactly on the tie (2^-40 is below half a float
  // ulp) and then round down to even, to 1.
  const double above = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  ASSERT_EQ(static_cast<double>(static_cast<float>(above)), 1.0 + std::ldexp(1.0, -11))
      << "a tie in float";
  EXPECT_EQ(round_to_dtype(above, Dtype::fp16), 1.0 + std::ldexp(1.0, -10));
  // And the mirror case: just below the tie 1 + 3 * 2^-11, whose even neighbour is above.
  const double below = 1.0 + 3 * std::ldexp(1.0, -11) - std::ldexp(1.0, -40);
  EXPECT_EQ(round_to_dtype(below, Dtype::fp16), 1.0 + std::ldexp(1.0, -10));
  // Exact ties still go to even.
  EXPECT_EQ(round_to_dtype(1.0 + std::ldexp(1.0, -11), Dtype::fp16), 1.0);
  EXPECT_EQ(round_to_dtype(1.0 + 3 * std::ldexp(1.0, -11), Dtype::fp16), 1.0 + std::ldexp(1.0, -9));
  // The same for a subnormal half: 2^-25 is the tie between 0 and 2^-24.
  EXPECT_EQ(round_to_dtype(std::ldexp(1.0, -25) + std::ldexp(1.0, -60), Dtype::fp16),
            std::ldexp(1.0, -24));
  EXPECT_EQ(round_to_dtype(std::ldexp(1.0, -25), Dtype::fp16), 0.0);
  // And near the overflow threshold: 65520 - tiny stays finite, 65520 overflows.
  EXPECT_EQ(round_to_dtype(65520.0 - std::ldexp(1.0, -30), Dtype::fp16), 65504.0);
  EXPECT_TRUE(std::isinf(round_to_dtype(65520.0, Dtype::fp16)));

  // bf16: the tie between 1 and 1 + 2^-7 is 1 + 2^-8.
  const double bf_above = 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40);
  ASSERT_EQ(static_cast<double>(static_cast<float>(bf_above)), 1.0 + std::ldexp(1.0, -8));
  EXPECT_EQ(round_to_dtype(bf_above, Dtype::bf16), 1.0 + std::ldexp(1.0, -7));
  EXPECT_EQ(round_to_dtype(1.0 + std::ldexp(1.0, -8), Dtype::bf16), 1.0);

  // fp32 from double: ties to even, overflow, float subnormals, double subnormals.
  EXPECT_EQ(round_to_dtype(1.0 + std::ldexp(1.0, -24), Dtype::fp32), 1.0);
  EXPECT_EQ(round_to_dtype(1.0 + std::ldexp(1.0, -24) + std::ldexp(1.0, -40), Dtype::fp32),
            1.0 + std::ldexp(1.0, -23));
  EXPECT_EQ(round_to_dtype(0.1, Dtype::fp32), static_cast<double>(0.1f));
  EXPECT_TRUE(std::isinf(round_to_dtype(1e39, Dtype::fp32)));
  EXPECT_TRUE(std::isinf(round_to_dtype(std::numeric_limits<double>::max(), Dtype::fp32)));
  EXPECT_EQ(round_to_dtype(std::ldexp(1.0, -150), Dtype::fp32), 0.0);
  EXPECT_EQ(round_to_dtype(std::ldexp(1.0, -150) * 1.0000001, Dtype::fp32), std::ldexp(1.0, -149));
  EXPECT_EQ(round_to_dtype(std::numeric_limits<double>::denorm_min(), Dtype::fp32), 0.0);
  EXPECT_TRUE(
      std::signbit(round_to_dtype(-std::numeric_limits<double>::denorm_min(), Dtype::fp32)));

  for (Dtype t : {Dtype::fp32, Dtype::fp16, Dtype::bf16}) {
    EXPECT_TRUE(std::isnan(round_to_dtype(std::numeric_limits<double>::quiet_NaN(), t)))
        << dtype_name(t);
    EXPECT_EQ(round_to_dtype(std::numeric_limits<double>::infinity(), t),
              std::numeric_limits<double>::infinity());
    EXPECT_EQ(round_to_dtype(-std::numeric_limits<double>::infinity(), t),
              -std::numeric_limits<double>::infinity());
    EXPECT_TRUE(std::signbit(round_to_dtype(-0.0, t)));
    EXPECT_EQ(round_to_dtype(0.5, t), 0.5);
    EXPECT_EQ(round_to_dtype(-3.0, t), -3.0);
  }
}

TEST(RoundToDtype, RandomDoublesAgainstReference) {
  Lcg g{4242};
  for (int i = 0; i < 100000; ++i) {
    // Random doubles across the half/bf16 ranges, half of them placed right next to a 16-bit tie.
    const uint64_t m = (static_cast<uint64_t>(g.next()) << 32) | g.next();
    double x = std::ldexp(1.0 + static_cast<double>(m >> 12) * 0x1.0p-52,
                          static_cast<int>(g.next() % 60) - 30);
    if (i % 2) {
      const uint16_t h = static_cast<uint16_t>(g.next() % 0x7BFF);
      const double mid = (ref_half_value(h) + ref_half_value(static_cast<uint16_t>(h + 1))) / 2;
      x = mid + (static_cast<int>(g.next() % 3) - 1) * std::ldexp(std::fabs(mid) + 1e-30, -45);
    }
    if (g.next() & 1) x = -x;
    ASSERT_EQ(round_to_dtype(x, Dtype::fp16), ref_half_value(ref_half(x))) << std::hexfloat << x;
    ASSERT_EQ(round_to_dtype(x, Dtype::bf16), ref_bf16_value(ref_bf16(x))) << std::hexfloat << x;
  }
}

}  // namespace
}  // namespace conv1d
