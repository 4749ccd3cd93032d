// Chapter 10, step 3: the edges of the sequences. The convolution (chapter 08's kernels with the
// masks) treats every sequence as starting from zeros; one small kernel after it does what states
// add, a thread per (row or sequence, channel):
//
//   first outputs   the first W-1 outputs of a sequence that starts from a state, again, with the
//                   state's inputs in the window (rows: the initial states continue the row's first
//                   sequence; varlen: a sequence's row of the state cache)
//   final states    the last W-1 inputs of each row or sequence: the state the next chunk of the
//                   same stream starts from (varlen: written back into the cache, in place)
//
// It touches a few hundred KiB against the convolution's hundreds of MiB. Keeping this out of the
// convolution keeps its registers and its fast path as they were, and orders the reads and writes
// of an in-place cache: the stream runs the kernels one after another, and a thread reads its
// state before it writes it.
#pragma once

#include <cstdint>

#include "chapters/08_direct_forward/direct_common.cuh"
#include "chapters/10_packed_sequences/masks.cuh"
#include "common/launch.cuh"

namespace conv1d::ch10 {

template <class T>
struct SeqEdges {
  const T* x;  // [B, D, L] or [B, L, D]; varlen [total, D] (batch 1, seqlen total)
  T* out;      // like x (first_outputs)
  const T* weight;
  const T* bias;  // or nullptr
  int64_t batch, dim, seqlen;
  bool channel_last, silu;
  // Rows form: seq_idx [B, L] and its masks (optional), initial states [B, D, W-1] (optional),
  // final states [B, D, W-1] out.
  const int32_t* seq_idx = nullptr;
  const uint8_t* masks = nullptr;
  // Varlen: sequence n is tokens cu_seqlens[n] .. cu_seqlens[n+1]-1, its state row
  // state_indices[n] (negative: none) of the cache [C, D, W-1].
  const int32_t* cu_seqlens = nullptr;
  const int32_t* state_indices = nullptr;
  int32_t sequences = 0;
  const T* states_in = nullptr;  // rows: initial states; varlen: the cache, when it is read
  T* states_out = nullptr;       // rows: final states; varlen: the cache
  CONV1D_HOST_DEVICE int64_t units() const { return cu_seqlens ? sequences : batch; }
  // Element (unit's row b, channel d, time t) of x / out (rows form).
  CONV1D_HOST_DEVICE int64_t at(int64_t b, int64_t d, int64_t t) const {
    return channel_last ? (b * seqlen + t) * dim + d : (b * dim + d) * seqlen + t;
  }
};

// [docs:ch10_edges]
// Sequence `unit`'s (rows: row `unit`'s) first W-1 outputs again when it starts from a state.
template <class T, int W>
__device__ __forceinline__ void first_outputs(const SeqEdges<T>& a, int64_t b, int64_t d,
                                              int64_t start, int64_t end, const T* state) {
  const ch08::Filter<W> f = ch08::load_filter<W>(a.weight, a.bias, d);
#pragma unroll
  for (int j = 0; j < W - 1; ++j) {
    const int64_t t = start + j;
    if (t >= end) break;
    unsigned valid = ch08::kAllTaps<W>;
    if (a.seq_idx) {  // rows: only the outputs of the row's first sequence see the states
      const int32_t id = a.seq_idx[b * a.seqlen + t];
      if (id < 0 || id != a.seq_idx[b * a.seqlen]) continue;
      valid = a.masks[b * a.seqlen + t] | ((1u << (W - 1 - j)) - 1);  // + the taps before t = 0
    }
    float in[W];
#pragma unroll
    for (int k = 0; k < W; ++k) {
      const int64_t s = t - (W - 1) + k;
      in[k] = s >= start ? to_float(a.x[a.at(b, d, s)]) : to_float(state[(W - 1) + s - start]);
    }
    a.out[a.at(b, d, t)] = from_float<T>(ch08::conv_output<W>(f, in, valid, a.silu));
  }
}

// The last W-1 inputs: rows with seq_idx keep only those of the row's last sequence (none when the
// row ends in padding); the inputs before t = 0 belong to its first. Read, not yet written.
template <class T, int W>
__device__ __forceinline__ void last_inputs(const SeqEdges<T>& a, int64_t b, int64_t d,
                                            int64_t start, int64_t end, const T* state,
                                            float (&v)[W - 1]) {
  const int32_t* seq = a.seq_idx ? a.seq_idx + b * a.seqlen : nullptr;
  const int32_t last = seq ? seq[end - 1] : 0;
#pragma unroll
  for (int j = 0; j < W - 1; ++j) {
    const int64_t s = end - (W - 1) + j;
    const bool keep = !seq || (last >= 0 && seq[s >= 0 ? s : 0] == last);
    v[j] = !keep        ? 0.0f
           : s >= start ? to_float(a.x[a.at(b, d, s)])
           : state      ? to_float(state[(W - 1) + s - start])
                        : 0.0f;
  }
}

template <class T, int W>
__global__ void sequence_edges(SeqEdges<T> a) {
  const int64_t item = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;  // unit * D + d
  const int64_t unit = item / a.dim, d = item - unit * a.dim;
  if (unit >= a.units()) return;
  int64_t b = unit, start = 0, end = a.seqlen, slot = unit;  // rows: the whole row
  if (a.cu_seqlens) {  // varlen: sequence `unit` and its row of the cache
    slot = a.state_indices ? a.state_indices[unit] : unit;
    if (slot < 0) return;  // from zeros (the convolution's outputs are right), nothing written
    b = 0;
    start = a.cu_seqlens[unit];
    end = a.cu_seqlens[unit + 1];
  }
  const T* state = a.states_in ? a.states_in + (slot * a.dim + d) * (W - 1) : nullptr;
  if (state) first_outputs<T, W>(a, b, d, start, end, state);
  float v[W - 1];
  last_inputs<T, W>(a, b, d, start, end, state, v);
#pragma unroll
  for (int j = 0; j < W - 1; ++j)  // (in place: every value of the state was read above)
    a.states_out[(slot * a.dim + d) * (W - 1) + j] = from_float<T>(v[j]);
}
// [/docs:ch10_edges]

constexpr int kEdgeThreads = 128;

template <class T>
void launch_sequence_edges(const SeqEdges<T>& a, int width, cudaStream_t s = 0) {
  const int64_t blocks = ceil_div(a.units() * a.dim, kEdgeThreads);
  if (blocks == 0) return;
  dispatch_width(width, [&](auto w) {
    launch_or_describe("sequence_edges", sequence_edges<T, decltype(w)::value>, blocks,
                       kEdgeThreads, s, nullptr, a);
  });
}

}  // namespace conv1d::ch10
