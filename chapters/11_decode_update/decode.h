// Chapter 11's problem on the host: a decoding loop of N steps, each bringing T new tokens per batch
// row, against a conv_state cache; the cache before the loop in both layouts, the fp64 reference of
// the outputs and the cache the loop must leave behind. The chapter and its tests both build their
// problems here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/cli.h"
#include "common/runner.h"
#include "common/tensor.h"
#include "common/util.h"

namespace conv1d::ch11 {

// New tokens per step at most: speculative decoding sends a few, and the kernels keep a step's
// tokens of a channel in registers.
constexpr int kMaxTokens = 8;

// How the cache orders a row's last S inputs.
//   linear    oldest first, the newest at index S-1; a step shifts the row left by T and appends.
//   circular  the input of absolute position p at index p % S; a step writes its T inputs and moves
//             nothing else. Positions come from cache_seqlens (tokens seen so far).
enum class Buffer { linear, circular };
const char* buffer_name(Buffer b);

// p mod s in [0, s), p possibly negative: a circular window that reaches before position 0 reads
// the end of the buffer (whatever it holds there), as the reference library does.
CONV1D_HOST_DEVICE inline int64_t wrap(int64_t p, int64_t s) {
  const int64_t r = p % s;
  return r < 0 ? r + s : r;
}

// The chapter's own flags; the shared ones give B, D, T (--seqlen), W, dtype, bias and SiLU.
struct DecodeFlags {
  int64_t steps = 64;
  int64_t state_len = 0;   // S; 0: W-1
  int64_t cache_rows = 0;  // C; 0: B (2B with --gather)
  bool gather = false;
  std::string buffer = "both";  // linear, circular, both
  std::string kernel = "auto";  // auto, vector, channel
  std::string launch = "both";  // graph, direct, both
  int64_t threads = 0;          // per block; 0: the launch chooses (update.cuh)
  std::string pdl = "on";       // on: steps launched early where the GPU can (update.cuh); off
  std::string spans = "auto";   // the vector kernel's warps read spans (on), runs (off), or auto
};

int64_t state_len_of(const Options& o, const DecodeFlags& f);
int64_t cache_rows_of(const Options& o, const DecodeFlags& f);
// Whether the vector kernel can run: a state of exactly W-1 inputs, and D a multiple of the
// channels in 16 bytes (8 in fp16/bf16, 4 in fp32).
bool vector_kernel_fits(const Options& o, const DecodeFlags& f);
// "" or the one-line reason the flags are refused.
std::string check_flags(const Options& o, const DecodeFlags& f);

struct Decode {
  Options opt;  // seqlen is T, the new tokens per step
  int64_t steps = 0, state_len = 0, cache_rows = 0;
  RandomInputs in;    // x as [B, D, N*T]: each row's new tokens in order; weight [D, W]; bias
  HostArray x_steps;  // x as the loop reads it, [N, B, D, T]: step k's tensor at k*B*D*T
  // Batch row b reads and writes cache row indices[b], none when negative (a padding row); without
  // --gather the vector is empty and row b uses cache row b.
  std::vector<int32_t> indices;
  // Tokens row b has seen before the loop: the position of its first new token (circular buffer).
  std::vector<int32_t> seqlens;
  // [C, D, S] before the loop and after its N steps (exact: a cache holds copies of inputs), by
  // Buffer. Both layouts hold the same history, so both loops compute the same outputs.
  HostArray cache_before[2], cache_after[2];
  std::vector<double> ref;  // [B, D, N*T]; padding rows 0
  int64_t active_rows = 0;  // batch rows that are not padding

  int64_t row_of(int64_t b) const { return indices.empty() ? b : indices[b]; }
  std::string summary() const;
};

// Draws the inputs (from --seed) and computes the references; `f` must have passed check_flags.
Decode make_decode(const Options& o, const DecodeFlags& f);

// A loop's tensors as the steps see them, [N, B, D, T], and as rows of N*T tokens, [B, D, N*T]
// (the reference's layout).
HostArray rows_of_steps(const HostArray& steps, const Options& o, int64_t n_steps);
HostArray steps_of_rows(const HostArray& rows, const Options& o, int64_t n_steps);

}  // namespace conv1d::ch11
