// Chapter 10: the forward's launch, chapter 08's kernels with each form's sequence policy. Kept out
// of forward.cuh: every instantiation here is a family of kernels for the compiler, so the
// chapter's kernel library compiles them once per storage type (forward_*.cu).
#pragma once

#include "chapters/08_direct_forward/cf_chunked.cuh"
#include "chapters/08_direct_forward/cf_staged.cuh"
#include "chapters/08_direct_forward/cl_staged.cuh"
#include "chapters/08_direct_forward/cl_tiled.cuh"
#include "chapters/10_packed_sequences/cf_row_edges.cuh"
#include "chapters/10_packed_sequences/forward.cuh"

namespace conv1d::ch10 {

template <class T>
void run_forward(const Forward<T>& f, int width, int vectors, int rows, cudaStream_t s,
                 KernelFacts* facts) {
  const int access = access_bytes(f.conv);
  if (f.layout == Layout::channel_first && uses_staged(f)) {
    if (f.form == Form::plain)
      ch08::launch_cf_staged(f.conv, width, s, facts, ch08::EveryTap<T>{}, f.cf_blocks);
    else
      ch08::launch_cf_staged(f.conv, width, s, facts, tap_words(f), f.cf_blocks);
    return;
  }
  if (f.layout == Layout::channel_last && f.cl_staged_rows) {
    const int r = f.cl_staged_rows;
    if (f.form == Form::plain)
      ch08::launch_cl_staged(f.conv, width, r, s, facts, Baseline{});
    else if (f.form == Form::rows)
      ch08::launch_cl_staged(f.conv, width, r, s, facts, f.rows);
    else
      ch08::launch_cl_staged(f.conv, width, r, s, facts, f.varlen);
    return;
  }
  switch (f.form) {
    case Form::plain:
      if (f.layout == Layout::channel_last)
        ch08::launch_cl_tiled(f.conv, width, rows, access, s, facts, Baseline{});
      else
        ch08::launch_cf_chunked(f.conv, width, vectors, s, facts, Baseline{});
      break;
    case Form::rows:
      if (f.layout == Layout::channel_last)
        ch08::launch_cl_tiled(f.conv, width, rows, access, s, facts, f.rows);
      else
        ch08::launch_cf_chunked(f.conv, width, vectors, s, facts, f.rows);
      break;
    case Form::varlen:
      ch08::launch_cl_tiled(f.conv, width, rows, access, s, facts, f.varlen);
      break;
  }
}

template <class T>
void run_span_map(const Forward<T>& f, int width, cudaStream_t s) {
  if (const TapWords<T> t = tap_words(f); t.words) launch_make_tap_words(f.conv.batch, width, t, s);
}

template <class T>
void run_row_edges(const Forward<T>& f, int width, cudaStream_t s) {
  if (has_row_edges(f)) launch_cf_row_edges(f.conv, width, f.rows, s);
}

}  // namespace conv1d::ch10
