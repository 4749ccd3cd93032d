// Chapter 10: the forward's launch, chapter 08's kernels with each form's sequence policy. Kept out
// of forward.cuh: every instantiation here is a family of kernels for the compiler, so the
// chapter's kernel library compiles them once per storage type (forward_*.cu).
#pragma once

#include "chapters/08_direct_forward/cf_chunked.cuh"
#include "chapters/08_direct_forward/cl_tiled.cuh"
#include "chapters/10_packed_sequences/cf_row_edges.cuh"
#include "chapters/10_packed_sequences/forward.cuh"

namespace conv1d::ch10 {

template <class T>
void run_forward(const Forward<T>& f, int width, int vectors, int rows, cudaStream_t s,
                 KernelFacts* facts) {
  const int access = access_bytes(f.conv);
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
      else if (uses_span_map(f))
        ch08::launch_cf_chunked(f.conv, width, vectors, s, facts, row_spans(f));
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
  if (const SpanMap m = span_map_of(f); m.spans)
    launch_make_span_map(f.conv.batch, width, f.rows, m, false, s);
}

template <class T>
void run_row_edges(const Forward<T>& f, int width, cudaStream_t s) {
  if (has_row_edges(f)) launch_cf_row_edges(f.conv, width, f.rows, s);
}

}  // namespace conv1d::ch10
