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
#include "common/device.h"
#include "common/phases.h"
#include "common/tensor.h"
#include "common/timing.h"

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
// Appends rows to a tab-separated result file (parent folders made), the header first when the file
// is new: how every --summary file of the project is written.
void append_rows(const std::string& path, const std::string& header, const std::vector<std::string>& rows);
// --save-npy: writes x, weight, bias (with --bias) and the fp64 reference into opt.save_npy (no-op
// without the flag); the variants add their outputs as out_<variant>.npy.
void save_forward_inputs(const FwdProblem& p);
// The random inputs every chapter draws from --seed, uniform in [-1, 1) and rounded to opt.dtype:
// x (B*D*L elements, whatever the layout) from seed, weight [D, W] from seed + 1, bias [D] from
// seed + 2 (empty without --bias).
struct RandomInputs {
  HostArray x, weight, bias;
};
RandomInputs draw_inputs(const Options& opt);
// Parses, prints help or the error line; returns -1 to continue, else the exit code.
int handle_command_line(int argc, char** argv, const ChapterSpec& spec, Options* opt,
                        const std::vector<ExtraFlag>& extra);
// Looks for a GPU; returns -1 to continue, else the exit code (77, or 1 under CONV1D_REQUIRE_GPU).
int handle_missing_gpu(const ChapterSpec& spec);
// Returns an empty string or the one-line reason the run does not fit.
std::string check_memory(const MemoryNeed& need);
// Device memory the frame itself needs besides a chapter's buffers (the L2 flusher, the copy that
// measures the ceiling), and that copy's size.
int64_t frame_device_bytes(const DeviceInfo& dev);
int64_t copy_ceiling_bytes(const DeviceInfo& dev);
// Prints the lines that open every run: executable and chapter, device, shape and run counts.
void print_run_header(const ChapterSpec& spec, const Options& opt, const DeviceInfo& dev);
// Runs a chapter's body (after the command line and the GPU check) and turns an exception into the
// one-line error and exit code 1 every chapter uses.
int run_reporting_errors(const ChapterSpec& spec, const std::function<int()>& body);
// Measures the copy ceiling (measure_copy_ceiling_gbs) and prints it.
double report_copy_ceiling(const DeviceInfo& dev);

// What a measured variant reports; times are medians over the timed runs.
struct KernelResult {
  std::string kernel;
  double ms = 0, tflops = 0, gbs = 0;
};
struct VariantResult {
  std::string name;
  bool verified = false;
  Summary e2e_ms, device_ms;
  std::vector<KernelResult> kernels;  // as modelled by the variant, main kernel first
};

// A variant as the measuring loop sees it, whatever it computes (forward or backward).
struct CheckResult {
  bool ok = false;
  std::string text;  // the report: one or more lines, each ending in a newline
};
struct MeasuredVariant {
  std::string name;
  std::vector<KernelModel> kernels;                     // the first is the main kernel
  std::function<void(RunContext& ctx)> run;             // one run; poisons its outputs when ctx asks
  std::function<CheckResult()> check;                   // the last run's outputs against the reference
  std::function<void(const std::string& dir)> save_npy;  // the last run's outputs, for --save-npy (optional)
};

// The measuring loop every chapter uses: a verification run on poisoned outputs, --warmup runs, then
// --iters timed runs each after an L2 flush, and a verification run again; prints the checks, the phase
// table and the kernel rates against `ceiling_gbs`; writes --profile-csv files (named after the variant
// when `several`) and calls save_npy for --save-npy.
VariantResult measure_variant(const MeasuredVariant& v, const Options& opt, L2Flusher& flusher, double ceiling_gbs,
                              bool several);
// Prints the summary table and VERIFIED (or VERIFICATION FAILED), appends the --summary rows;
// returns the exit code: 0 when every variant verified, 1 otherwise.
int report_variants(const ChapterSpec& spec, const Options& opt, const std::string& device,
                    const std::vector<VariantResult>& results, double ceiling_gbs);

}  // namespace conv1d
