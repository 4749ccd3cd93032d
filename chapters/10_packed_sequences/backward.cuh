// Chapter 10: a packed backward is a launch of one of chapter 09's kernels as this chapter extends
// them (direct_backward/) with a sequence policy: channel-first rows of a length the vector divides
// take the staged kernel (cf_staged), by their states alone (RowStatesBwd below) or, with seq_idx,
// by the forward's words of taps made before it (RowTapsBwd, tap_words.cuh); other channel-first
// rows take cf_fused; channel-last, the staged kernel (cl_staged) where D is a multiple of its
// 8-byte copy, else cl_tiled. Then chapter 09's reduce_partials for dweight and dbias, summed in a
// fixed order. The plain form is chapter 09's own kernels, the baseline a packed run is measured
// against. What each form hands to the kernels, and the launches; the chapter and its tests both
// go through here.
#pragma once

#include <algorithm>
#include <stdexcept>

#include "chapters/09_direct_backward/cf_fused.cuh"
#include "chapters/09_direct_backward/cf_staged.cuh"
#include "chapters/09_direct_backward/cl_staged.cuh"
#include "chapters/09_direct_backward/cl_tiled.cuh"
#include "chapters/09_direct_backward/reduce.cuh"
#include "chapters/10_packed_sequences/direct_backward/cf_fused.cuh"
#include "chapters/10_packed_sequences/forward.cuh"
#include "chapters/10_packed_sequences/sequences.cuh"

