// Division by a number fixed at launch time, without a divide instruction. GPUs have no integer
// divider: a 64-bit `n / d` compiles to a subroutine of some 70 instructions, which a memory-bound
// kernel that divides once per 16-byte vector can notice. When d is known before the launch, the host
// computes a "magic" multiplier m and shift s once, and the kernel divides with one 64-bit multiply
// (the high half) and a shift:
//
//   n / d == (n * m) >> (64 + s - 1)      with s = ceil(log2 d), m = floor(2^(63+s) / d) + 1
//
// exact for every 0 <= n < 2^63 and 1 <= d < 2^32 (Granlund and Montgomery's method: m exceeds
// 2^(63+s)/d by at most 1, so the error term n*1/2^(63+s) < 1/d never carries the quotient over).
// tests/test_fast_divmod.cpp checks it against `/` on edge cases and random values.
#pragma once

#include <cstdint>
#include <stdexcept>

#include "common/util.h"

namespace conv1d {

class FastDivmod {
 public:
  FastDivmod() = default;
  explicit FastDivmod(int64_t d) : d_(d) {
    if (d < 1 || d > int64_t(0xFFFFFFFF))
      throw std::invalid_argument("FastDivmod: divisor out of range");
    if (d == 1) return;  // s would be 0; div() returns n itself
    int s = 0;
    while ((int64_t(1) << s) < d) ++s;
    shift_ = s - 1;
    magic_ = static_cast<uint64_t>(
        ((static_cast<unsigned __int128>(1) << (63 + s)) / static_cast<uint64_t>(d)) + 1);
  }

  CONV1D_HOST_DEVICE int64_t divisor() const { return d_; }

  // n / d for 0 <= n < 2^63.
  CONV1D_HOST_DEVICE int64_t div(int64_t n) const {
    if (d_ == 1) return n;
    return static_cast<int64_t>(mul_high(static_cast<uint64_t>(n), magic_) >> shift_);
  }
  // quotient and remainder at once.
  CONV1D_HOST_DEVICE void divmod(int64_t n, int64_t* q, int64_t* r) const {
    *q = div(n);
    *r = n - *q * d_;
  }

 private:
  CONV1D_HOST_DEVICE static uint64_t mul_high(uint64_t a, uint64_t b) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
    return __umul64hi(a, b);
#else
    return static_cast<uint64_t>((static_cast<unsigned __int128>(a) * b) >> 64);
#endif
  }

  int64_t d_ = 1;
  uint64_t magic_ = 0;
  int shift_ = 0;
};

}  // namespace conv1d
