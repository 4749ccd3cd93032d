#include "common/runner.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "common/device.h"
#include "common/npy.h"
#include "common/parallel.h"
#include "common/reference.h"
#include "common/timing.h"
#include "common/verify.h"

namespace conv1d {

// ---------------------------------------------------------------------------------------------
// Pieces every chapter uses.

RandomInputs draw_inputs(const Options& opt) {
  RandomInputs in;
  in.x = HostArray(opt.dtype, static_cast<size_t>(opt.batch * opt.dim * opt.seqlen));
  in.weight = HostArray(opt.dtype, static_cast<size_t>(opt.dim * opt.width));
  fill_uniform(in.x, opt.seed, -1.0, 1.0);
  fill_uniform(in.weight, opt.seed + 1, -1.0, 1.0);
  if (opt.bias) {
    in.bias = HostArray(opt.dtype, static_cast<size_t>(opt.dim));
    fill_uniform(in.bias, opt.seed + 2, -1.0, 1.0);
  }
  return in;
}

RefInputs::RefInputs(const RandomInputs& in)
    : x(in.x.to_double()), weight(in.weight.to_double()), bias(in.bias.to_double()) {}

RefProblem RefInputs::problem(const ConvShape& shape, Layout layout, bool silu) const {
  RefProblem rp;
  rp.shape = shape;
  rp.layout = layout;
  rp.x = x.data();
  rp.weight = weight.data();
  rp.bias = bias.empty() ? nullptr : bias.data();
  rp.silu = silu;
  return rp;
}

FwdProblem make_forward_problem(const Options& opt) {
  FwdProblem p;
  p.opt = opt;
  p.shape = ConvShape{opt.batch, opt.dim, opt.seqlen, opt.width};
  RandomInputs in = draw_inputs(opt);
  {
    const RefInputs ref_in(in);  // freed before returning: at 2^31 elements it is 17 GB per tensor
    p.ref.resize(static_cast<size_t>(p.shape.elements()));
    reference_forward(ref_in.problem(p.shape, Layout::channel_first, opt.silu), p.ref.data());
  }
  p.x = std::move(in.x);
  p.weight = std::move(in.weight);
  p.bias = std::move(in.bias);
  return p;
}

void append_rows(const std::string& path, const std::string& header,
                 const std::vector<std::string>& rows) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent);
  const bool fresh = !std::filesystem::exists(path) || std::filesystem::file_size(path) == 0;
  std::ofstream f(path, std::ios::app);
  if (fresh) f << header << "\n";
  for (const std::string& r : rows) f << r << "\n";
  if (!f) throw std::runtime_error("cannot append to " + path);
}

std::string tsv_stem(const std::string& path) {
  const std::string suffix = ".tsv";
  if (path.size() > suffix.size() &&
      path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0)
    return path.substr(0, path.size() - suffix.size());
  return path;
}

std::string shape_string(const Options& o) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "B=%lld D=%lld L=%lld W=%d %s%s%s",
                static_cast<long long>(o.batch), static_cast<long long>(o.dim),
                static_cast<long long>(o.seqlen), o.width, dtype_name(o.dtype),
                o.bias ? " bias" : "", o.silu ? " silu" : "");
  return buf;
}

void save_forward_inputs(const FwdProblem& p) {
  const Options& opt = p.opt;
  if (opt.save_npy.empty()) return;
  std::filesystem::create_directories(opt.save_npy);
  write_npy(opt.save_npy + "/x.npy", p.x, {opt.batch, opt.dim, opt.seqlen});
  write_npy(opt.save_npy + "/weight.npy", p.weight, {opt.dim, opt.width});
  if (opt.bias) write_npy(opt.save_npy + "/bias.npy", p.bias, {opt.dim});
  write_npy(opt.save_npy + "/reference.npy", p.ref, {opt.batch, opt.dim, opt.seqlen});
  std::printf("wrote x, weight%s and reference .npy files to %s\n", opt.bias ? ", bias" : "",
              opt.save_npy.c_str());
}

// ---------------------------------------------------------------------------------------------
// The measuring loop and the reports.

