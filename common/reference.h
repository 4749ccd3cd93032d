// The fp64 CPU reference of the causal depthwise 1-D convolution: the oracle of every chapter.
//
//   z[b,d,t]   = bias[d] + sum_{k<W} weight[d,k] * xin(b, d, t-(W-1)+k)
//   out[b,d,t] = silu(z) if SiLU is on, else z
//
// xin(b,d,s) is x[b,d,s] for 0 <= s < L, initial_states[b,d,(W-1)+s] for s < 0 when initial states
// are given (zero otherwise). With seq_idx, position s contributes to output t only when
// seq_idx[b,s] == seq_idx[b,t] (plain equality of the ids; packed sequences are normally
// contiguous runs); positions before t = 0 belong to the row's first sequence, seq_idx[b,0] (so
// initial states continue it); a negative seq_idx[b,t] marks padding: its output is exactly 0 (no
// bias, no activation) and it passes no gradient back. All arrays
// are double; x, out, dout and dx follow `layout`; weight is [D,W], bias [D], initial/final states
// [B,D,W-1] (flat index (b*D+d)*(W-1)+j), seq_idx [B,L] (flat index b*L+t).
//
// Both functions use every core of the host (common/parallel.h) and give the same bits for any
// number of threads: each output is computed by one thread, and the sums over the batch and over
// time (dweight, dbias) are added in a fixed order (time ascending within a row, then the rows'
// sums in batch order). A run longer than about two seconds prints its progress to stderr.
//
// Any width W >= 1 is accepted here (the chapters use 2..4). batch, dim, seqlen >= 1 and non-null
// x, weight, out (dout in the backward) are required; violations throw std::invalid_argument.
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
// the last W-1 inputs; for L < W-1 it reaches into the initial states (or zeros). With seq_idx only
// the inputs of the row's last sequence (the id at t = L-1) are kept, the others are 0, and all are
// 0 when the row ends in padding: the final states are what that sequence's next output would see.
void reference_forward(const RefProblem& p, double* out, double* final_states = nullptr);

// Gradients of sum(out * dout) (dout like x). Every pointer in RefGrads is optional (nullptr: not
// computed); the non-null ones are fully overwritten, never accumulated into. dweight[d,k] only
// collects the products that actually contribute to the forward (seq_idx masking applied).
// dinitial_states is the gradient with respect to the W-1 values before t = 0; it is computed even
// when p.initial_states is null (then it is the gradient with respect to the implicit zeros); with
// seq_idx only the outputs of the row's first sequence add to it.
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
// dfinal_states (optional, [B,D,W-1]): the gradient with respect to the forward's final_states, as
// chunked training passes it back from the next chunk. Each of its values is added where that final
// state came from: into dx at t = L-(W-1)+j, or into dinitial_states where L < W-1 reaches back into
// the states; nothing where the forward wrote 0 (inputs of an earlier sequence, a row that ends in
// padding).
void reference_backward(const RefProblem& p, const double* dout, const RefGrads& g,
                        const double* dfinal_states = nullptr);

// A variable-length batch (chapter 10): N sequences packed as tokens [total, D] (channel-last),
// sequence n being tokens cu_seqlens[n] .. cu_seqlens[n+1]-1 (cu_seqlens[0] = 0, never decreasing;
// length 0 allowed). Sequence n starts from row state_indices[n] (n itself when state_indices is
// null) of the state cache states [C, D, W-1] when that index is >= 0 and states is given, from zeros
// otherwise. Each sequence is computed as a problem of its own (reference_forward, B = 1).
struct RefVarlen {
  int64_t dim = 0;
  int width = 0;
  const double* x = nullptr;  // [total, D]
  const double* weight = nullptr;
  const double* bias = nullptr;
  const int32_t* cu_seqlens = nullptr;  // [N + 1]
  int64_t sequences = 0;                // N
  const double* states = nullptr;       // [C, D, W-1], optional
  const int32_t* state_indices = nullptr;
  bool silu = false;
};
// out: [total, D]. final_states (optional, [C, D, W-1]): row state_indices[n] (for indices >= 0)
// receives sequence n's final states; other rows are left as they are. A length-0 sequence passes
// its initial state (or zeros) through.
void reference_varlen_forward(const RefVarlen& p, double* out, double* final_states = nullptr);

// The varlen backward: gradients of sum(out * dout) + sum(final_states * dfinal_states) over the
// rows the forward wrote. dout and dx: [total, D]; dfinal_states (optional) and dstates: [C, D, W-1]
// by cache row. Row state_indices[n] >= 0 of dstates receives the gradient with respect to sequence
// n's initial state (computed even when p.states is null: then at the implicit zeros); other rows
// are left as they are. dweight and dbias (optional) are sums over the sequences, in order; a
// length-0 sequence passes dfinal_states straight through to dstates.
struct RefVarlenGrads {
  double* dx = nullptr;          // [total, D]
  double* dweight = nullptr;     // [D, W]
  double* dbias = nullptr;       // [D]
  double* dstates = nullptr;     // [C, D, W-1]
  double* dweight_sq = nullptr;  // [D, W]: the sums of squared terms, as in RefGrads
  double* dbias_sq = nullptr;    // [D]
};
void reference_varlen_backward(const RefVarlen& p, const double* dout, const double* dfinal_states,
                               const RefVarlenGrads& g);

// Host memory reference_backward needs besides its inputs and outputs (per thread: dz for one group
// of channels over the whole sequence), for the chapters' memory check.
int64_t reference_backward_scratch_bytes(const ConvShape& s);

// silu and its derivative, shared with the tests.
double silu(double z);
double silu_grad(double z);

}  // namespace conv1d
