// The fp64 CPU reference of the causal depthwise 1-D convolution: the oracle of every chapter.
//
//   z[b,d,t]   = bias[d] + sum_{k<W} weight[d,k] * xin(b, d, t-(W-1)+k)
//   out[b,d,t] = silu(z) if SiLU is on, else z
//
// xin(b,d,s) is x[b,d,s] for 0 <= s < L, initial_states[b,d,(W-1)+s] for s < 0 when initial states
// are given (zero otherwise). With seq_idx, position s contributes to output t only when
// seq_idx[b,s] == seq_idx[b,t] (plain equality of the ids; packed sequences are normally
// contiguous runs); positions before t = 0 belong to no sequence; a negative seq_idx[b,t] marks
// padding: its output is exactly 0 (no bias, no activation) and it passes no gradient back.
// seq_idx and initial_states together are rejected (as in the reference CUDA library). All arrays
// are double; x, out, dout and dx follow `layout`; weight is [D,W], bias [D], initial/final states
// [B,D,W-1] (flat index (b*D+d)*(W-1)+j), seq_idx [B,L] (flat index b*L+t).
//
// Both functions use every core of the host (common/parallel.h) and give the same bits for any
// number of threads: each output is computed by one thread, and the sums over the batch and over
// time (dweight, dbias) are added in a fixed order (time ascending within a row, then the rows'
// sums in batch order). A run longer than about two seconds prints its progress to stderr.
//
// Any width W >= 1 is accepted here (the chapters use 2..4). batch, dim, seqlen >= 1 and non-null
// x, weight, out (dout in the backward) are required; violations, and seq_idx together with
// initial_states, throw std::invalid_argument.
#pragma once

#include <cstdint>

#include "common/tensor.h"

namespace conv1d {

struct RefProblem {
  ConvShape shape;
  Layout layout = Layout::channel_first;
  const double* x = nullptr;
  const double* weight = nullptr;
  const double* bias = nullptr;            // optional
  const double* initial_states = nullptr;  // optional
  const int32_t* seq_idx = nullptr;        // optional
  bool silu = false;
};

// out: same size and layout as x. final_states (optional): xin(b, d, L-(W-1)+j) for j < W-1, i.e.
// the last W-1 inputs, unmasked by seq_idx; for L < W-1 it reaches into the initial states (or
// zeros).
void reference_forward(const RefProblem& p, double* out, double* final_states = nullptr);

// Gradients of sum(out * dout) (dout like x). Every pointer in RefGrads is optional (nullptr: not
// computed); the non-null ones are fully overwritten, never accumulated into. dweight[d,k] only
// collects the products that actually contribute to the forward (seq_idx masking applied).
// dinitial_states is the gradient with respect to the W-1 values before t = 0; it is computed even
// when p.initial_states is null (then it is the gradient with respect to the implicit zeros), and it
// is all zeros when seq_idx is given (nothing before t = 0 contributes then).
//
// dweight_sq and dbias_sq (optional, [D,W] and [D]) receive the sum of the squares of the terms of
// each of those sums: the size a sum of that many terms of that size has is its square root, which
// is what a tolerance for a sum computed in fp32 is scaled by (chapter 06).
struct RefGrads {
  double* dx = nullptr;               // like x
  double* dweight = nullptr;          // [D,W]
  double* dbias = nullptr;            // [D]
  double* dinitial_states = nullptr;  // [B,D,W-1]
  double* dweight_sq = nullptr;       // [D,W]
  double* dbias_sq = nullptr;         // [D]
};
void reference_backward(const RefProblem& p, const double* dout, const RefGrads& g);

// Host memory reference_backward needs besides its inputs and outputs (per thread: dz for one group
// of channels over the whole sequence), for the chapters' memory check.
int64_t reference_backward_scratch_bytes(const ConvShape& s);

// silu and its derivative, shared with the tests.
double silu(double z);
double silu_grad(double z);

}  // namespace conv1d
