// Chapter 11, the general kernel (`channel`): one thread per batch row and channel, for any state
// length S >= W-1 and any D.
//
// A state longer than the window (speculative decoding keeps a few inputs more, to take back the
// tokens a verifier rejects) no longer lies in whole 16-byte pieces per channel group, and the
// circular buffer's window then sits anywhere in it: the thread reads its W-1 inputs and writes
// its T new ones element by element. Neighbouring threads still touch neighbouring channels' runs
// of S elements. The linear buffer shifts the S-T older inputs left in a loop: the cost the
// circular buffer exists to avoid, and which grows with S.
#pragma once

#include "chapters/11_decode_update/update_common.cuh"
#include "common/fast_divmod.h"
#include "common/launch.cuh"

namespace conv1d::ch11 {

// [docs:ch11_channel]
template <class T, int W>
__global__ void decode_update_channel(StepArgs<T> a, FastDivmod blocks_per_row) {
  int64_t b, block_in_row;
  blocks_per_row.divmod(blockIdx.x, &b, &block_in_row);
  const int64_t d = block_in_row * blockDim.x + threadIdx.x;
  if (d >= a.dim) return;
  const int tokens = a.tokens;
  const int64_t S = a.state_len, at = (b * a.dim + d) * tokens;
  allow_next_launch();  // as in the vector kernel: the filter before the wait, the rest after
  const ch08::Filter<W> f = ch08::load_filter<W>(a.weight, a.bias, d);
  wait_for_previous_launch();
  T xs[kMaxTokens];  // (loops to kMaxTokens with a test, unrolled: registers, not local memory)
#pragma unroll
  for (int i = 0; i < kMaxTokens; ++i)
    if (i < tokens) xs[i] = a.x[at + i];
  const int64_t row = cache_row(a, b);
  if (row < 0) {  // a padding row: outputs exactly 0, no cache row touched
#pragma unroll
    for (int i = 0; i < kMaxTokens; ++i)
      if (i < tokens) a.out[at + i] = from_float<T>(0.0f);
    return;
  }

  // The window's oldest input: linear, W-1 entries before the end; circular, position pos-(W-1).
  T* state = a.state + (row * a.dim + d) * S;
  const bool circular = a.cache_seqlens != nullptr;
  const int64_t pos = circular ? first_position(a, b) : 0;
  int64_t j = circular ? wrap(pos - (W - 1), S) : S - (W - 1);
  float win[W - 1 + kMaxTokens];
#pragma unroll
  for (int k = 0; k < W - 1; ++k) {
    win[k] = to_float(state[j]);
    j = j + 1 == S ? 0 : j + 1;
  }
#pragma unroll
  for (int i = 0; i < kMaxTokens; ++i)
    if (i < tokens) {
      win[W - 1 + i] = to_float(xs[i]);
      a.out[at + i] = from_float<T>(ch08::conv_output<W, false>(f, &win[i], 0, a.silu));
    }

  // The step's inputs into the cache (only the last S when T > S). Circular: j is now pos % S.
  const int first_kept = tokens > S ? tokens - static_cast<int>(S) : 0;
  if (circular) {
#pragma unroll
    for (int i = 0; i < kMaxTokens; ++i)
      if (i < tokens) {
        if (i >= first_kept) state[j] = xs[i];
        j = j + 1 == S ? 0 : j + 1;
      }
  } else {
    for (int64_t e = 0; e + tokens < S; ++e) state[e] = state[e + tokens];  // shift left by T
#pragma unroll
    for (int i = 0; i < kMaxTokens; ++i)
      if (i >= first_kept && i < tokens) state[S - tokens + i] = xs[i];
  }
}
// [/docs:ch11_channel]

}  // namespace conv1d::ch11
