// Chapter 11, the fast kernel (`vector`): one thread per batch row and 16 bytes of channels (8 in
// fp16/bf16, 4 in fp32), for the common cache of exactly W-1 inputs per channel.
//
// Why a group of channels: in a cache [C, D, W-1] the W-1 inputs of neighbouring channels lie next
// to each other, so the states of N neighbouring channels are N*(W-1) contiguous elements, a run of
// W-1 aligned 16-byte chunks. So are everything else a thread needs: its tokens (x [B, D, T]: a
// run of T chunks), its outputs (T chunks), its filters ([D, W]: W chunks) and biases (one). The
// runs of a warp's threads follow each other, and a thread has all its loads in flight at once: the
// step costs about one trip to memory for the index, one for the state, and the launch.
//
// How the warp moves its runs (warp_runs.cuh, kSpans): each lane its own run, or (kSpans) the
// warp its whole span in contiguous 512-byte pieces, dealt to the lanes through shared memory. A
// lane's own run of K > 1 chunks takes K instructions that each touch sectors of the span only in
// part; the span's pieces ask the L2 for whole sectors only. Every store is one 16-byte
// instruction (store16): left to itself, the compiler wrote a one-token output vector as seven
// narrow stores.
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
#include "chapters/11_decode_update/warp_runs.cuh"
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
  bool has_bias;

  // (Without a bias the load is still made, of the group's first filter, and not used: see
  // fetch_chunks in warp_runs.cuh for why a load is better made than skipped.)
  __device__ __forceinline__ FilterGroup(const T* weight, const T* b, int64_t d0)
      : has_bias(b != nullptr) {
#pragma unroll
    for (int v = 0; v < W; ++v) w[v] = reinterpret_cast<const Vec<T, N>*>(weight + d0 * W)[v];
    bias = *reinterpret_cast<const Vec<T, N>*>(has_bias ? b + d0 : weight + d0 * W);
  }
  // Channel c's filter: the values ch08::load_filter reads (bias 0 without one).
  __device__ __forceinline__ ch08::Filter<W> operator[](int c) const {
    ch08::Filter<W> f;
#pragma unroll
    for (int k = 0; k < W; ++k) f.w[k] = to_float(element<N>(w, c * W + k));
    f.bias = has_bias ? to_float(bias.v[c]) : 0.0f;
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
// oldest input of the new state goes (both 0 for the linear buffer). Out: the group's outputs and
// its new state, as they are stored.
template <class T, int W, int kTokens, int kIn, int kOut>
__device__ __forceinline__ void step_group(const Bytes16 (&x_bits)[kTokens],
                                           const Bytes16 (&old_bits)[W - 1],
                                           const FilterGroup<T, W>& f, bool silu,
                                           Bytes16 (&ys)[kTokens], Bytes16 (&fresh_bits)[W - 1]) {
  constexpr int N = kPer16<T>, S = W - 1;
  Vec<T, N> xs[kTokens], old[S], fresh[S];
#pragma unroll
  for (int v = 0; v < kTokens; ++v) xs[v] = bit_cast16<Vec<T, N>>(x_bits[v]);
#pragma unroll
  for (int v = 0; v < S; ++v) old[v] = bit_cast16<Vec<T, N>>(old_bits[v]);
  float y[N * kTokens];  // [channel][token], as out holds them
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
  for (int v = 0; v < kTokens; ++v) ys[v] = bit_cast16<Bytes16>(ch08::from_floats<T, N>(y + v * N));
#pragma unroll
  for (int v = 0; v < S; ++v) fresh_bits[v] = bit_cast16<Bytes16>(fresh[v]);
}

// The most chunks of 16 bytes a lane deals at once: its tokens or outputs (T), or its state (W-1).
template <int W, int kTokens>
constexpr int kLongestRun = kTokens > W - 1 ? kTokens : W - 1;
// [/docs:ch11_group]

// [docs:ch11_vector_head]
// kSpans: how the warp reads and writes its lanes' runs of tokens, states and outputs, each lane
// its own or the warp its whole span (warp_runs.cuh; the launch chooses, update.cuh).
template <class T, int W, int kTokens, bool kSpans>
__global__ void decode_update_vector(StepArgs<T> a, FastDivmod blocks_per_row) {
  constexpr int N = kPer16<T>, S = W - 1;
  extern __shared__ Bytes16 shared_chunks[];  // kSpans: kLongestRun chunks a thread
  int64_t b, block_in_row;
  blocks_per_row.divmod(blockIdx.x, &b, &block_in_row);
  // This thread's group of N channels, and its warp's first: warps past the row have nothing to
  // do; in the warp at the row's end, `lanes` of them have a group.
  const int lane = threadIdx.x % kWarpLanes;
  const int64_t groups = a.dim / N, g = block_in_row * blockDim.x + threadIdx.x, g0 = g - lane;
  if (g0 >= groups) return;
  const int lanes = static_cast<int>(groups - g0 < kWarpLanes ? groups - g0 : kWarpLanes);
  Bytes16* stage = shared_chunks + (threadIdx.x - lane) * kLongestRun<W, kTokens>;
  // [/docs:ch11_vector_head]

  // [docs:ch11_vector_loads]
  // 0. Launched early (update.cuh), the step starts while the one before it finishes. The filters
  //    do not change while decoding: they load before the wait, everything else after it. (A lane
  //    past the row's end reads the last group's and stores nothing.)
  allow_next_launch();
  const FilterGroup<T, W> f(a.weight, a.bias, (g < groups ? g : groups - 1) * N);
  wait_for_previous_launch();

  // 1. What needs no index: the warp's tokens, in flight while the row is found.
  const int64_t at = (b * a.dim + g0 * N) * kTokens;  // the warp's first token
  Bytes16* out = reinterpret_cast<Bytes16*>(a.out + at);
  Bytes16 xs[kTokens];
  fetch_chunks<kSpans, kTokens>(reinterpret_cast<const Bytes16*>(a.x + at), lanes * kTokens, lane,
                                xs);
  const int64_t row = cache_row(a, b);  // (the same for the whole warp)
  if (row < 0) {                        // a padding row: outputs exactly 0, no cache row touched
#pragma unroll
    for (int v = 0; v < kTokens; ++v) xs[v] = Bytes16{};  // (0.0 is all zero bits in every dtype)
    return put_chunks<kSpans, kTokens>(out, lanes * kTokens, lane, xs);
  }

  // 2. The warp's states: lanes·(W-1) contiguous chunks.
  Bytes16* state = reinterpret_cast<Bytes16*>(a.state + (row * a.dim + g0 * N) * S);
  Bytes16 old[S];
  fetch_chunks<kSpans, S>(state, lanes * S, lane, old);
  // [/docs:ch11_vector_loads]

  // [docs:ch11_vector_finish]
  // 3. Each lane's runs of tokens and states; its outputs and new state; back to what the warp
  //    stores. kIn and kOut are the circular buffer's rotation, made compile-time constants; the
  //    branch on it comes before the dealing, so that the position is read while the states are
  //    in flight.
  auto finish = [&](auto k_in, auto k_out) {
    deal_runs<kSpans, kTokens>(xs, stage, lane);
    deal_runs<kSpans, S>(old, stage, lane);
    Bytes16 ys[kTokens], fresh[S];
    step_group<T, W, kTokens, decltype(k_in)::value, decltype(k_out)::value>(xs, old, f, a.silu, ys,
                                                                             fresh);
    collect_runs<kSpans, kTokens>(ys, stage, lane);
    put_chunks<kSpans, kTokens>(out, lanes * kTokens, lane, ys);
    collect_runs<kSpans, S>(fresh, stage, lane);
    put_chunks<kSpans, S>(state, lanes * S, lane, fresh);
  };
  if (a.cache_seqlens == nullptr)
    return finish(std::integral_constant<int, 0>{}, std::integral_constant<int, 0>{});
  with_rotation<S>(static_cast<int>(wrap(first_position(a, b), S)), [&](auto r) {
    constexpr int R = decltype(r)::value;
    finish(r, std::integral_constant<int, (R + kTokens) % S>{});
  });
}
// [/docs:ch11_vector_finish]

}  // namespace conv1d::ch11
