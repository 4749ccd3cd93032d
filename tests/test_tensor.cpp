// Host arrays, the test-data generator and the layout index arithmetic.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <set>
#include <stdexcept>
#include <vector>

#include "common/tensor.h"

namespace conv1d {
namespace {

const Dtype kAllDtypes[] = {Dtype::fp32, Dtype::fp16, Dtype::bf16};

uint16_t raw16(const HostArray& a, size_t i) {
  uint16_t b;
  std::memcpy(&b, static_cast<const unsigned char*>(a.data()) + 2 * i, 2);
  return b;
}

TEST(Layout, Names) {
  EXPECT_STREQ(layout_name(Layout::channel_first), "channel_first");
  EXPECT_STREQ(layout_name(Layout::channel_last), "channel_last");
}

TEST(Layout, OffsetFormulas) {
  ConvShape s;
  s.batch = 3;
  s.dim = 5;
  s.seqlen = 7;
  EXPECT_EQ(s.elements(), 105);
  // x[B, D, L]: t is contiguous, then d, then b.
  EXPECT_EQ(offset(Layout::channel_first, s, 0, 0, 0), 0);
  EXPECT_EQ(offset(Layout::channel_first, s, 0, 0, 1), 1);
  EXPECT_EQ(offset(Layout::channel_first, s, 0, 1, 0), 7);
  EXPECT_EQ(offset(Layout::channel_first, s, 1, 0, 0), 35);
  EXPECT_EQ(offset(Layout::channel_first, s, 2, 4, 6), 104);
  // x[B, L, D]: d is contiguous, then t, then b.
  EXPECT_EQ(offset(Layout::channel_last, s, 0, 1, 0), 1);
  EXPECT_EQ(offset(Layout::channel_last, s, 0, 0, 1), 5);
  EXPECT_EQ(offset(Layout::channel_last, s, 1, 0, 0), 35);
  EXPECT_EQ(offset(Layout::channel_last, s, 2, 4, 6), 104);
  EXPECT_EQ(offset(Layout::channel_last, s, 1, 2, 3), (1 * 7 + 3) * 5 + 2);
}

TEST(Layout, OffsetIsABijection) {
  ConvShape s;
  s.batch = 2;
  s.dim = 3;
  s.seqlen = 4;
  for (Layout l : {Layout::channel_first, Layout::channel_last}) {
    std::set<int64_t> seen;
    for (int64_t b = 0; b < s.batch; ++b)
      for (int64_t d = 0; d < s.dim; ++d)
        for (int64_t t = 0; t < s.seqlen; ++t) {
          const int64_t o = offset(l, s, b, d, t);
          EXPECT_GE(o, 0);
          EXPECT_LT(o, s.elements());
          seen.insert(o);
        }
    EXPECT_EQ(static_cast<int64_t>(seen.size()), s.elements()) << layout_name(l);
  }
}

TEST(Layout, OffsetDoesNotOverflow32Bits) {
  ConvShape s;
  s.batch = 4;
  s.dim = 1 << 16;
  s.seqlen = 1 << 16;
  EXPECT_EQ(offset(Layout::channel_first, s, 3, (1 << 16) - 1, (1 << 16) - 1),
            (int64_t(1) << 34) - 1);
  EXPECT_EQ(offset(Layout::channel_last, s, 3, (1 << 16) - 1, (1 << 16) - 1),
            (int64_t(1) << 34) - 1);
}

TEST(HostArray, SizesAndZeroInit) {
  for (Dtype t : kAllDtypes) {
    HostArray a(t, 7);
    EXPECT_EQ(a.dtype(), t);
    EXPECT_EQ(a.size(), 7u);
    EXPECT_FALSE(a.empty());
    EXPECT_EQ(a.bytes(), 7u * static_cast<size_t>(dtype_bytes(t)));
    ASSERT_NE(a.data(), nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data()) % 4, 0u) << "4-byte aligned";
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a.get(i), 0.0);
      EXPECT_FALSE(std::signbit(a.get(i)));
    }
  }
  HostArray e;
  EXPECT_TRUE(e.empty());
  EXPECT_EQ(e.size(), 0u);
  EXPECT_EQ(e.bytes(), 0u);
  HostArray z(Dtype::fp16, 0);
  EXPECT_TRUE(z.empty());
  z.fill_nan();  // no-op, no crash
}