namespace {

double record_ms(const PhaseRecorder& rec, int iteration, const std::string& name) {
  int64_t ns = 0;
  for (const PhaseRecord& r : rec.records())
    if (r.iteration == iteration && r.name == name) ns += r.duration_ns();
  return ns * 1e-6;
}

KernelResult rate(const std::string& kernel, double ms, double flops, double bytes) {
  KernelResult k{kernel, ms, 0, 0};
  if (ms > 0) {
    k.tflops = flops / (ms * 1e-3) / 1e12;
    k.gbs = bytes / (ms * 1e-3) / 1e9;
  }
  return k;
}

// A verification run on poisoned outputs, --warmup runs, then --iters timed runs each after an L2
// flush, and a verification run again; prints the checks, the phase table and the kernel rates
// against `ceiling_gbs`; writes --profile-csv files (named after the variant when `several`) and
// calls save_npy for --save-npy.
VariantResult measure_variant(const MeasuredVariant& v, const Options& opt, L2Flusher& flusher,
                              double ceiling_gbs, bool several) {
  VariantResult res;
  res.name = v.name;
  std::printf("\n== variant %s ==\n", v.name.c_str());
  if (!v.intro.empty()) std::printf("  %s\n", v.intro.c_str());

  PhaseRecorder rec;
  RunContext verify_ctx{rec, true}, timed_ctx{rec, false};
  auto run = [&](int iteration, RunContext& ctx) {
    rec.begin_iteration(iteration);
    v.run(ctx);
    rec.end_iteration();
  };

  // 1. Verification run: poisoned outputs on both sides, so nothing unwritten can pass.
  run(0, verify_ctx);
  const CheckResult first = v.check();
  std::printf("  %s", first.text.c_str());

  // 2. Warm-up, then timed runs, each after an L2 flush (outside the timed region).
  std::printf("  timing: %d warm-up + %d timed runs ...\n", opt.warmup, opt.iters);
  std::fflush(stdout);
  for (int i = 0; i < opt.warmup; ++i) {
    flusher.flush();
    GPU_CHECK(cudaDeviceSynchronize());
    run(-1, timed_ctx);
  }
  std::vector<double> e2e, dev;
  std::vector<std::vector<double>> per_kernel(v.kernels.size());
  for (int i = 1; i <= opt.iters; ++i) {
    flusher.flush();
    GPU_CHECK(cudaDeviceSynchronize());
    const int64_t t0 = host_now_ns();
    run(i, timed_ctx);
    e2e.push_back((host_now_ns() - t0) * 1e-6);
    dev.push_back(rec.kernel_ms(i));
    for (size_t k = 0; k < v.kernels.size(); ++k)
      per_kernel[k].push_back(record_ms(rec, i, v.kernels[k].kernel));
  }

  // 3. Verify again after timing, on fresh poison (timing must not have disturbed anything).
  run(opt.iters + 1, verify_ctx);
  const CheckResult again = v.check();

  res.e2e_ms = summarize(e2e);
  res.device_ms = summarize(dev);
  res.verified = first.ok && again.ok;
  std::vector<PhaseRecord> timed;
  for (const PhaseRecord& r : rec.records())
    if (r.iteration >= 1 && r.iteration <= opt.iters) timed.push_back(r);
  const std::vector<PhaseStat> stats = phase_stats(timed, 1);

  std::printf("  phases (timed runs; kernels by device events, the rest by the host clock):\n%s",
              phase_table(stats, opt.iters).c_str());
  std::printf("  end-to-end: median %.3f ms (min %.3f, max %.3f); kernels: median %.3f ms\n",
              res.e2e_ms.median, res.e2e_ms.min, res.e2e_ms.max, res.device_ms.median);
  for (size_t k = 0; k < v.kernels.size(); ++k) {
    const KernelModel& m = v.kernels[k];
    const KernelResult kr = rate(m.kernel, summarize(per_kernel[k]).median, m.flops, m.bytes);
    std::printf("  %s %s: %.3f ms per run, %.3f TFLOP/s, %.1f GB/s = %.1f%% of the copy ceiling\n",
                k == 0 ? "main kernel" : "kernel", m.kernel.c_str(), kr.ms, kr.tflops, kr.gbs,
                100.0 * kr.gbs / ceiling_gbs);
    res.kernels.push_back(kr);
  }
  if (!v.whole_run_name.empty()) {
    const KernelResult all = rate(v.whole_run_name, res.device_ms.median, 0, v.whole_run_bytes);
    std::printf("  %s (all kernels): %.3f ms per run, %.1f GB/s = %.1f%% of the copy ceiling\n",
                all.kernel.c_str(), all.ms, all.gbs, 100.0 * all.gbs / ceiling_gbs);
    res.kernels.push_back(all);
  }
  std::printf("  after timing: %s", again.text.c_str());

  if (!opt.profile_csv.empty()) {
    const std::string prefix = opt.profile_csv + (several ? "_" + v.name : "");
    const std::filesystem::path parent = std::filesystem::path(prefix + "_stats.csv").parent_path();
    if (!parent.empty()) std::filesystem::create_directories(parent);
    write_stats_csv(prefix + "_stats.csv", stats);
    write_trace_csv(prefix + "_trace.csv", rec.records());
    std::printf("  wrote %s_stats.csv and %s_trace.csv\n", prefix.c_str(), prefix.c_str());
  }
  if (!opt.save_npy.empty() && v.save_npy) v.save_npy(opt.save_npy);
  return res;
}

void write_summary(const std::string& path, const ChapterSpec& spec,
                   const std::vector<VariantResult>& results, const std::string& device,
                   const std::string& shape, double ceiling) {
  std::vector<std::string> rows, kernel_rows;
  char buf[512];
  for (const VariantResult& r : results) {
    std::snprintf(buf, sizeof buf, "%s\t%s\t%s\t%.4f\t%.4f\t%s\t%s\t%s", spec.number.c_str(),
                  spec.name.c_str(), r.name.c_str(), r.e2e_ms.median, r.device_ms.median,
                  r.verified ? "yes" : "no", device.c_str(), shape.c_str());
    rows.push_back(buf);
    for (const KernelResult& k : r.kernels) {
      std::snprintf(buf, sizeof buf, "%s\t%s\t%s\t%s\t%.4f\t%.4f\t%.1f\t%.1f\t%.1f\t%s\t%s",
                    spec.number.c_str(), spec.name.c_str(), r.name.c_str(), k.kernel.c_str(), k.ms,
                    k.tflops, k.gbs, 100.0 * k.gbs / ceiling, ceiling, device.c_str(),
                    shape.c_str());
      kernel_rows.push_back(buf);
    }
  }
  append_rows(path, "chapter\tname\tvariant\tend_to_end_ms\tkernels_ms\tverified\tdevice\tshape",
              rows);
  append_rows(tsv_stem(path) + "_kernels.tsv",
              "chapter\tname\tvariant\tkernel\tms\ttflops\tgbs\tceiling_pct\tcopy_ceiling_"
              "gbs\tdevice\tshape",
              kernel_rows);
}

// Prints the summary table and VERIFIED (or VERIFICATION FAILED), appends the --summary rows;
// returns the exit code: 0 when every variant verified, 1 otherwise.
int report_variants(const ChapterSpec& spec, const Options& opt, const std::string& device,
                    const std::vector<VariantResult>& results, double ceiling_gbs) {
  size_t width = 12;
  for (const VariantResult& r : results) width = std::max(width, r.name.size());
  const int w = static_cast<int>(width);
  std::printf("\nsummary (%s, %s):\n", device.c_str(), shape_string(opt).c_str());
  std::printf("  %-*s %12s %12s %10s %10s %9s\n", w, "variant", "end-to-end", "kernels", "TFLOP/s",
              "GB/s", "verified");
  bool all_ok = true;
  for (const VariantResult& r : results) {
    const KernelResult main_k = r.kernels.empty() ? KernelResult{} : r.kernels.front();
    std::printf("  %-*s %9.3f ms %9.3f ms %10.3f %10.1f %9s\n", w, r.name.c_str(), r.e2e_ms.median,
                r.device_ms.median, main_k.tflops, main_k.gbs, r.verified ? "yes" : "NO");
    all_ok &= r.verified;
  }
  if (!opt.summary.empty())
    write_summary(opt.summary, spec, results, device, shape_string(opt), ceiling_gbs);
  std::printf("%s\n", all_ok ? "VERIFIED" : "VERIFICATION FAILED");
  return all_ok ? 0 : 1;
}

// The size of the copy that measures the ceiling, and the device memory the frame itself needs
// besides a chapter's buffers (the L2 flusher and that copy).
int64_t copy_ceiling_bytes(const DeviceInfo& dev) {
  return std::min<int64_t>(int64_t(256) << 20, dev.free_memory / 8);
}
int64_t frame_device_bytes(const DeviceInfo& dev) {
  return 2 * dev.l2_bytes + 2 * copy_ceiling_bytes(dev);
}

// An empty string, or the one-line reason the run does not fit.
std::string check_memory(const MemoryNeed& need, const DeviceInfo& dev) {
  auto mib = [](int64_t b) { return std::to_string(b / (1 << 20)) + " MiB"; };
  // Keep a margin for the runtime's own allocations.
  if (need.device_bytes > dev.free_memory - (int64_t(256) << 20))
    return "the run needs " + mib(need.device_bytes) + " of device memory, " +
           mib(dev.free_memory) + " are free on " + dev.name +
           " (make --batch, --dim or --seqlen smaller)";
  const int64_t host_free = host_available_memory();
  if (host_free > 0 && need.host_bytes > host_free)
    return "the run needs " + mib(need.host_bytes) + " of host memory, " + mib(host_free) +
           " are available (make --batch, --dim or --seqlen smaller)";
  return "";
}

// CONV1D_PARSE_ONLY set (and not "0"): stop once the command line was accepted.
bool parse_only_by_environment() {
  const char* v = std::getenv("CONV1D_PARSE_ONLY");
  return v && *v && std::string(v) != "0";
}

void print_run_header(const ChapterSpec& spec, const Options& opt, const DeviceInfo& dev) {
  std::printf("%s: chapter %s - %s\n", spec.exe_name().c_str(), spec.number.c_str(),
              spec.title.c_str());
  std::printf("device: %s\n", dev.describe().c_str());
  std::printf(
      "shape: B=%lld D=%lld L=%lld W=%d, %s, bias %s, silu %s; %d warm-up + %d timed runs, seed "
      "%llu\n",
      static_cast<long long>(opt.batch), static_cast<long long>(opt.dim),
      static_cast<long long>(opt.seqlen), opt.width, dtype_name(opt.dtype), opt.bias ? "on" : "off",
      opt.silu ? "on" : "off", opt.warmup, opt.iters, static_cast<unsigned long long>(opt.seed));
  std::fflush(stdout);
}

}  // namespace

