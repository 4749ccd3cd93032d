// Vectors of elements moved as one access. A memory-bound kernel's speed is mostly how it touches
// memory: 16 bytes per load or store instruction (ld/st.global.v4 on NVIDIA, dwordx4 on AMD) is the
// widest single access, so the fewest instructions per byte and the most bytes in flight per
// thread.
#pragma once

#include <cstdint>

#include "common/gpu.h"

namespace conv1d {

// N elements of T as one aligned access: Vec<__half, 8> and Vec<float, 4> are 16-byte loads and
// stores, Vec<T, 1> is a single element (the fallback where alignment does not allow more).
template <class T, int N>
struct alignas(sizeof(T) * N) Vec {
  T v[N];
};

// Sixteen raw bytes, for kernels that only move bits (copies, layout changes).
using Bytes16 = Vec<uint32_t, 4>;

// Elements of T in 16 bytes: 8 for fp16/bf16, 4 for fp32.
template <class T>
constexpr int kPer16 = 16 / static_cast<int>(sizeof(T));

// The raw bits of one element of a storage type: fp32 -> uint32_t, fp16 and bf16 -> uint16_t.
template <int Bytes>
struct ElementBits;
template <>
struct ElementBits<2> {
  using type = uint16_t;
};
template <>
struct ElementBits<4> {
  using type = uint32_t;
};
template <class T>
using bits_t = typename ElementBits<static_cast<int>(sizeof(T))>::type;

// True when `p` can be read or written `bytes` at a time.
inline bool aligned_to(const void* p, int bytes) {
  return reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

}  // namespace conv1d