TEST(HostArray, SetRoundsToTheFormat) {
  for (Dtype t : kAllDtypes) {
    HostArray a(t, 5);
    const double values[] = {0.1, -1.0 / 3.0, 1e-6, 12345.678, -0.0};
    for (size_t i = 0; i < 5; ++i) a.set(i, values[i]);
    for (size_t i = 0; i < 5; ++i) {
      EXPECT_EQ(a.get(i), round_to_dtype(values[i], t)) << dtype_name(t) << " " << values[i];
    }
    EXPECT_TRUE(std::signbit(a.get(4)));
    const std::vector<double> d = a.to_double();
    ASSERT_EQ(d.size(), 5u);
    for (size_t i = 0; i < 5; ++i) EXPECT_EQ(d[i], a.get(i));
  }
}

TEST(HostArray, StoresTheDeviceBitPatterns) {
  HostArray f(Dtype::fp32, 2);
  f.set(1, 1.5);
  float v;
  std::memcpy(&v, static_cast<const unsigned char*>(f.data()) + 4, 4);
  EXPECT_EQ(v, 1.5f);

  HostArray h(Dtype::fp16, 3);
  h.set(0, 1.0);
  h.set(1, -2.0);
  h.set(2, 1e6);  // overflows to infinity
  EXPECT_EQ(raw16(h, 0), 0x3C00);
  EXPECT_EQ(raw16(h, 1), 0xC000);
  EXPECT_EQ(raw16(h, 2), 0x7C00);
  EXPECT_TRUE(std::isinf(h.get(2)));

  HostArray b(Dtype::bf16, 3);
  b.set(0, 1.0);
  b.set(1, 1e6);                                               // finite in bf16
  b.set(2, 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40));  // one rounding from double: up
  EXPECT_EQ(raw16(b, 0), 0x3F80);
  EXPECT_EQ(b.get(1), round_to_dtype(1e6, Dtype::bf16));
  EXPECT_EQ(raw16(b, 2), 0x3F81);

  HostArray n(Dtype::fp16, 1);
  n.set(0, std::numeric_limits<double>::quiet_NaN());
  EXPECT_TRUE(std::isnan(n.get(0)));
}

TEST(HostArray, IndexOutOfRangeThrows) {
  HostArray a(Dtype::fp16, 3);
  EXPECT_THROW(a.get(3), std::out_of_range);
  EXPECT_THROW(a.set(3, 1.0), std::out_of_range);
  HostArray e;
  EXPECT_THROW(e.get(0), std::out_of_range);
}

TEST(HostArray, FillNanPoisonsEveryElement) {
  for (Dtype t : kAllDtypes) {
    for (size_t n : {size_t{1}, size_t{2}, size_t{7}, size_t{64}}) {
      HostArray a(t, n);
      fill_uniform(a, 1);
      a.fill_nan();
      for (size_t i = 0; i < n; ++i)
        EXPECT_TRUE(std::isnan(a.get(i))) << dtype_name(t) << " [" << i << "]";
      const unsigned char* p = static_cast<const unsigned char*>(a.data());
      for (size_t i = 0; i < a.bytes(); ++i)
        ASSERT_EQ(p[i], 0xFF) << "all-ones bytes, like the device poison";
    }
  }
}

TEST(FillUniform, DeterministicPerSeed) {
  for (Dtype t : kAllDtypes) {
    HostArray a(t, 1000), b(t, 1000), c(t, 1000);
    fill_uniform(a, 42);
    fill_uniform(b, 42);
    fill_uniform(c, 43);
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.bytes()), 0) << dtype_name(t);
    size_t differ = 0;
    for (size_t i = 0; i < a.size(); ++i) differ += a.get(i) != c.get(i);
    EXPECT_GT(differ, 900u) << dtype_name(t);
  }
  // Exactly the generator's draws, rounded.
  HostArray f(Dtype::fp32, 4);
  fill_uniform(f, 9, -2.0, 5.0);
  Rng r(9);
  for (size_t i = 0; i < 4; ++i)
    EXPECT_EQ(f.get(i), round_to_dtype(r.uniform(-2.0, 5.0), Dtype::fp32));
}

