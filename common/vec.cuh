// Vectors of elements moved as one access. A memory-bound kernel's speed is mostly how it touches
// memory: 16 bytes per load or store instruction (ld/st.global.v4 on NVIDIA, dwordx4 on AMD) is the
// widest single access, so the fewest instructions per byte and the most bytes in flight per
// thread.
#pragma once

#include <cstdint>
#include <cstring>

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

// The same 16 bytes seen as another 16-byte type (a bit cast: no instruction moves anything).
template <class To, class From>
__device__ __forceinline__ To bit_cast16(const From& from) {
  static_assert(sizeof(To) == 16 && sizeof(From) == 16, "bit_cast16 casts 16 bytes");
  To to;
  memcpy(&to, &from, 16);
  return to;
}

// Writes the 16 bytes of v to p (16-byte aligned) with one store instruction. Assigning a Vec
// usually compiles to one, but nothing guarantees it: nvcc 13 wrote chapter 11's one-token output
// vector (eight bf16 outputs, or four fp32) as seven 2-byte and 4-byte stores (bf16) or four
// 4-byte ones (fp32), and every extra store is one more request to the L2 per warp. Said in PTX
// (st.global.v4.b32) it is one instruction whatever the compiler makes of the code around it.
// AMD's compiler gets the plain assignment.
//
// kOrdered: the store is also a barrier to the compiler (a memory clobber): no load or store of
// the thread moves across it. store16_unordered drops that, for a kernel whose other accesses
// never touch those bytes (it writes its outputs once and reads nothing it writes), so that the
// compiler may still move the next loads above it. (Chapter 08's staged kernel: a Vec, or even a
// uint4, assigned there became four 4-byte stores.)
template <bool kOrdered = true, class T, int N>
__device__ __forceinline__ void store16(T* p, const Vec<T, N>& v) {
  static_assert(sizeof(Vec<T, N>) == 16, "store16 writes exactly 16 bytes");
#if defined(CONV1D_BACKEND_HIP)
  *reinterpret_cast<Vec<T, N>*>(p) = v;
#else
  uint32_t w[4];
  memcpy(w, &v, 16);
  if constexpr (kOrdered)
    asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(w[0]), "r"(w[1]),
                 "r"(w[2]), "r"(w[3])
                 : "memory");
  else
    asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(w[0]), "r"(w[1]),
                 "r"(w[2]), "r"(w[3]));
#endif
}
template <class T, int N>
__device__ __forceinline__ void store16_unordered(T* p, const Vec<T, N>& v) {
  store16<false>(p, v);
}

// Asks for the 128-byte line that holds p to be brought into the L2 cache (prefetch.global.L2): a
// hint, which the hardware may drop. Nothing waits for it and no register receives its data, so a
// thread can ask for more than its registers could hold. On AMD a no-op here (the project has not
// measured a prefetch there).
__device__ __forceinline__ void prefetch_l2(const void* p) {
#if !defined(CONV1D_BACKEND_HIP)
  asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
#else
  (void)p;
#endif
}

// True when `p` can be read or written `bytes` at a time.
__host__ __device__ inline bool aligned_to(const void* p, int bytes) {
  return reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

}  // namespace conv1d
