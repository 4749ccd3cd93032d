// Chapter 11: the launch of one decoding step, and which of the two kernels runs it.
//
//   decode_update_vector    a thread per (row, 16 bytes of channels); a state of W-1 inputs, D a
//                           multiple of the group; a big step's warps move whole spans of
//                           contiguous bytes (Spans below)                        (update_vector.cuh)
//   decode_update_channel   a thread per (row, channel); any S >= W-1, any D      (update_channel.cuh)
//
// Both run a grid of B rows of blocks, the batch row taken from the block index. The block size
// follows the step (decode_threads): a small step (B = 1: D/8 threads in 16-bit groups) in blocks
// of 64, spread over as many multiprocessors as it can fill; a big one (B = 256: 131072 threads)
// in blocks of 128, which pack a multiprocessor's registers more tightly than blocks of 256.
//
// Each step is launched early (programmatic dependent launch, common/launch.cuh) where the GPU
// has it: step k+1's blocks are placed on the multiprocessors and load their filters while step
// k still runs, and wait there for step k to finish before they read anything else. What that
// hides is the gap between two kernels: the previous kernel's tail, the launch, the blocks'
// placement. The kernels read only the filters before their wait, because in a model the kernel
// before a decoding step is the one that computes its x.
#pragma once

#include <stdexcept>
#include <string>

#include "chapters/11_decode_update/update_channel.cuh"
#include "chapters/11_decode_update/update_vector.cuh"
#include "common/launch.cuh"

namespace conv1d::ch11 {

enum class Kernel { vector, channel };

inline const char* kernel_name(Kernel k) {
  return k == Kernel::vector ? "decode_update_vector" : "decode_update_channel";
}

// Threads per block for a step of `threads` threads: 128 where that still gives every
// multiprocessor two blocks, else 64. `requested` (--threads) wins. Not 256: at 88-96 registers
// a thread (bf16, W = 4) a multiprocessor's 65536 registers hold two blocks of 256 (512 threads)
// but five of 128 (640), and with spans the big steps are as fast as the threads in flight: on an
// H200, B = 256 at T = 4 took 8.3 us a step in blocks of 256 and 7.7 in blocks of 128
// (docs/11_decode_update.md).
inline int decode_threads(int64_t threads, int requested = 0) {
  if (requested > 0) return requested;
  static const int sm_count = [] {
    int device = 0, n = 0;
    GPU_CHECK(cudaGetDevice(&device));
    GPU_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device));
    return n;
  }();
  return ceil_div(threads, int64_t(128)) >= 2 * int64_t(sm_count) ? 128 : 64;
}

// Whether the vector kernel can run a step: a state of W-1 inputs, D a multiple of the channels in
// 16 bytes, and every tensor aligned to 16 bytes (cudaMalloc's are, and so is every step's slice
// of them when D is such a multiple).
template <class T>
bool vector_fits(const StepArgs<T>& a, int width) {
  const bool aligned = aligned_to(a.x, 16) && aligned_to(a.out, 16) && aligned_to(a.state, 16) &&
                       aligned_to(a.weight, 16) && (a.bias == nullptr || aligned_to(a.bias, 16));
  return a.state_len == width - 1 && a.dim % kPer16<T> == 0 && aligned;
}

// "auto" (the vector kernel where it fits), "vector" or "channel".
template <class T>
Kernel choose_kernel(const StepArgs<T>& a, int width, const std::string& choice) {
  if (choice == "channel" || (choice == "auto" && !vector_fits(a, width))) return Kernel::channel;
  return Kernel::vector;
}