int run_chapter(int argc, char** argv, Chapter& ch) {
  const ChapterSpec& spec = ch.spec();
  const std::string exe = spec.exe_name();
  Frame f;

  // 1. The command line: nothing here touches the GPU, so bad input is refused on any machine.
  const ParseResult parsed = parse_command_line(argc, argv, spec, &f.opt, ch.flags(&f.opt));
  if (parsed.status == ParseStatus::help) {
    std::fputs(parsed.message.c_str(), stdout);
    return 0;
  }
  std::string refused = parsed.status == ParseStatus::error ? parsed.message : ch.check(f.opt);
  if (!refused.empty()) {
    std::fprintf(stderr, "%s: %s\n", exe.c_str(), refused.c_str());
    return 2;
  }
  // CONV1D_PARSE_ONLY=1: the command line is all that was asked about (scripts/docs_commands.py
  // --parse checks every command the pages show this way, on machines without a GPU).
  if (parse_only_by_environment()) {
    std::printf("%s: arguments accepted\n", exe.c_str());
    return 0;
  }

  // 2. A GPU, or exit 77 (CTest's "skipped"; a failure where CONV1D_REQUIRE_GPU asks for a GPU).
  std::string why;
  if (!gpu_available(&why)) {
    std::fprintf(stderr, "%s: no GPU found (%s); nothing to run\n", exe.c_str(), why.c_str());
    return gpu_required_by_environment() ? 1 : kExitNoGpu;
  }

  try {
    f.dev = query_device();
    // 3. Does the run fit? Checked before anything large is allocated.
    MemoryNeed need = ch.memory(f);
    need.device_bytes += frame_device_bytes(f.dev);
    refused = check_memory(need, f.dev);
    if (!refused.empty()) {
      std::fprintf(stderr, "%s: %s\n", exe.c_str(), refused.c_str());
      return 2;
    }

    // 4. The header, the chapter's inputs and references, the ceiling this run is judged against.
    print_run_header(spec, f.opt, f.dev);
    ch.describe(f);
    const int64_t t_ref = host_now_ns();
    const std::string note = ch.make_problem(f);
    std::printf("inputs and fp64 reference: %.2f s on the CPU (%d threads)%s\n",
                (host_now_ns() - t_ref) * 1e-9, host_threads(), note.c_str());
    f.ceiling_gbs = measure_copy_ceiling_gbs(static_cast<size_t>(copy_ceiling_bytes(f.dev)));
    std::printf("copy ceiling (device-to-device, bytes read + written): %.1f GB/s\n",
                f.ceiling_gbs);
    if (!f.opt.save_npy.empty()) {
      std::filesystem::create_directories(f.opt.save_npy);
      ch.save_inputs(f.opt.save_npy);
    }

    // 5. The variants, one after the other, then the chapter's report and the summary.
    L2Flusher flusher;
    const std::vector<MeasuredVariant> variants = ch.variants(f);
    std::vector<VariantResult> results;
    for (const MeasuredVariant& v : variants)
      results.push_back(measure_variant(v, f.opt, flusher, f.ceiling_gbs, variants.size() > 1));
    ch.report(f, results);
    return report_variants(spec, f.opt, f.dev.name, results, f.ceiling_gbs);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", exe.c_str(), e.what());
    return 1;
  }
}

