// Chapter 10: a packed forward is up to three launches (masks, convolution, sequence edges); what they are given in each form, and the launches in order. The chapter and its tests
// both go through here.
#pragma once

#include "chapters/08_direct_forward/cf_chunked.cuh"
#include "chapters/08_direct_forward/cl_tiled.cuh"
#include "chapters/10_packed_sequences/edges.cuh"
#include "chapters/10_packed_sequences/masks.cuh"
#include "common/tensor.h"

namespace conv1d::ch10 {

template <class T>
struct Forward {
  ch08::DirectArgs<T> conv;
  Layout layout = Layout::channel_first;
  bool masks = false;  // packing_masks first, and the convolution with its masks
  MaskArgs mask_args{};
  bool edges = false;  // false: chapter 08's kernel alone
  SeqEdges<T> edge_args{};
};

template <class T>
SeqEdges<T> edges_of(const ch08::DirectArgs<T>& a, Layout layout) {
  SeqEdges<T> e{a.x, a.out, a.weight, a.bias, a.batch, a.dim, a.seqlen,
                layout == Layout::channel_last, a.silu};
  return e;
}

// Chapter 08's forward, nothing else.
template <class T>
Forward<T> plain_forward(const ch08::DirectArgs<T>& a, Layout layout) {
  Forward<T> f;
  f.conv = a;
  f.layout = layout;
  return f;
}

// The rows form: x and out in `layout`; seq_idx [B, L] (optional: without it every tap in the row
// counts, and `masks` is not used), masks [B, L] bytes of scratch, initial states [B, D, W-1]
// (optional), final states [B, D, W-1] out.
template <class T>
Forward<T> rows_forward(const ch08::DirectArgs<T>& a, Layout layout, const int32_t* seq_idx,
                        uint8_t* masks, const T* initial_states, T* final_states) {
  Forward<T> f = plain_forward(a, layout);
  f.edges = true;
  f.edge_args = edges_of(a, layout);
  f.edge_args.states_in = initial_states;
  f.edge_args.states_out = final_states;
  if (seq_idx != nullptr) {
    f.masks = true;
    f.mask_args = MaskArgs{masks, a.batch, a.seqlen};
    f.mask_args.seq_idx = seq_idx;
    f.edge_args.seq_idx = seq_idx;
    f.edge_args.masks = masks;
  }
  return f;
}

// The varlen form: a.x and a.out are [total, D] (a.batch = 1, a.seqlen = total); sequence n is
// tokens cu_seqlens[n] .. cu_seqlens[n+1]-1 and uses row state_indices[n] of `cache` [C, D, W-1]
// (negative: none): its initial state when `read_states`, its final state written back in place.
template <class T>
Forward<T> varlen_forward(const ch08::DirectArgs<T>& a, const int32_t* cu_seqlens,
                          int32_t sequences, const int32_t* state_indices, T* cache,
                          bool read_states, uint8_t* masks) {
  Forward<T> f = plain_forward(a, Layout::channel_last);
  f.masks = true;
  f.mask_args = MaskArgs{masks, 1, a.seqlen};
  f.mask_args.cu_seqlens = cu_seqlens;
  f.mask_args.sequences = sequences;
  f.edges = true;
  f.edge_args = edges_of(a, Layout::channel_last);
  f.edge_args.cu_seqlens = cu_seqlens;
  f.edge_args.state_indices = state_indices;
  f.edge_args.sequences = sequences;
  f.edge_args.states_in = read_states ? cache : nullptr;
  f.edge_args.states_out = cache;
  return f;
}

// The launches, each through record(name, launch) (the chapter times them one by one); `vectors`
// and `rows` are chapter 08's launch choices (cf_chunked, cl_tiled). With `facts`, only describes
// the convolution kernel.
template <class T, class Record>
void launch_forward(const Forward<T>& f, int width, int vectors, int rows, Record&& record,
                    cudaStream_t s = 0, KernelFacts* facts = nullptr) {
  const uint8_t* masks = f.masks ? f.mask_args.masks : nullptr;
  const bool cl = f.layout == Layout::channel_last;
  auto conv = [&] {
    if (cl)
      ch08::launch_cl_tiled(f.conv, width, rows, 16, s, facts, masks);
    else
      ch08::launch_cf_chunked(f.conv, width, vectors, s, facts, masks);
  };
  if (facts) return conv();
  if (f.masks) record("packing_masks", [&] { launch_packing_masks(f.mask_args, width, s); });
  record(cl ? "conv_fwd_cl_tiled" : "conv_fwd_cf_chunked", conv);
  if (f.edges) record("sequence_edges", [&] { launch_sequence_edges(f.edge_args, width, s); });
}

}  // namespace conv1d::ch10
