// The frame every chapter runs in, so a chapter's files hold what the chapter teaches and not the
// bookkeeping around it. run_chapter() owns the order of a run:
//
//   parse and validate flags (exit 2)  ->  look for a GPU (exit 77 when none)  ->  check that the run
//   fits in device and host memory (exit 2)  ->  header  ->  the chapter's inputs and fp64 reference
//   (timed)  ->  the copy ceiling, measured in this run  ->  for each variant: a verification run on
//   poisoned outputs, warm-up, timed runs with the L2 flushed before each, verification again  ->
//   phase table, kernel rates against the copy ceiling, the chapter's own report, summary  ->  .npy
//   and CSV files on request.  Exit 0 only when every variant verified.
//
// CONV1D_PARSE_ONLY=1 in the environment stops after the first step: a command line the chapter
// accepts prints "<exe>: arguments accepted" and exits 0 without looking for a GPU (bad input still
// exits 2). scripts/docs_commands.py --parse checks every chapter command the pages show this way.
// CONV1D_REQUIRE_GPU=1 turns the exit 77 of a machine without a GPU into a failure (exit 1).
//
// A chapter is a class derived from Chapter that fills in the hooks (flags, memory, problem,
// variants, report); forward chapters of the GEMM formulation (01-05) describe themselves with the
// simpler FwdChapter below and run through run_forward_chapter().
//
// --summary FILE appends one row per variant to FILE (tab-separated, header written when the file is
// new: chapter, name, variant, end_to_end_ms, kernels_ms, verified, device, shape) and one row per
// reported kernel to FILE_kernels.tsv (FILE without its .tsv suffix; chapter, name, variant, kernel,
// ms, tflops, gbs, ceiling_pct, copy_ceiling_gbs, device, shape). Times are medians over timed runs.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/cli.h"
#include "common/device.h"
#include "common/phases.h"
#include "common/reference.h"
#include "common/tensor.h"
#include "common/timing.h"

namespace conv1d {

struct MemoryNeed {
  int64_t device_bytes = 0;
  int64_t host_bytes = 0;
};

// A kernel whose rate the chapter reports: its name in the phase records, and the arithmetic and
// the bytes one run of the pipeline asks of it, summed over its launches (napkin counts, stated in
// the chapter). Rates are computed from the median over timed runs of that kernel's total time per
// run.
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

// A check of a run's outputs against the reference.
struct CheckResult {
  bool ok = false;
  std::string text;  // the report: one or more lines, each ending in a newline
};

// A variant as the measuring loop sees it, whatever it computes.
struct MeasuredVariant {
  std::string name;
  std::string intro;                         // printed under the variant's heading (optional)
  std::vector<KernelModel> kernels;          // the first is the main kernel
  std::function<void(RunContext& ctx)> run;  // one run; poisons its outputs when ctx asks
  std::function<CheckResult()> check;        // the last run's outputs against the reference
  std::function<void(const std::string& dir)>
      save_npy;  // the last run's outputs, for --save-npy (optional)
  // When set, one more rate row for all kernels of a run together (their summed time), against
  // these bytes: "whole backward", say, when several kernels make up the work a goal is about.
  std::string whole_run_name;
  double whole_run_bytes = 0;
};

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

// What the frame knows when it calls a chapter's hooks.
struct Frame {
  Options opt;
  DeviceInfo dev;
  double ceiling_gbs = 0;  // the copy ceiling, measured in this run (0 before make_problem returns)
};

// A chapter. The frame calls the hooks in this order: flags() while parsing; check() after parsing
// (a message means exit 2); memory() before anything is allocated (the frame adds its own needs,
// and exits 2 when the run does not fit); describe() after the header; make_problem() (timed:
// inputs and fp64 references); save_inputs() with --save-npy; variants(), measured in order;
// report() after the last one. The object lives for the whole run, so flags and hooks can share its
// members.
class Chapter {
 public:
  explicit Chapter(ChapterSpec spec) : spec_(std::move(spec)) {}
  virtual ~Chapter() = default;
  Chapter(const Chapter&) = delete;
  Chapter& operator=(const Chapter&) = delete;
  const ChapterSpec& spec() const { return spec_; }

