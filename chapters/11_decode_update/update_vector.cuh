// Chapter 11, the fast kernel (`vector`): one thread per batch row and 16 bytes of channels (8 in
// fp16/bf16, 4 in fp32), for the common cache of exactly W-1 inputs per channel.
//
// Why a group of channels: in a cache [C, D, W-1] the W-1 inputs of neighbouring channels lie next
// to each other, so the states of N neighbouring channels are N*(W-1) contiguous elements, W-1
// aligned 16-byte loads. So are everything else a thread needs: its tokens (x [B, D, T]: T loads),
// its outputs (T stores), its filters ([D, W]: W loads) and biases (one). Each access is 16 bytes,
// a warp's accesses are contiguous runs, and a thread has all its loads in flight at once: the
// step costs about one trip to memory for the index, one for the state, and the launch.
//
// The two buffers differ only in where a channel's oldest input sits. Linear: at entry 0, and the
// new state is written back in order (every entry moves). Circular: at entry pos % (W-1), and the
// new inputs go where their positions say. A thread writes its whole group back either way: the
// entries of one 16-byte store belong to several channels, and with W-1 entries per channel every
// sector holds an entry that changed, so rewriting the unchanged ones (with their own bits) costs
// no extra DRAM traffic. The rotation is the same for a whole batch row, so each warp takes one
// branch; inside it, it is a compile-time constant and every element index is a register name.
#pragma once

#include <type_traits>

#include "chapters/11_decode_update/update_common.cuh"
#include "common/fast_divmod.h"
#include "common/launch.cuh"

namespace conv1d::ch11 {

// Element i of M vectors of N elements, seen as one array of N*M (a register when i is known at
// compile time).
template <int N, class T, int M>
__device__ __forceinline__ T& element(Vec<T, N> (&v)[M], int i) {
  return v[i / N].v[i % N];
}
template <int N, class T, int M>
__device__ __forceinline__ const T& element(const Vec<T, N> (&v)[M], int i) {
  return v[i / N].v[i % N];
}

// The filters of channels d0 .. d0+N-1, as they are stored: W + 1 vector loads (they are N*W
// contiguous elements of [D, W], and N of [D]), converted to fp32 one channel at a time where they
// are used. Held as 16-bit storage they take half the registers of fp32 filters, and a thread
// holds them across the wait for its cache row.
template <class T, int W>
struct FilterGroup {
  static constexpr int N = kPer16<T>;
  Vec<T, N> w[W], bias;

