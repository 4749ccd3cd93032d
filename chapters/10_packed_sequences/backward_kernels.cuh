// Chapter 10: the backward's kernel: this chapter's kernels (direct_backward/) with each form's
// sequence policy, and chapter 09's own for the plain form. Kept out of backward.cuh: every
// instantiation here is a family of kernels for the compiler, so the chapter's kernel library
// compiles them once per storage type (backward_*.cu).
#pragma once

#include "chapters/09_direct_backward/kernels.cuh"
#include "chapters/10_packed_sequences/backward.cuh"
#include "chapters/10_packed_sequences/direct_backward/cf_fused.cuh"
#include "chapters/10_packed_sequences/direct_backward/cf_staged.cuh"
#include "chapters/10_packed_sequences/direct_backward/cl_staged.cuh"
#include "chapters/10_packed_sequences/direct_backward/cl_tiled.cuh"

namespace conv1d::ch10 {

template <class T>
void run_backward(const Backward<T>& b, int width, const BwdChoices& c, cudaStream_t s,
                  KernelFacts* facts) {
  const bool cl = b.layout == Layout::channel_last;
  if (b.form == Form::plain) {  // chapter 09's kernels
    if (!cl && uses_staged(b))
      ch09::launch_cf_bwd_staged(b.args, width, s, facts, b.cf_blocks);
    else if (!cl)
      ch09::launch_cf_bwd(b.args, width, c.vectors, s, facts);
    else if (uses_cl_staged(b, c))
      ch09::launch_cl_bwd_staged(b.args, width, c.staged_rows, s, facts);
    else
      ch09::launch_cl_bwd(b.args, width, c.rows, c.access_bytes, s, facts);
    return;
  }
  if (!cl && uses_tap_words(b)) {
    launch_cf_bwd_staged(b.args, width, s, facts, b.cf_blocks, row_taps(b));
  } else if (!cl && uses_staged(b)) {
    launch_cf_bwd_staged(b.args, width, s, facts, b.cf_blocks, row_states(b));
  } else if (!cl) {
    launch_cf_bwd(b.args, width, c.vectors, s, facts, b.rows);
  } else if (uses_cl_staged(b, c)) {
    if (b.form == Form::rows)
      launch_cl_bwd_staged(b.args, width, c.staged_rows, s, facts, b.rows);
    else
      launch_cl_bwd_staged(b.args, width, c.staged_rows, s, facts, b.varlen);
  } else if (b.form == Form::rows) {
    launch_cl_bwd(b.args, width, c.rows, c.access_bytes, s, facts, b.rows);
  } else {
    launch_cl_bwd(b.args, width, c.rows, c.access_bytes, s, facts, b.varlen);
  }
}

template <class T>
void run_tap_words(const Backward<T>& b, int width, cudaStream_t s) {
  if (!uses_tap_words(b)) return;
  TapWords<T> t;
  t.words = static_cast<const uint32_t*>(b.words_workspace);
  t.vectors_per_row = b.args.seqlen / kPer16<T>;
  t.rows = b.rows;
  launch_make_tap_words(b.args.batch, width, t, s);
}

}  // namespace conv1d::ch10