namespace conv1d::ch10 {

template <class T>
struct Backward {
  ch09::BwdArgs<T> args;  // deterministic sums: args.partials must hold backward_partials() floats
  Layout layout = Layout::channel_first;
  Form form = Form::plain;
  PackedRows<T> rows{};
  Varlen<T> varlen{};
  void* words_workspace = nullptr;  // channel-first rows with seq_idx: room for the words of taps
  bool staged = true;     // false: cf_fused even where the staged kernel takes the rows (tests)
  int64_t cf_blocks = 0;  // the staged kernel: at most this many blocks (0: all)
};

// Chapter 09's backward, nothing else.
template <class T>
Backward<T> plain_backward(const ch09::BwdArgs<T>& a, Layout layout) {
  Backward<T> b;
  b.args = a;
  b.layout = layout;
  return b;
}

// The rows form: seq_idx [B, L] and initial states [B, D, W-1] as in the forward (both optional);
// dfinal_states [B, D, W-1] (optional), the gradient of the forward's final states; dinitial_states
// [B, D, W-1] out (optional). The state gradients are fp32, like dweight and dbias.
template <class T>
Backward<T> rows_backward(const ch09::BwdArgs<T>& a, Layout layout, const int32_t* seq_idx,
                          const T* initial_states, const float* dfinal_states,
                          float* dinitial_states) {
  Backward<T> b = plain_backward(a, layout);
  b.form = Form::rows;
  b.rows.seq_idx = seq_idx;
  b.rows.seqlen = a.seqlen;
  b.rows.dim = a.dim;
  b.rows.initial_states = initial_states;
  b.rows.dfinal_states = dfinal_states;
  b.rows.dinitial_states = dinitial_states;
  return b;
}

// The varlen form, channel-last, tokens [total, D] (a.batch = 1, a.seqlen = total): sequence n
// started from row state_indices[n] of `cache` (when `read_states`) and wrote its final state
// there; dfinal [C, D, W-1] (optional) is the gradient of those final states by cache row, dstates
// [C, D, W-1] receives each written row's gradient with respect to the state it started from (rows
// no sequence names are left as they are).
template <class T>
Backward<T> varlen_backward(const ch09::BwdArgs<T>& a, const int32_t* cu_seqlens, int32_t sequences,
                            const int32_t* state_indices, const T* cache, bool read_states,
                            const float* dfinal, float* dstates) {
  Backward<T> b = plain_backward(a, Layout::channel_last);
  b.form = Form::varlen;
  b.varlen.cu_seqlens = cu_seqlens;
  b.varlen.sequences = sequences;
  b.varlen.state_indices = state_indices;
  b.varlen.total = a.seqlen;
  b.varlen.dim = a.dim;
  b.varlen.states_in = read_states ? cache : nullptr;
  b.varlen.dfinal_states = dfinal;
  b.varlen.dstates = dstates;
  return b;
}

// The rows form with room for the words of taps (tap_words.cuh), which channel-first rows with
// seq_idx need where the staged kernel takes them (a length the vector divides). `workspace`:
// tap_words_bytes(B, L) bytes of device memory, which the backward overwrites (one pass at a time
// per workspace).
template <class T>
Backward<T> with_tap_words(Backward<T> b, void* workspace) {
  b.words_workspace = workspace;
  return b;
}

// The rows form without seq_idx (one sequence a row, from its initial states, receiving its final
// states' gradient) as the staged kernel takes it (direct_backward/cf_staged.cuh says what it
// asks): the states by row, and the initial states' gradient as PackedRows::row_dinit writes it
// for a row of one sequence at least W-1 long (every output whose window reaches t = 0 reaches the
// states too), so the same bits.
template <class T>
struct RowStatesBwd {
  static constexpr bool kTapWords = false;
  const T* initial_states = nullptr;     // [B*D, W-1], or nullptr (zeros)
  const float* dfinal_states = nullptr;  // [B*D, W-1], or nullptr
  float* dinitial_states = nullptr;      // [B*D, W-1] out, or nullptr
  template <int W>
  __device__ __forceinline__ const T* state(int64_t row) const {
    return initial_states ? initial_states + row * (W - 1) : nullptr;
  }
  template <int W>
  __device__ __forceinline__ const float* dfinal(int64_t row) const {
    return dfinal_states ? dfinal_states + row * (W - 1) : nullptr;
  }
  template <int W, class Reaches>
  __device__ __forceinline__ void dinit(int64_t row, const Filter<W>& f, const float* dz,
                                        Reaches&& reaches) const {
    if (!dinitial_states) return;
#pragma unroll
    for (int j = 0; j < W - 1; ++j)
      dinitial_states[row * (W - 1) + j] = state_gradient<W>(f, dz, j, 0.0f, reaches);
  }
};

// [docs:ch10_row_taps_bwd]
// Rows with seq_idx on the staged kernel: the same states, and the forward's tap words
// (make_tap_words, in the words' workspace), a word a vector. From the words the kernel has
// every answer the flags gave cf_fused: which taps of an output count (the state's too), padding
// (no tap counts), whether an input is one of the final states (tap q+1 of the row's last output),
// and whether an output sees the initial states (it sees x[0]). So dx and dinitial_states are
// cf_fused's bits: the same products, skipped or added in the same order.
template <class T>
struct RowTapsBwd : RowStatesBwd<T> {
  static constexpr bool kTapWords = true;
  const uint32_t* words = nullptr;  // [B, V]
  int64_t vectors_per_row = 0;
  __device__ __forceinline__ uint32_t word(int64_t b, int64_t v) const {
    return words[b * vectors_per_row + v];
  }
  __device__ __forceinline__ const uint32_t* words_of(int64_t b) const {
    return words + b * vectors_per_row;
  }
};
// [/docs:ch10_row_taps_bwd]
template <class T>
RowStatesBwd<T> row_states(const Backward<T>& b) {
  RowStatesBwd<T> r;
  r.initial_states = b.rows.initial_states;
  r.dfinal_states = b.rows.dfinal_states;
  r.dinitial_states = b.rows.dinitial_states;
  return r;
}

// The channel-first convolution a backward runs: the staged kernel where it takes the rows (a
// length the vector divides, on 16-byte boundaries) in the plain form and in the rows form (with
// seq_idx only where there is a workspace for the words); else cf_fused.
template <class T>
bool uses_staged(const Backward<T>& b) {
  return b.staged && b.layout == Layout::channel_first && ch09::bwd_staged_takes(b.args) &&
         b.args.seqlen > 0 &&
         (b.form == Form::plain ||
          (b.form == Form::rows && (!b.rows.seq_idx || b.words_workspace)));
}
template <class T>
bool uses_tap_words(const Backward<T>& b) {
  return uses_staged(b) && b.form == Form::rows && b.rows.seq_idx;
}
template <class T>
RowTapsBwd<T> row_taps(const Backward<T>& b) {
  RowTapsBwd<T> r;
  static_cast<RowStatesBwd<T>&>(r) = row_states(b);
  r.words = static_cast<const uint32_t*>(b.words_workspace);
  r.vectors_per_row = b.args.seqlen / kPer16<T>;
  return r;
}
// The words' kernel and the convolution, which starts while it finishes, are one record (as in
// the forward: an event between them would hold the convolution back).
constexpr const char* kWordsAndBackward = "make_tap_words + conv_bwd_cf_staged";
template <class T>
const char* cf_kernel_name(const Backward<T>& b) {
  return uses_tap_words(b) ? kWordsAndBackward
         : uses_staged(b)  ? "conv_bwd_cf_staged"
                           : "conv_bwd_cf";
}

// Chapter 09's launch choices for this shape: vectors per lane (channel-first), time steps per
// lane of cl_tiled or per warp of cl_staged (channel-last). (The channel-last access is chapter
// 09's default where D allows it, else one element: what this chapter's kernels are compiled for,
// ch10::compiled. cl_staged's rows: 64 where chapter 09 would take 64, else 16, the two compiled.)
struct BwdChoices {
  int vectors = 1, rows = 16, access_bytes = 0;
  int staged_rows =
      0;  // channel-last: chapter 09's staged kernel, this many rows a warp (0: cl_tiled)
};
template <class T>
BwdChoices backward_choices(const ch09::BwdArgs<T>& a, int sm_count) {
  BwdChoices c;
  if (ch09::cl_staged_bwd_takes(a))
    c.staged_rows =
        ch09::cl_staged_bwd_rows(a.batch, a.seqlen, a.dim, ch09::kClsChannels<T>, sm_count) == 64
            ? 64
            : 16;
  c.vectors = ch09::cf_bwd_vectors(a.seqlen, kPer16<T>);
  c.access_bytes = ch09::cl_bwd_channels(a) == (sizeof(T) == 2 ? 4 : 2) ? 0 : int(sizeof(T));
  c.rows = ch09::cl_bwd_rows(a.batch, a.seqlen, a.dim, ch09::cl_bwd_channels(a, c.access_bytes),
                             sm_count, 0, sizeof(T) == 4 ? 64 : 32);
  return c;
}

// The channel-last convolution a backward runs: the staged kernel where the choices ask for it and
// it takes the tensors (D a multiple of its 8-byte copy), else cl_tiled.
template <class T>
bool uses_cl_staged(const Backward<T>& b, const BwdChoices& c) {
  return b.layout == Layout::channel_last && c.staged_rows && ch09::cl_staged_bwd_takes(b.args);
}
template <class T>
const char* kernel_name(const Backward<T>& b, const BwdChoices& c) {
  return b.layout == Layout::channel_first ? cf_kernel_name(b)
         : uses_cl_staged(b, c)            ? "conv_bwd_cl_staged"
                                           : "conv_bwd_cl";
}

// Where the kernel leaves its units' sums, for reduce_partials.
template <class T>
ch09::PartialLayout backward_partials(const Backward<T>& b, int width, const BwdChoices& c) {
  const ch09::BwdArgs<T>& a = b.args;
  if (uses_cl_staged(b, c))
    return ch09::cl_bwd_partials(a.batch, a.dim, ch09::cl_staged_bwd_units(a.seqlen, c.staged_rows),
                                 width);
  if (uses_staged(b))
    return ch09::cf_bwd_partials(a.batch, a.dim, ch09::cf_bwd_staged_chunks(a.seqlen, kPer16<T>),
                                 width);
  if (b.layout == Layout::channel_first) {
    const int lanes = b.form == Form::plain ? kWarpLanes : packed_cf_row_lanes<T>(a.silu);
    return ch09::cf_bwd_partials(a.batch, a.dim,
                                 cf_bwd_chunks(a.seqlen, kPer16<T>, c.vectors, lanes), width);
  }
  return ch09::cl_bwd_partials(a.batch, a.dim, ch09::cl_bwd_units(a.seqlen, c.rows), width);
}
inline int64_t partial_floats(const ch09::PartialLayout& l, int64_t dim, int width) {
  return l.count1 * l.count2 * dim * (width + 1);
}

// The kernel of a backward and the words of taps before it (backward_kernels.cuh): compiled once
// in the chapter's kernel library, which the chapter and its tests link. (Chapter 09's
// reduce_partials is in chapter 09's library.)
template <class T>
void run_backward(const Backward<T>& b, int width, const BwdChoices& c, cudaStream_t s,
                  KernelFacts* facts);
extern template void run_backward<float>(const Backward<float>&, int, const BwdChoices&,
                                         cudaStream_t, KernelFacts*);
extern template void run_backward<__half>(const Backward<__half>&, int, const BwdChoices&,
                                          cudaStream_t, KernelFacts*);
extern template void run_backward<__nv_bfloat16>(const Backward<__nv_bfloat16>&, int,
                                                 const BwdChoices&, cudaStream_t, KernelFacts*);
template <class T>
void run_tap_words(const Backward<T>& b, int width, cudaStream_t s);
extern template void run_tap_words<float>(const Backward<float>&, int, cudaStream_t);
extern template void run_tap_words<__half>(const Backward<__half>&, int, cudaStream_t);
extern template void run_tap_words<__nv_bfloat16>(const Backward<__nv_bfloat16>&, int,
                                                  cudaStream_t);

// The launches, each through record(name, launch); with `facts`, only describes the kernel.
template <class T, class Record>
void launch_backward(const Backward<T>& b, int width, const BwdChoices& c, Record&& record,
                     cudaStream_t s = 0, KernelFacts* facts = nullptr) {
  if (facts) return run_backward(b, width, c, s, facts);
  record(kernel_name(b, c), [&] {
    if (uses_tap_words(b)) run_tap_words(b, width, s);  // (the words: kWordsAndBackward)
    run_backward(b, width, c, s, nullptr);
  });
  if (b.args.atomic) return;
  record("reduce_partials", [&] {
    ch09::launch_reduce_partials(b.args.partials, backward_partials(b, width, c), b.args.dim, width,
                                 b.args.dweight, b.args.dbias, s);
  });
}

}  // namespace conv1d::ch10