// Calls f(std::integral_constant<int, T>) for T = tokens in 1..kMaxTokens.
template <class F>
void dispatch_tokens(int tokens, F&& f) {
  switch (tokens) {
    case 1: return f(std::integral_constant<int, 1>{});
    case 2: return f(std::integral_constant<int, 2>{});
    case 3: return f(std::integral_constant<int, 3>{});
    case 4: return f(std::integral_constant<int, 4>{});
    case 5: return f(std::integral_constant<int, 5>{});
    case 6: return f(std::integral_constant<int, 6>{});
    case 7: return f(std::integral_constant<int, 7>{});
    case 8: return f(std::integral_constant<int, 8>{});
  }
  throw std::invalid_argument("decode step: tokens per step must be 1.." +
                              std::to_string(kMaxTokens) + " (got " + std::to_string(tokens) + ")");
}

// How the vector kernel's warps read and write their lanes' runs (warp_runs.cuh): the warp its
// whole span (on), each lane its own (off), or the launch's choice (automatic: use_spans).
enum class Spans { automatic, on, off };

// The launch's choice: spans for a step of at least kSpansFrom threads (B = 8 at D = 4096 in bf16).
// A smaller step is a few chains of dependent trips to memory, too few requests for the L2 to
// queue, and dealing through shared memory only adds links to each chain: on an H100 the two
// ways tie at one token and spans cost up to 0.1 us a step at four (docs/11_decode_update.md).
constexpr int64_t kSpansFrom = 4096;
inline bool use_spans(Spans s, int64_t threads) {
  return s == Spans::on || (s == Spans::automatic && threads >= kSpansFrom);
}

// How a step is launched: threads per block (0: decode_threads' choice), whether early, and (the
// vector kernel) whether with spans.
struct StepLaunch {
  int threads = 0;
  bool early = true;
  Spans spans = Spans::automatic;
};

// Whether step `a` runs with spans: the vector kernel's, launched `how` (one thread per 16 bytes
// of channels in each batch row).
template <class T>
bool step_uses_spans(const StepArgs<T>& a, Kernel k, StepLaunch how) {
  return k == Kernel::vector && use_spans(how.spans, a.batch * ceil_div(a.dim, int64_t(kPer16<T>)));
}

// One step on stream s (or, with `facts`, only what the compiler made of its kernel).
template <class T>
void launch_decode_step(const StepArgs<T>& a, int width, Kernel k, cudaStream_t s = 0,
                        KernelFacts* facts = nullptr, StepLaunch how = {}) {
  if (a.tokens < 1 || a.tokens > kMaxTokens || a.state_len < width - 1)
    throw std::invalid_argument(
        "decode step: needs 1..8 tokens and a state of at least W-1 inputs");
  if (k == Kernel::vector && !vector_fits(a, width))
    throw std::invalid_argument(
        "decode_update_vector needs a state of W-1 inputs, D a multiple of the channels in 16 "
        "bytes and 16-byte aligned tensors (decode_update_channel takes any)");
  const int per_thread = k == Kernel::vector ? kPer16<T> : 1;
  const int64_t row_threads = ceil_div(a.dim, int64_t(per_thread));
  const int block = decode_threads(a.batch * row_threads, how.threads);
  const int64_t row_blocks = ceil_div(row_threads, int64_t(block));
  const FastDivmod blocks_per_row(row_blocks);
  const int64_t blocks = a.batch * row_blocks;
  dispatch_width(width, [&](auto w) {
    constexpr int W = decltype(w)::value;
    if (k == Kernel::channel)
      return launch_early_or_describe("decode_update_channel", decode_update_channel<T, W>, blocks,
                                      block, 0, s, facts, how.early, a, blocks_per_row);
    const bool spans = step_uses_spans(a, k, how);
    dispatch_tokens(a.tokens, [&](auto t) {
      constexpr int kTokens = decltype(t)::value;
      if (spans)
        return launch_early_or_describe("decode_update_vector",
                                        decode_update_vector<T, W, kTokens, true>, blocks, block,
                                        stage_bytes<true>(block, kLongestRun<W, kTokens>), s, facts,
                                        how.early, a, blocks_per_row);
      launch_early_or_describe("decode_update_vector", decode_update_vector<T, W, kTokens, false>,
                               blocks, block, 0, s, facts, how.early, a, blocks_per_row);
    });
  });
}

}  // namespace conv1d::ch11
