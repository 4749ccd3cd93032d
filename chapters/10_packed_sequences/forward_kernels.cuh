// Chapter 10: the forward's launch: this chapter's kernels (direct_forward/) with each form's
// sequence policy, and chapter 08's own for the plain form. Kept out of forward.cuh: every
// instantiation here is a family of kernels for the compiler, so the chapter's kernel library
// compiles them once per storage type (forward_*.cu).
#pragma once

#include "chapters/08_direct_forward/kernels.cuh"
#include "chapters/10_packed_sequences/cf_row_edges.cuh"
#include "chapters/10_packed_sequences/direct_forward/cf_chunked.cuh"
#include "chapters/10_packed_sequences/direct_forward/cf_staged.cuh"
#include "chapters/10_packed_sequences/direct_forward/cl_staged.cuh"
#include "chapters/10_packed_sequences/direct_forward/cl_tiled.cuh"
#include "chapters/10_packed_sequences/forward.cuh"

namespace conv1d::ch10 {

template <class T>
void run_forward(const Forward<T>& f, int width, int vectors, int rows, cudaStream_t s,
                 KernelFacts* facts) {
  const bool cl = f.layout == Layout::channel_last;
  if (f.form == Form::plain) {  // chapter 08's kernels
    if (!cl && uses_staged(f))
      ch08::launch_cf_staged(f.conv, width, s, facts, f.cf_blocks);
    else if (!cl)
      ch08::launch_cf_chunked(f.conv, width, vectors, s, facts);
    else if (f.cl_staged_rows)
      ch08::launch_cl_staged(f.conv, width, f.cl_staged_rows, s, facts);
    else
      ch08::launch_cl_tiled(f.conv, width, rows, access_bytes(f.conv), s, facts);
    return;
  }
  if (!cl && uses_staged(f)) {
    launch_cf_staged(f.conv, width, s, facts, tap_words(f), f.cf_blocks);
  } else if (!cl) {
    launch_cf_chunked(f.conv, width, vectors, s, facts, f.rows);
  } else if (f.cl_staged_rows) {
    if (f.form == Form::rows)
      launch_cl_staged(f.conv, width, f.cl_staged_rows, s, facts, f.rows);
    else
      launch_cl_staged(f.conv, width, f.cl_staged_rows, s, facts, f.varlen);
  } else if (f.form == Form::rows) {
    launch_cl_tiled(f.conv, width, rows, access_bytes(f.conv), s, facts, f.rows);
  } else {
    launch_cl_tiled(f.conv, width, rows, access_bytes(f.conv), s, facts, f.varlen);
  }
}

template <class T>
void run_tap_words(const Forward<T>& f, int width, cudaStream_t s) {
  if (const TapWords<T> t = tap_words(f); t.words) launch_make_tap_words(f.conv.batch, width, t, s);
}

template <class T>
void run_row_edges(const Forward<T>& f, int width, cudaStream_t s) {
  if (has_row_edges(f)) launch_cf_row_edges(f.conv, width, f.rows, s);
}

}  // namespace conv1d::ch10