// ---------------------------------------------------------------------------------------------
// Forward chapters of the GEMM formulation, on the frame.

namespace {

class ForwardFrameChapter : public ForwardProblemChapter {
 public:
  explicit ForwardFrameChapter(const FwdChapter& ch) : ForwardProblemChapter(ch.spec), ch_(ch) {}

  std::vector<ExtraFlag> flags(Options*) override { return ch_.extra_flags; }

  MemoryNeed memory(const Frame& f) override {
    MemoryNeed need = ch_.memory(f.opt);
    const int64_t n = f.opt.batch * f.opt.dim * f.opt.seqlen;
    need.host_bytes +=
        n * (2 * dtype_bytes(f.opt.dtype) + 3 * 8);  // x, out; x, ref in fp64 (+ slack)
    return need;
  }

  // Each variant writes its output into a host array of its own, poisoned for verification runs,
  // and is checked against the fp64 reference.
  std::vector<MeasuredVariant> variants(const Frame& f) override {
    const Options& opt = f.opt;
    const std::vector<int64_t> dims{opt.batch, opt.dim, opt.seqlen};
    std::vector<MeasuredVariant> out;
    for (const FwdVariant& v : ch_.variants(opt)) {
      outputs_.push_back(std::make_unique<HostArray>(opt.dtype, problem_.x.size()));
      HostArray* result = outputs_.back().get();
      MeasuredVariant m;
      m.name = v.name;
      m.kernels = v.kernels;
      m.run = [this, v, result](RunContext& ctx) {
        if (ctx.poison_outputs) result->fill_nan();
        v.run(problem_, ctx, *result);
      };
      m.check = [this, result, dims] {
        const VerifyReport r =
            verify("out", *result, problem_.ref, default_tolerance(problem_.opt.dtype), dims);
        return CheckResult{r.ok(), r.summary() + "\n" + r.details()};
      };
      m.save_npy = [name = v.name, result, dims](const std::string& dir) {
        const std::string path = dir + "/out_" + name + ".npy";
        write_npy(path, *result, dims);
        std::printf("  wrote %s\n", path.c_str());
      };
      out.push_back(std::move(m));
    }
    return out;
  }

 private:
  const FwdChapter& ch_;
  std::vector<std::unique_ptr<HostArray>> outputs_;
};

}  // namespace

std::string ForwardProblemChapter::make_problem(const Frame& f) {
  problem_ = make_forward_problem(f.opt);
  return "";
}

void ForwardProblemChapter::save_inputs(const std::string&) { save_forward_inputs(problem_); }

int run_forward_chapter(int argc, char** argv, const FwdChapter& chapter) {
  ForwardFrameChapter ch(chapter);
  return run_chapter(argc, argv, ch);
}

}  // namespace conv1d
