// Chapter 10: a packed forward is a launch of one of chapter 08's kernels as this chapter extends
// them (direct_forward/: cf_staged, cf_chunked, cl_staged, cl_tiled) with a sequence policy
// (sequences.cuh, tap_words.cuh), and in channel-first rows of a length the vector does not divide
// a second, small one for the rows' edges (cf_row_edges.cuh). The plain form is chapter 08's own
// kernel, the baseline a packed run is measured against. What each form hands to the kernels, and
// the launches; the chapter and its tests both go through here.
#pragma once

#include <stdexcept>

#include "chapters/08_direct_forward/cf_chunked.cuh"
#include "chapters/08_direct_forward/cf_staged.cuh"
#include "chapters/08_direct_forward/cl_staged.cuh"
#include "chapters/10_packed_sequences/sequences.cuh"
#include "chapters/10_packed_sequences/tap_words.cuh"
#include "common/tensor.h"

namespace conv1d::ch10 {

enum class Form { plain, rows, varlen };

template <class T>
struct Forward {
  DirectArgs<T> conv;
  Layout layout = Layout::channel_first;
  Form form = Form::plain;
  PackedRows<T> rows{};
  Varlen<T> varlen{};
  void* words_workspace = nullptr;  // channel-first rows with seq_idx: room for the words of taps
  // Channel-first: false: the chunked kernel and cf_row_edges even where the staged kernel takes
  // the rows (the tests compare the two); at most cf_blocks blocks of the staged one (0: as many
  // as fit; the tests use few).
  bool staged = true;
  int64_t cf_blocks = 0;
  // Channel-last: rows a thread of chapter 08's staged kernel, 16 or 64 (staged_rows); 0: its
  // tiled kernel, with the `rows` the launch is given.
  int cl_staged_rows = 0;
};

// Chapter 08's forward, nothing else: the baseline a packed run is measured against.
template <class T>
Forward<T> plain_forward(const DirectArgs<T>& a, Layout layout) {
  Forward<T> f;
  f.conv = a;
  f.layout = layout;
  return f;
}

// The rows form: x and out in `layout`; seq_idx [B, L] (optional: without it each row is one
// sequence), initial states [B, D, W-1] (optional: zeros), final states [B, D, W-1] (optional). The
// two state buffers must not overlap.
template <class T>
Forward<T> rows_forward(const DirectArgs<T>& a, Layout layout, const int32_t* seq_idx,
                        const T* initial_states, T* final_states) {
  Forward<T> f = plain_forward(a, layout);
  f.form = Form::rows;
  f.rows.seq_idx = seq_idx;
  f.rows.seqlen = a.seqlen;
  f.rows.dim = a.dim;
  f.rows.initial_states = initial_states;
  f.rows.final_states = final_states;
  return f;
}

// The varlen form: a.x and a.out are [total, D] (a.batch = 1, a.seqlen = total); sequence n is
// tokens cu_seqlens[n] .. cu_seqlens[n+1]-1 and uses row state_indices[n] of `cache` [C, D, W-1]
// (negative: none): its initial state when `read_states`, its final state written back in place.
template <class T>
Forward<T> varlen_forward(const DirectArgs<T>& a, const int32_t* cu_seqlens, int32_t sequences,
                          const int32_t* state_indices, T* cache, bool read_states) {
  Forward<T> f = plain_forward(a, Layout::channel_last);
  f.form = Form::varlen;
  f.varlen.cu_seqlens = cu_seqlens;
  f.varlen.sequences = sequences;
  f.varlen.state_indices = state_indices;
  f.varlen.total = a.seqlen;
  f.varlen.dim = a.dim;
  f.varlen.states_in = read_states ? cache : nullptr;
  f.varlen.states_out = cache;
  return f;
}

// The rows form with room for the words of taps (tap_words.cuh: a word a vector), which channel-
// first rows with seq_idx need where the staged kernel takes them (a length the vector divides,
// 16-byte aligned tensors). `workspace`: tap_words_bytes(B, L) bytes of device memory, which the
// forward overwrites (one forward at a time per workspace).
template <class T>
Forward<T> with_tap_words(Forward<T> f, void* workspace) {
  f.words_workspace = workspace;
  return f;
}
// The channel-first convolution a forward runs: chapter 08's staged kernel where it takes the rows
// (the plain form; the rows form with seq_idx where there is room for the words), else its chunked
// one and cf_row_edges.
template <class T>
bool uses_staged(const Forward<T>& f) {
  if (f.layout != Layout::channel_first || !ch08::staged_takes(f.conv)) return false;
  return f.form == Form::plain || (f.form == Form::rows && f.staged && f.conv.seqlen > 0 &&
                                   (!f.rows.seq_idx || f.words_workspace));
}
// The staged kernel's view of the rows: the words where they are made (seq_idx given; without it
// every tap counts and none are made), and the states.
template <class T>
TapWords<T> tap_words(const Forward<T>& f) {
  TapWords<T> t;
  t.rows = f.rows;
  t.vectors_per_row = f.conv.seqlen / kPer16<T>;
  if (uses_staged(f) && f.rows.seq_idx) t.words = static_cast<const uint32_t*>(f.words_workspace);
  return t;
}

// The channel-last access chapter 10's kernels are compiled for (ch10::compiled): 16 bytes where D
// allows it, else one element.
template <class T>
int access_bytes(const DirectArgs<T>& a) {
  return ch08::cl_access_elements(a) == kPer16<T> ? 16 : int(sizeof(T));
}
// Chapter 08's time steps per thread for the channel-last kernel at this shape.
template <class T>
int tiled_rows(const DirectArgs<T>& a, int sm_count) {
  const int n = access_bytes(a) / int(sizeof(T));
  return ch08::cl_tiled_rows(a.batch, a.seqlen, a.dim / n, sm_count, 0, sizeof(T) == 4 ? 32 : 16);
}

// The rows a thread of chapter 08's channel-last staged kernel takes at this shape, of those
// chapter 10 compiles (64 where chapter 08 would choose it, else 16); 0 where it does not apply:
// a D that is not whole 16-byte vectors, and fp32, where chapter 08's two kernels are level within
// a point (docs/08_direct_forward.md, step 5) and chapter 10 compiles the tiled one only.
template <class T>
int staged_rows(const DirectArgs<T>& a, int sm_count) {
  if (sizeof(T) != 2 || !ch08::cl_staged_takes(a)) return 0;
  return ch08::cl_staged_rows(a.batch, a.seqlen, a.dim / kPer16<T>, sm_count) == 64 ? 64 : 16;
}

// Do two byte ranges overlap?
inline bool overlap(const void* a, size_t a_bytes, const void* b, size_t b_bytes) {
  const char *pa = static_cast<const char*>(a), *pb = static_cast<const char*>(b);
  return a && b && pa < pb + b_bytes && pb < pa + a_bytes;
}

// Does the forward take a second kernel after the convolution? (Channel-first rows on the chunked
// kernel: it leaves each row's first vector, and any vector across rows, to cf_row_edges. The
// staged kernel takes those itself.)
template <class T>
bool has_row_edges(const Forward<T>& f) {
  return f.form == Form::rows && f.layout == Layout::channel_first && !uses_staged(f);
}

// The convolution of a forward, the words of taps before it and cf_row_edges after it
// (forward_kernels.cuh; compiled once per storage type in the chapter's kernel library, the
// chapter and its tests link it). With `facts`, run_forward only describes the convolution.
template <class T>
void run_forward(const Forward<T>& f, int width, int vectors, int rows, cudaStream_t s,
                 KernelFacts* facts);
template <class T>
void run_tap_words(const Forward<T>& f, int width, cudaStream_t s);
template <class T>
void run_row_edges(const Forward<T>& f, int width, cudaStream_t s);
extern template void run_forward<float>(const Forward<float>&, int, int, int, cudaStream_t,
                                        KernelFacts*);
extern template void run_forward<__half>(const Forward<__half>&, int, int, int, cudaStream_t,
                                         KernelFacts*);
extern template void run_forward<__nv_bfloat16>(const Forward<__nv_bfloat16>&, int, int, int,
                                                cudaStream_t, KernelFacts*);
extern template void run_tap_words<float>(const Forward<float>&, int, cudaStream_t);
extern template void run_tap_words<__half>(const Forward<__half>&, int, cudaStream_t);
extern template void run_tap_words<__nv_bfloat16>(const Forward<__nv_bfloat16>&, int, cudaStream_t);
extern template void run_row_edges<float>(const Forward<float>&, int, cudaStream_t);
extern template void run_row_edges<__half>(const Forward<__half>&, int, cudaStream_t);
extern template void run_row_edges<__nv_bfloat16>(const Forward<__nv_bfloat16>&, int, cudaStream_t);

template <class T>
const char* cf_kernel_name(const Forward<T>& f) {
  return uses_staged(f) ? "conv_fwd_cf_staged" : "conv_fwd_cf_chunked";
}
// The convolution's kernel, either layout.
template <class T>
const char* kernel_name(const Forward<T>& f) {
  if (f.layout == Layout::channel_first) return cf_kernel_name(f);
  return f.cl_staged_rows ? "conv_fwd_cl_staged" : "conv_fwd_cl_tiled";
}

// The launches, each through record(name, launch) (the chapter times them); `vectors` and `rows`
// are chapter 08's launch choices for cf_chunked and cl_tiled (cl_staged's: f.cl_staged_rows).
// With `facts`, only describes the convolution. The words' kernel and the convolution, which starts
// while the words are made (programmatic dependent launch, common/launch.cuh), are one record: an
// event between them would hold the convolution back.
constexpr const char* kWordsAndConvolution = "make_tap_words + conv_fwd_cf_staged";
template <class T, class Record>
void launch_forward(const Forward<T>& f, int width, int vectors, int rows, Record&& record,
                    cudaStream_t s = 0, KernelFacts* facts = nullptr) {
  if (f.form == Form::rows) {
    const size_t bytes = size_t(f.conv.batch * f.conv.dim * (width - 1)) * sizeof(T);
    if (overlap(f.rows.initial_states, bytes, f.rows.final_states, bytes))
      throw std::invalid_argument(
          "the rows form's initial and final states must not overlap (the varlen form's cache "
          "is the one updated in place)");
  }
  if (facts) return run_forward(f, width, vectors, rows, s, facts);
  if (tap_words(f).words) {  // the convolution starts while the words are made: one record
    record(kWordsAndConvolution, [&] {
      run_tap_words(f, width, s);
      run_forward(f, width, vectors, rows, s, nullptr);
    });
    return;
  }
  record(kernel_name(f), [&] { run_forward(f, width, vectors, rows, s, nullptr); });
  if (has_row_edges(f)) record("cf_row_edges", [&] { run_row_edges(f, width, s); });
}

}  // namespace conv1d::ch10
