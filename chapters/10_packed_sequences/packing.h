// Chapter 10's problem on the host: how sequences are packed (--seq-lens), the inputs, states and
// fp64 references of both forms, and the pieces of a row that --chunks runs one after another.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/cli.h"
#include "common/runner.h"
#include "common/tensor.h"

namespace conv1d::ch10 {

// Sequence lengths from a --seq-lens value: "random:N" (N lengths drawn from `seed`, any of them
// possibly 0 or 1, summing to `total`) or a comma-separated list, which must sum to at most `total`
// (rows: the rest of the row is padding) or exactly `total` (exact = true). Returns "" or why the
// value is refused.
std::string parse_seq_lens(const std::string& spec, int64_t total, uint64_t seed, bool exact,
                           std::vector<int64_t>* lens);

// seq_idx [B, L] for rows packed with `lens` (the same list for every row) or, for random:N, each
// row with its own N random lengths; sequence j of a row has id j, and the rest of a row is padding
// (-1). With random:N the last sequence of every odd row is padding too.
std::string make_seq_idx(const std::string& spec, int64_t batch, int64_t seqlen, uint64_t seed,
                         std::vector<int32_t>* seq_idx);

// The fp64 reference gradients of one backward problem, and the tolerances of its sums.
struct GradRef {
  std::vector<double> dx;       // like x: [B, D, L] (rows form) or [total, D] (varlen)
  std::vector<double> dweight;  // [D, W]
  std::vector<double> dbias;    // [D]
  std::vector<double> dstates;  // [B, D, W-1] (rows form) or [C, D, W-1] (varlen; rows no
                                // sequence owns keep kUntouched)
  Tolerance dweight_tol{}, dbias_tol{};
};

// What a state-gradient row that no sequence owns must still hold after a varlen backward.
constexpr float kUntouched = -7.0f;

struct Packed {
  RandomInputs in;   // x [B, D, L], weight, bias
  HostArray x_last;  // x as [B, L, D]: also the varlen tokens [B*L, D]
  // Rows form.
  HostArray init;                 // [B, D, W-1], empty without --initial-states
  std::vector<int32_t> seq_idx;   // [B, L], empty with --seq-lens none
  std::vector<double> ref_rows;   // [B, D, L]
  std::vector<double> ref_final;  // [B, D, W-1]
  std::vector<double> ref_plain;  // [B, D, L]: no packing, no states (chapter 08's problem)
  // Varlen form: N sequences over the B*L tokens; sequence n reads and writes cache row slots[n]
  // (negative: from zeros, nothing written).
  std::vector<int64_t> lens;
  std::vector<int32_t> cu_seqlens, slots;
  HostArray cache;                              // [C, D, W-1] as it is before a run
  std::vector<double> ref_varlen;               // [B*L, D]
  std::vector<double> ref_cache;                // [C, D, W-1] after a run
  int64_t states_read = 0, states_written = 0;  // cache rows a run reads and writes
  // --chunks: the rows form as pieces of L, each starting from the inputs before it (the first
  // from the initial states).
  std::vector<int64_t> chunk_starts, chunk_lens;
  std::vector<HostArray> chunk_init;  // [B, D, W-1] each
  // Backward: dout like x, the final states' gradients coming back (fp32, as the state
  // gradients are), and the references of the rows form, of chapter 09's problem on the same x
  // and dout, and of the varlen form.
  HostArray dout, dout_last;        // [B, D, L] and [B, L, D] (the varlen [B*L, D])
  std::vector<float> dfinal_rows;   // [B, D, W-1]
  std::vector<float> dfinal_cache;  // [C, D, W-1]
  GradRef grad_rows, grad_plain, grad_varlen;
  std::string summary() const;
};

struct PackSpec {
  std::string seq_lens;
  bool initial_states = false;
  int chunks = 1;
  bool rows = true, varlen = true;
  bool forward = true, backward = false;
};
std::string make_packed(const Options& o, const PackSpec& spec, Packed* p);

// Time steps start .. start+len-1 of every row of x ([B, D, L] or [B, L, D]), as a tensor of its own;
// and back into place.
HostArray chunk_of(const HostArray& x, Layout l, const Options& o, int64_t start, int64_t len);
void put_chunk(HostArray& x, const HostArray& chunk, Layout l, const Options& o, int64_t start,
               int64_t len);

}  // namespace conv1d::ch10
