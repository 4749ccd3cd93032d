// Host arrays in a storage dtype, and the test-data generator.
#include "common/tensor.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "common/parallel.h"
#include "common/util.h"

namespace conv1d {

const char* layout_name(Layout l) {
  switch (l) {
    case Layout::channel_first: return "channel_first";
    case Layout::channel_last: return "channel_last";
  }
  return "unknown";
}

HostArray::HostArray(Dtype dtype, size_t count)
    : dtype_(dtype),
      count_(count),
      storage_(static_cast<size_t>(ceil_div(count * dtype_bytes(dtype), sizeof(uint32_t))), 0u) {}

namespace {

void check_index(size_t i, size_t count) {
  if (i >= count) {
    throw std::out_of_range("HostArray: index " + std::to_string(i) + " out of range for size " +
                            std::to_string(count));
  }
}

}  // namespace

double HostArray::get(size_t i) const {
  check_index(i, count_);
  const unsigned char* p = reinterpret_cast<const unsigned char*>(storage_.data());
  if (dtype_ == Dtype::fp32) {
    float f;
    std::memcpy(&f, p + i * 4, 4);
    return f;
  }
  uint16_t bits;
  std::memcpy(&bits, p + i * 2, 2);
  return dtype_ == Dtype::fp16 ? half_bits_to_float(bits) : bf16_bits_to_float(bits);
}

void HostArray::set(size_t i, double v) {
  check_index(i, count_);
  unsigned char* p = reinterpret_cast<unsigned char*>(storage_.data());
  // round_to_dtype rounds the double once, directly to the format; the result is exactly a value of
  // the format, so the conversions below are exact.
  const float f = static_cast<float>(round_to_dtype(v, dtype_));
  if (dtype_ == Dtype::fp32) {
    std::memcpy(p + i * 4, &f, 4);
    return;
  }
  const uint16_t bits = dtype_ == Dtype::fp16 ? float_to_half_bits(f) : float_to_bf16_bits(f);
  std::memcpy(p + i * 2, &bits, 2);
}

std::vector<double> HostArray::to_double() const {
  std::vector<double> r(count_);
  parallel_for_blocks(static_cast<int64_t>(count_), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) r[i] = get(i);
  });
  return r;
}

void HostArray::fill_nan() {
  // All-ones bytes are a NaN in every format (exponent all ones, fraction nonzero), and the same
  // byte pattern the device buffers are poisoned with.
  if (!storage_.empty()) std::memset(storage_.data(), 0xFF, storage_.size() * sizeof(uint32_t));
}

bool same_bits(const HostArray& a, const HostArray& b) {
  return a.dtype() == b.dtype() && a.bytes() == b.bytes() &&
         std::memcmp(a.data(), b.data(), a.bytes()) == 0;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

HostArray transposed(const HostArray& a, int64_t batch, int64_t rows, int64_t cols) {
  if (static_cast<int64_t>(a.size()) != batch * rows * cols)
    throw std::invalid_argument("transposed: the array has " + std::to_string(a.size()) +
                                " elements, not " + std::to_string(batch) + " x " +
                                std::to_string(rows) + " x " + std::to_string(cols));
  HostArray out(a.dtype(), a.size());
  const size_t e = static_cast<size_t>(dtype_bytes(a.dtype()));
  const unsigned char* src = static_cast<const unsigned char*>(a.data());
  unsigned char* dst = static_cast<unsigned char*>(out.data());
  // One item: 32 rows of one batch, read along the rows, written 32 apart (a cache line's worth).
  constexpr int64_t kTile = 32;
  const int64_t row_tiles = ceil_div(rows, kTile);
  parallel_for(batch * row_tiles, [&](int64_t item) {
    const int64_t b = item / row_tiles, r0 = (item % row_tiles) * kTile;
    const int64_t r1 = std::min(rows, r0 + kTile), base = b * rows * cols;
    for (int64_t c = 0; c < cols; ++c)
      for (int64_t r = r0; r < r1; ++r)
        std::memcpy(dst + (base + c * rows + r) * e, src + (base + r * cols + c) * e, e);
  });
  return out;
}

void fill_uniform(HostArray& a, uint64_t seed, double lo, double hi) {
  // Element i takes the generator's value number i (skip() jumps there), so the blocks can be
  // filled in any order by any thread and the array is the same as one filled in a single pass.
  parallel_for_blocks(static_cast<int64_t>(a.size()), [&](int64_t begin, int64_t end) {
    Rng rng(seed);
    rng.skip(begin);
    for (int64_t i = begin; i < end; ++i) a.set(i, rng.uniform(lo, hi));
  });
}

namespace {
constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;  // splitmix64's Weyl increment
}  // namespace

uint64_t Rng::next() {
  // splitmix64 (Steele, Lea, Flood): a Weyl sequence through a 64-bit finalizer.
  state += kGolden;
  uint64_t z = state;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void Rng::skip(uint64_t n) { state += n * kGolden; }  // the Weyl sequence jumps ahead in one step

double Rng::uniform(double lo, double hi) {
  // The top 53 bits give a multiple of 2^-53 in [0, 1), exactly.
  const double u = static_cast<double>(next() >> 11) * 0x1.0p-53;
  const double r = lo + (hi - lo) * u;
  // The arithmetic above can round up to hi itself; keep the interval half-open.
  return (hi > lo && r >= hi) ? std::nextafter(hi, lo) : r;
}

int64_t Rng::range(int64_t lo, int64_t hi) {
  if (lo > hi) {
    throw std::invalid_argument("Rng::range: empty range [" + std::to_string(lo) + ", " +
                                std::to_string(hi) + "]");
  }
  // Number of values, modulo 2^64 (0 means the full 64-bit range).
  const uint64_t n = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo) + 1u;
  if (n == 0) return static_cast<int64_t>(next());
  // Reject the lowest 2^64 mod n outputs so that the remaining ones are a whole number of copies of
  // [0, n): x % n is then exactly uniform.
  const uint64_t reject_below = (0u - n) % n;
  uint64_t x;
  do {
    x = next();
  } while (x < reject_below);
  return static_cast<int64_t>(static_cast<uint64_t>(lo) + x % n);
}

}  // namespace conv1d