  __device__ __forceinline__ FilterGroup(const T* weight, const T* b, int64_t d0) {
#pragma unroll
    for (int v = 0; v < W; ++v) w[v] = reinterpret_cast<const Vec<T, N>*>(weight + d0 * W)[v];
    bias = b != nullptr ? *reinterpret_cast<const Vec<T, N>*>(b + d0) : ch08::zero_vec<T, N>();
  }
  // Channel c's filter: the values ch08::load_filter reads (bias 0 without one).
  __device__ __forceinline__ ch08::Filter<W> operator[](int c) const {
    ch08::Filter<W> f;
#pragma unroll
    for (int k = 0; k < W; ++k) f.w[k] = to_float(element<N>(w, c * W + k));
    f.bias = to_float(bias.v[c]);
    return f;
  }
};

// f(std::integral_constant<int, r>) for a runtime r in [0, S).
template <int S, int R = 0, class F>
__device__ __forceinline__ void with_rotation(int r, F&& f) {
  if constexpr (R + 1 < S) {
    if (r != R) return with_rotation<S, R + 1>(r, f);
  }
  f(std::integral_constant<int, R>{});
}

// [docs:ch11_group]
// One group's step: kIn is the entry of each channel's oldest input, kOut the entry where the
// oldest input of the new state goes (both 0 for the linear buffer).
template <class T, int W, int kTokens, int kIn, int kOut>
__device__ __forceinline__ void step_group(const Vec<T, kPer16<T>> (&xs)[kTokens],
                                           const Vec<T, kPer16<T>> (&old)[W - 1],
                                           const FilterGroup<T, W>& f, bool silu, T* out,
                                           T* state) {
  constexpr int N = kPer16<T>, S = W - 1;
  float y[N * kTokens];  // [channel][token], as out holds them
  Vec<T, N> fresh[S];
#pragma unroll
  for (int c = 0; c < N; ++c) {
    T in[S + kTokens];  // channel c's inputs in order: its state, oldest first, then its tokens
#pragma unroll
    for (int k = 0; k < S; ++k) in[k] = element<N>(old, c * S + (kIn + k) % S);
#pragma unroll
    for (int i = 0; i < kTokens; ++i) in[S + i] = element<N>(xs, c * kTokens + i);
    float win[S + kTokens];
#pragma unroll
    for (int q = 0; q < S + kTokens; ++q) win[q] = to_float(in[q]);
    const ch08::Filter<W> filter = f[c];
#pragma unroll
    for (int i = 0; i < kTokens; ++i) {
      y[c * kTokens + i] = ch08::conv_output<W, false>(filter, &win[i], 0, silu);
    }
    // The last S inputs stay, bits unchanged: the oldest of them at entry kOut.
#pragma unroll
    for (int m = 0; m < S; ++m) element<N>(fresh, c * S + (kOut + m) % S) = in[kTokens + m];
  }
#pragma unroll
  for (int v = 0; v < kTokens; ++v)
    reinterpret_cast<Vec<T, N>*>(out)[v] = ch08::from_floats<T, N>(y + v * N);
#pragma unroll
  for (int v = 0; v < S; ++v) reinterpret_cast<Vec<T, N>*>(state)[v] = fresh[v];
}

template <class T, int W, int kTokens>
__global__ void decode_update_vector(StepArgs<T> a, FastDivmod blocks_per_row) {
  constexpr int N = kPer16<T>, S = W - 1;
  int64_t b, block_in_row;
  blocks_per_row.divmod(blockIdx.x, &b, &block_in_row);
  const int64_t d0 = (block_in_row * blockDim.x + threadIdx.x) * N;
  if (d0 >= a.dim) return;

  // 0. Launched early (update.cuh), the step starts while the one before it finishes. The filters
  //    do not change while decoding: they load before the wait, everything else after it.
  allow_next_launch();
  const FilterGroup<T, W> f(a.weight, a.bias, d0);
  wait_for_previous_launch();

  // 1. What needs no index: the step's tokens, in flight while the row is found.
  const int64_t at = (b * a.dim + d0) * kTokens;
  Vec<T, N> xs[kTokens];
#pragma unroll
  for (int v = 0; v < kTokens; ++v) xs[v] = reinterpret_cast<const Vec<T, N>*>(a.x + at)[v];
  const int64_t row = cache_row(a, b);
  if (row < 0) {  // a padding row: outputs exactly 0, no cache row touched
#pragma unroll
    for (int v = 0; v < kTokens; ++v)
      reinterpret_cast<Vec<T, N>*>(a.out + at)[v] = ch08::zero_vec<T, N>();
    return;
  }

  // 2. The group's state: N*(W-1) contiguous elements.
  T* state = a.state + (row * a.dim + d0) * S;
  Vec<T, N> old[S];
#pragma unroll
  for (int v = 0; v < S; ++v) old[v] = reinterpret_cast<const Vec<T, N>*>(state)[v];

  // 3. Outputs and the new state, the circular buffer's rotation made a compile-time constant.
  if (a.cache_seqlens == nullptr)
    return step_group<T, W, kTokens, 0, 0>(xs, old, f, a.silu, a.out + at, state);
  with_rotation<S>(static_cast<int>(wrap(first_position(a, b), S)), [&](auto r) {
    constexpr int R = decltype(r)::value;
    step_group<T, W, kTokens, R, (R + kTokens) % S>(xs, old, f, a.silu, a.out + at, state);
  });
}
// [/docs:ch11_group]

}  // namespace conv1d::ch11
