// Host arrays in a storage dtype, and the index arithmetic of the two layouts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/dtype.h"

namespace conv1d {

// channel_first: x[B, D, L] (the operator's default); channel_last: x[B, L, D].
enum class Layout { channel_first, channel_last };
const char* layout_name(Layout l);

struct ConvShape {
  int64_t batch = 1, dim = 1, seqlen = 1;
  int width = 4;
  int64_t elements() const { return batch * dim * seqlen; }  // of x and of out
};

// Flat offset of x[b, d, t] in the given layout.
inline int64_t offset(Layout l, const ConvShape& s, int64_t b, int64_t d, int64_t t) {
  return l == Layout::channel_first ? (b * s.dim + d) * s.seqlen + t
                                    : (b * s.seqlen + t) * s.dim + d;
}

// A flat host array stored in one dtype (fp32 as float, fp16/bf16 as their 16-bit patterns).
// Element access through double converts with the format's rounding, so a value written with
// set() is exactly what the device will read.
class HostArray {
 public:
  HostArray() = default;
  HostArray(Dtype dtype, size_t count);

  Dtype dtype() const { return dtype_; }
  size_t size() const { return count_; }
  size_t bytes() const { return count_ * static_cast<size_t>(dtype_bytes(dtype_)); }
  bool empty() const { return count_ == 0; }
  void* data() { return storage_.data(); }
  const void* data() const { return storage_.data(); }

  double get(size_t i) const;
  void set(size_t i, double v);
  std::vector<double> to_double() const;
  void fill_nan();  // the poison value of every format

 private:
  Dtype dtype_ = Dtype::fp32;
  size_t count_ = 0;
  std::vector<uint32_t> storage_;  // 4-byte aligned raw bytes
};

// Whether two arrays hold the same bits (not just equal values: -0 and 0, NaN payloads differ).
bool same_bits(const HostArray& a, const HostArray& b);
bool same_bits(const std::vector<float>& a, const std::vector<float>& b);

// [batch, rows, cols] -> [batch, cols, rows], any dtype, on every host core: channel-first to
// channel-last (rows = D, cols = L) and back.
HostArray transposed(const HostArray& a, int64_t batch, int64_t rows, int64_t cols);

// Uniform random values in [lo, hi), rounded to the array's dtype; the same seed gives the same
// values on every platform and for any number of host threads (a 64-bit generator of our own, not
// std:: distributions; element i takes the generator's i-th value).
void fill_uniform(HostArray& a, uint64_t seed, double lo = -1.0, double hi = 1.0);

// splitmix64: a small, portable generator for test data.
struct Rng {
  uint64_t state;
  explicit Rng(uint64_t seed) : state(seed) {}
  uint64_t next();
  void skip(uint64_t n);                  // as if next() had been called n times
  double uniform(double lo, double hi);   // [lo, hi)
  int64_t range(int64_t lo, int64_t hi);  // [lo, hi]
};

}  // namespace conv1d