TEST(FillUniform, RangeAndSpread) {
  for (Dtype t : kAllDtypes) {
    HostArray a(t, 20000);
    fill_uniform(a, 7, -0.5, 2.0);
    double sum = 0, mn = 1e300, mx = -1e300;
    for (size_t i = 0; i < a.size(); ++i) {
      const double v = a.get(i);
      // Rounding to the format can land on hi itself, never beyond.
      ASSERT_GE(v, -0.5);
      ASSERT_LE(v, 2.0);
      ASSERT_EQ(v, round_to_dtype(v, t)) << "representable";
      sum += v;
      mn = std::min(mn, v);
      mx = std::max(mx, v);
    }
    EXPECT_NEAR(sum / static_cast<double>(a.size()), 0.75, 0.03) << dtype_name(t);
    EXPECT_LT(mn, -0.45);
    EXPECT_GT(mx, 1.95);
  }
  // The default interval is [-1, 1).
  HostArray d(Dtype::fp32, 1000);
  fill_uniform(d, 3);
  for (size_t i = 0; i < d.size(); ++i) {
    EXPECT_GE(d.get(i), -1.0);
    EXPECT_LE(d.get(i), 1.0);
  }
}

TEST(Rng, Splitmix64KnownSequence) {
  // Published outputs of splitmix64 seeded with 1234567.
  Rng r(1234567);
  EXPECT_EQ(r.next(), 6457827717110365317ull);
  EXPECT_EQ(r.next(), 3203168211198807973ull);
  EXPECT_EQ(r.next(), 9817491932198370423ull);
  EXPECT_EQ(r.next(), 4593380528125082431ull);
  EXPECT_EQ(r.next(), 16408922859458223821ull);
}

TEST(Rng, UniformBoundsAndHistogram) {
  Rng r(2024);
  const int n = 100000, bins = 10;
  int count[bins] = {};
  for (int i = 0; i < n; ++i) {
    const double u = r.uniform(-2.0, 3.0);
    ASSERT_GE(u, -2.0);
    ASSERT_LT(u, 3.0);
    ++count[static_cast<int>((u + 2.0) / 5.0 * bins)];
  }
  for (int b = 0; b < bins; ++b) EXPECT_NEAR(count[b], n / bins, 500) << "bin " << b;  // ~5 sigma
  EXPECT_EQ(r.uniform(1.5, 1.5), 1.5);
  // Even where lo + (hi - lo) * u would round up to hi, the result stays below hi.
  Rng s(1);
  for (int i = 0; i < 1000; ++i)
    ASSERT_LT(s.uniform(1.0, std::nextafter(1.0, 2.0)), std::nextafter(1.0, 2.0));
}

TEST(Rng, RangeInclusiveAndUnbiased) {
  Rng r(99);
  const int n = 70000;
  int count[7] = {};
  for (int i = 0; i < n; ++i) {
    const int64_t v = r.range(-3, 3);
    ASSERT_GE(v, -3);
    ASSERT_LE(v, 3);
    ++count[v + 3];
  }
  for (int c : count) EXPECT_NEAR(c, n / 7, 500);  // both ends are reached, about equally often
  EXPECT_EQ(r.range(5, 5), 5);
  for (int i = 0; i < 100; ++i) {
    const int64_t v =
        r.range(std::numeric_limits<int64_t>::max() - 1, std::numeric_limits<int64_t>::max());
    EXPECT_GE(v, std::numeric_limits<int64_t>::max() - 1);
  }
  // The full 64-bit range (its count wraps to 0) and a range wider than half of it.
  std::set<int64_t> signs;
  for (int i = 0; i < 100; ++i)
    signs.insert(r.range(std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()) <
                 0);
  EXPECT_EQ(signs.size(), 2u);
  for (int i = 0; i < 100; ++i)
    EXPECT_LE(r.range(-1, std::numeric_limits<int64_t>::max()),
              std::numeric_limits<int64_t>::max());
  EXPECT_THROW(r.range(2, 1), std::invalid_argument);
}

TEST(Rng, SameSeedSameSequence) {
  Rng a(5), b(5), c(6);
  bool all_same = true;
  for (int i = 0; i < 100; ++i) {
    const uint64_t x = a.next();
    EXPECT_EQ(x, b.next());
    all_same = all_same && x == c.next();
  }
  EXPECT_FALSE(all_same);
}

}  // namespace
}  // namespace conv1d
