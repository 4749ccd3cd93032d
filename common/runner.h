// The frame every forward chapter runs in, so a chapter's main.cu holds only what the chapter
// teaches (its pipeline) and not the bookkeeping around it:
//
//   parse and validate flags (exit 2)  ->  look for a GPU (exit 77 when none)  ->  draw random inputs
//   and the fp64 reference  ->  check the run fits in device and host memory (exit 2)  ->  for each
//   variant: verification run on poisoned outputs, warm-up, timed runs with the L2 flushed before
//   each, verification again  ->  phase table, kernel rates against the copy ceiling measured in
//   this run, summary  ->  .npy and CSV files on request.  Exit 0 only when every variant verified.
//
// --summary FILE appends one row per variant to FILE (tab-separated, header written when the file is
// new: chapter, name, variant, end_to_end_ms, kernels_ms, verified, device, shape) and one row per
// reported kernel to FILE_kernels.tsv (FILE without its .tsv suffix; chapter, name, variant, kernel,
// ms, tflops, gbs, ceiling_pct, copy_ceiling_gbs, device, shape). Times are medians over timed runs.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/cli.h"
#include "common/phases.h"
#include "common/tensor.h"

namespace conv1d {

struct FwdProblem {
  Options opt;
  ConvShape shape;
  HostArray x;              // [B, D, L] in opt.dtype
  HostArray weight;         // [D, W]    in opt.dtype
  HostArray bias;           // [D] in opt.dtype, empty without --bias
  std::vector<double> ref;  // [B, D, L] fp64 reference computed from the rounded inputs
};

struct MemoryNeed {
  int64_t device_bytes = 0;
  int64_t host_bytes = 0;
};

// A kernel whose rate the chapter reports: its name in the phase records, and the arithmetic and the
// bytes one run of the pipeline asks of it, summed over its launches (napkin counts, stated in the
// chapter). Rates are computed from the median over timed runs of that kernel's total time per run.
struct KernelModel {
  std::string kernel;
  double flops = 0;
  double bytes = 0;
};

// What one run is asked to do besides the work itself.
struct RunContext {
  PhaseRecorder& rec;   // every step of the run is recorded here
  bool poison_outputs;  // verification runs: fill device outputs with NaN before the kernels
};

struct FwdVariant {
  std::string name;  // "naive", "fused", ...
  // One end-to-end run: from the host inputs in `p` to `out` ([B, D, L], opt.dtype) on the host.
  std::function<void(const FwdProblem& p, RunContext& ctx, HostArray& out)> run;
  std::vector<KernelModel> kernels;  // the first is the main kernel
};

struct FwdChapter {
  ChapterSpec spec;
  std::vector<ExtraFlag> extra_flags;
  std::function<MemoryNeed(const Options&)> memory;              // checked before allocating
  std::function<std::vector<FwdVariant>(const Options&)> variants;  // the first is the headline
};

int run_forward_chapter(int argc, char** argv, const FwdChapter& chapter);

// Pieces of the frame, for chapters that are not forward chapters (e.g. the backward one).
FwdProblem make_forward_problem(const Options& opt);
// Parses, prints help or the error line; returns -1 to continue, else the exit code.
int handle_command_line(int argc, char** argv, const ChapterSpec& spec, Options* opt,
                        const std::vector<ExtraFlag>& extra);
// Looks for a GPU; returns -1 to continue, else the exit code (77, or 1 under CONV1D_REQUIRE_GPU).
int handle_missing_gpu(const ChapterSpec& spec);
// Returns an empty string or the one-line reason the run does not fit.
std::string check_memory(const MemoryNeed& need);

}  // namespace conv1d