  // The chapter's own flags; they may write into *opt (a preset) or into the chapter's members.
  virtual std::vector<ExtraFlag> flags(Options* opt) {
    (void)opt;
    return {};
  }
  // Combinations of flags the chapter refuses: "" or the one-line reason.
  virtual std::string check(const Options& opt) {
    (void)opt;
    return "";
  }
  // Device and host bytes of the chapter's buffers, inputs and references.
  virtual MemoryNeed memory(const Frame& f) = 0;
  // Lines printed after the header (plans, presets); optional.
  virtual void describe(const Frame& f) { (void)f; }
  // Draws the inputs and computes the references. Returns text appended to the line that reports
  // the time this took (tolerances, say), or "".
  virtual std::string make_problem(const Frame& f) = 0;
  // --save-npy: inputs and references into `dir` (which exists).
  virtual void save_inputs(const std::string& dir) { (void)dir; }
  // The variants, measured in this order; the first is the chapter's headline.
  virtual std::vector<MeasuredVariant> variants(const Frame& f) = 0;
  // After the last variant, before the summary: the chapter's own report; may add rows to results.
  virtual void report(const Frame& f, std::vector<VariantResult>& results) {
    (void)f;
    (void)results;
  }

 private:
  ChapterSpec spec_;
};

int run_chapter(int argc, char** argv, Chapter& ch);

// ---------------------------------------------------------------------------------------------
// Forward chapters of the GEMM formulation (01-05): a pipeline from host x to host out, channel-first.

struct FwdProblem {
  Options opt;
  ConvShape shape;
  HostArray x;              // [B, D, L] in opt.dtype
  HostArray weight;         // [D, W]    in opt.dtype
  HostArray bias;           // [D] in opt.dtype, empty without --bias
  std::vector<double> ref;  // [B, D, L] fp64 reference computed from the rounded inputs
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
  std::function<MemoryNeed(const Options&)> memory;                 // checked before allocating
  std::function<std::vector<FwdVariant>(const Options&)> variants;  // the first is the headline
};

int run_forward_chapter(int argc, char** argv, const FwdChapter& chapter);

// A chapter whose problem is this forward (chapter 07, and the FwdChapter ones): draws it and saves
// it.
class ForwardProblemChapter : public Chapter {
 public:
  using Chapter::Chapter;
  std::string make_problem(const Frame& f) override;
  void save_inputs(const std::string& dir) override;

 protected:
  FwdProblem problem_;
};

// ---------------------------------------------------------------------------------------------
// Pieces every chapter uses.

// The random inputs every chapter draws from --seed, uniform in [-1, 1) and rounded to opt.dtype:
// x (B*D*L elements, whatever the layout) from seed, weight [D, W] from seed + 1, bias [D] from
// seed + 2 (empty without --bias).
struct RandomInputs {
  HostArray x, weight, bias;
};
RandomInputs draw_inputs(const Options& opt);

// The same inputs in fp64, as the reference reads them; problem() points a RefProblem at them.
struct RefInputs {
  std::vector<double> x, weight, bias;
  explicit RefInputs(const RandomInputs& in);
  RefProblem problem(const ConvShape& shape, Layout layout, bool silu) const;
};

// The forward problem in channel-first layout: inputs and the fp64 reference.
FwdProblem make_forward_problem(const Options& opt);
// --save-npy: x, weight, bias (with --bias) and the fp64 reference into opt.save_npy (no-op without
// the flag); the variants add their outputs as out_<variant>.npy.
void save_forward_inputs(const FwdProblem& p);

// Appends rows to a tab-separated result file (parent folders made), the header first when the file
// is new: how every --summary file of the project is written.
void append_rows(const std::string& path, const std::string& header,
                 const std::vector<std::string>& rows);
// A result file's name without its .tsv suffix, to name the files that go with it
// (FILE_kernels.tsv).
std::string tsv_stem(const std::string& path);
// "B=4 D=512 L=2048 W=4 fp32 bias silu": the shape column of the result files.
std::string shape_string(const Options& o);

}  // namespace conv1d
