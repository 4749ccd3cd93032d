// Chapter 10: the backward's kernel, chapter 09's kernels with each form's sequence policy. Kept
// out of backward.cuh: every instantiation here is a family of kernels for the compiler, so the
// chapter's kernel library compiles them once per storage type (backward_*.cu).
#pragma once

#include "chapters/10_packed_sequences/backward.cuh"

namespace conv1d::ch10 {

template <class T>
void run_backward(const Backward<T>& b, int width, const BwdChoices& c, cudaStream_t s,
                  KernelFacts* facts) {
  const bool cl = b.layout == Layout::channel_last;
  if (uses_staged(b)) {
    if (b.form == Form::plain)
      ch09::launch_cf_bwd_staged(b.args, width, s, facts, b.cf_blocks);
    else if (uses_tap_words(b))
      ch09::launch_cf_bwd_staged(b.args, width, s, facts, b.cf_blocks, row_taps(b));
    else
      ch09::launch_cf_bwd_staged(b.args, width, s, facts, b.cf_blocks, row_states(b));
    return;
  }
  if (uses_cl_staged(b, c)) {
    if (b.form == Form::plain)
      ch09::launch_cl_bwd_staged(b.args, width, c.staged_rows, s, facts, Baseline{});
    else if (b.form == Form::rows)
      ch09::launch_cl_bwd_staged(b.args, width, c.staged_rows, s, facts, b.rows);
    else
      ch09::launch_cl_bwd_staged(b.args, width, c.staged_rows, s, facts, b.varlen);
    return;
  }
  switch (b.form) {
    case Form::plain:
      if (cl)
        ch09::launch_cl_bwd(b.args, width, c.rows, c.access_bytes, s, facts, Baseline{});
      else
        ch09::launch_cf_bwd(b.args, width, c.vectors, s, facts, Baseline{});
      break;
    case Form::rows:
      if (cl)
        ch09::launch_cl_bwd(b.args, width, c.rows, c.access_bytes, s, facts, b.rows);
      else if (uses_span_map(b))
        ch09::launch_cf_bwd(b.args, width, c.vectors, s, facts, row_spans(b));
      else
        ch09::launch_cf_bwd(b.args, width, c.vectors, s, facts, b.rows);
      break;
    case Form::varlen:
      ch09::launch_cl_bwd(b.args, width, c.rows, c.access_bytes, s, facts, b.varlen);
      break;
  }
}

template <class T>
void run_span_map(const Backward<T>& b, int width, cudaStream_t s) {
  if (uses_tap_words(b)) {
    TapWords<T> t;
    t.words = static_cast<const uint32_t*>(b.span_workspace);
    t.vectors_per_row = b.args.seqlen / kPer16<T>;
    t.rows = b.rows;
    launch_make_tap_words(b.args.batch, width, t, s);
  } else if (const SpanMap m = span_map_of(b); m.spans) {
    launch_make_span_map(b.args.batch, width, b.rows, m, s);
  }
}

}  // namespace conv1d::ch10
