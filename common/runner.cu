#include "common/runner.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "common/device.h"
#include "common/npy.h"
#include "common/reference.h"
#include "common/timing.h"
#include "common/verify.h"

namespace conv1d {

int handle_command_line(int argc, char** argv, const ChapterSpec& spec, Options* opt,
                        const std::vector<ExtraFlag>& extra) {
  const ParseResult r = parse_command_line(argc, argv, spec, opt, extra);
  if (r.status == ParseStatus::help) {
    std::fputs(r.message.c_str(), stdout);
    return 0;
  }
  if (r.status == ParseStatus::error) {
    std::fprintf(stderr, "%s: %s\n", spec.exe_name().c_str(), r.message.c_str());
    return 2;
  }
  return -1;
}

int handle_missing_gpu(const ChapterSpec& spec) {
  std::string why;
  if (gpu_available(&why)) return -1;
  std::fprintf(stderr, "%s: no GPU found (%s); nothing to run\n", spec.exe_name().c_str(), why.c_str());
  return gpu_required_by_environment() ? 1 : kExitNoGpu;
}

std::string check_memory(const MemoryNeed& need) {
  auto gib = [](int64_t b) { return std::to_string(b / (1 << 20)) + " MiB"; };
  const DeviceInfo dev = query_device();
  // Keep a margin for the runtime's own allocations.
  if (need.device_bytes > dev.free_memory - (int64_t(256) << 20))
    return "the run needs " + gib(need.device_bytes) + " of device memory, " + gib(dev.free_memory) +
           " are free on " + dev.name + " (make --batch, --dim or --seqlen smaller)";
  const int64_t host_free = host_available_memory();
  if (host_free > 0 && need.host_bytes > host_free)
    return "the run needs " + gib(need.host_bytes) + " of host memory, " + gib(host_free) +
           " are available (make --batch, --dim or --seqlen smaller)";
  return "";
}

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

// Appends rows to a tab-separated file, writing the header first when the file is new.
void append_rows(const std::string& path, const std::string& header, const std::vector<std::string>& rows) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent);
  const bool fresh = !std::filesystem::exists(path) || std::filesystem::file_size(path) == 0;
  std::ofstream f(path, std::ios::app);
  if (fresh) f << header << "\n";
  for (const std::string& r : rows) f << r << "\n";
  if (!f) throw std::runtime_error("cannot append to " + path);
}

FwdProblem make_forward_problem(const Options& opt) {
  FwdProblem p;
  p.opt = opt;
  p.shape = ConvShape{opt.batch, opt.dim, opt.seqlen, opt.width};
  const size_t n = static_cast<size_t>(p.shape.elements());
  RandomInputs in = draw_inputs(opt);
  p.x = std::move(in.x);
  p.weight = std::move(in.weight);
  p.bias = std::move(in.bias);
  const std::vector<double> x = p.x.to_double(), w = p.weight.to_double(), bias = p.bias.to_double();
  RefProblem rp;
  rp.shape = p.shape;
  rp.layout = Layout::channel_first;
  rp.x = x.data();
  rp.weight = w.data();
  rp.bias = opt.bias ? bias.data() : nullptr;
  rp.silu = opt.silu;
  p.ref.resize(n);
  reference_forward(rp, p.ref.data());
  return p;
}

namespace {

std::string shape_string(const Options& o) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "B=%lld D=%lld L=%lld W=%d %s%s%s", static_cast<long long>(o.batch),
                static_cast<long long>(o.dim), static_cast<long long>(o.seqlen), o.width, dtype_name(o.dtype),
                o.bias ? " bias" : "", o.silu ? " silu" : "");
  return buf;
}

void ensure_parent_dir(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent);
}

double record_ms(const PhaseRecorder& rec, int iteration, const std::string& name) {
  int64_t ns = 0;
  for (const PhaseRecord& r : rec.records())
    if (r.iteration == iteration && r.name == name) ns += r.duration_ns();
  return ns * 1e-6;
}

// A forward variant in the generic measuring loop: `out` is poisoned on the host for verification
// runs and compared with the fp64 reference.
VariantResult run_variant(const FwdVariant& v, const FwdProblem& p, L2Flusher& flusher,
                          double ceiling_gbs, bool several) {
  const Options& opt = p.opt;
  const std::vector<int64_t> dims{opt.batch, opt.dim, opt.seqlen};
  HostArray out(opt.dtype, p.x.size());
  MeasuredVariant m;
  m.name = v.name;
  m.kernels = v.kernels;
  m.run = [&](RunContext& ctx) {
    if (ctx.poison_outputs) out.fill_nan();
    v.run(p, ctx, out);
  };
  m.check = [&] {
    const VerifyReport r = verify("out", out, p.ref, default_tolerance(opt.dtype), dims);
    return CheckResult{r.ok(), r.summary() + "\n" + r.details()};
  };
  m.save_npy = [&](const std::string& dir) {
    const std::string path = dir + "/out_" + v.name + ".npy";
    write_npy(path, out, dims);
    std::printf("  wrote %s\n", path.c_str());
  };
  return measure_variant(m, opt, flusher, ceiling_gbs, several);
}


std::string kernels_path(const std::string& summary) {
  std::string k = summary;
  if (k.size() > 4 && k.compare(k.size() - 4, 4, ".tsv") == 0) k.resize(k.size() - 4);
  return k + "_kernels.tsv";
}

// One row per reported kernel of each variant, to the kernels file next to the summary.
void write_kernel_rows(const std::string& summary, const ChapterSpec& spec, const std::vector<VariantResult>& results,
                       const std::string& device, const std::string& shape, double ceiling) {
  std::vector<std::string> rows;
  char buf[512];
  for (const VariantResult& r : results)
    for (const KernelResult& k : r.kernels) {
      std::snprintf(buf, sizeof buf, "%s\t%s\t%s\t%s\t%.4f\t%.4f\t%.1f\t%.1f\t%.1f\t%s\t%s", spec.number.c_str(),
                    spec.name.c_str(), r.name.c_str(), k.kernel.c_str(), k.ms, k.tflops, k.gbs, 100.0 * k.gbs / ceiling,
                    ceiling, device.c_str(), shape.c_str());
      rows.push_back(buf);
    }
  append_rows(kernels_path(summary),
              "chapter\tname\tvariant\tkernel\tms\ttflops\tgbs\tceiling_pct\tcopy_ceiling_gbs\tdevice\tshape", rows);
}

void write_summary(const std::string& path, const ChapterSpec& spec, const std::vector<VariantResult>& results,
                   const std::string& device, const std::string& shape, double ceiling) {
  std::vector<std::string> rows;
  char buf[512];
  for (const VariantResult& r : results) {
    std::snprintf(buf, sizeof buf, "%s\t%s\t%s\t%.4f\t%.4f\t%s\t%s\t%s", spec.number.c_str(), spec.name.c_str(),
                  r.name.c_str(), r.e2e_ms.median, r.device_ms.median, r.verified ? "yes" : "no", device.c_str(),
                  shape.c_str());
    rows.push_back(buf);
  }
  append_rows(path, "chapter\tname\tvariant\tend_to_end_ms\tkernels_ms\tverified\tdevice\tshape", rows);
  write_kernel_rows(path, spec, results, device, shape, ceiling);
}

}  // namespace

VariantResult measure_variant(const MeasuredVariant& v, const Options& opt, L2Flusher& flusher, double ceiling_gbs,
                              bool several) {
  VariantResult res;
  res.name = v.name;
  std::printf("\n== variant %s ==\n", v.name.c_str());

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
    for (size_t k = 0; k < v.kernels.size(); ++k) per_kernel[k].push_back(record_ms(rec, i, v.kernels[k].kernel));
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
  std::printf("  end-to-end: median %.3f ms (min %.3f, max %.3f); kernels: median %.3f ms\n", res.e2e_ms.median,
              res.e2e_ms.min, res.e2e_ms.max, res.device_ms.median);
  for (size_t k = 0; k < v.kernels.size(); ++k) {
    const KernelModel& m = v.kernels[k];
    KernelResult kr;
    kr.kernel = m.kernel;
    kr.ms = summarize(per_kernel[k]).median;
    if (kr.ms > 0) {
      kr.tflops = m.flops / (kr.ms * 1e-3) / 1e12;
      kr.gbs = m.bytes / (kr.ms * 1e-3) / 1e9;
    }
    std::printf("  %s %s: %.3f ms per run, %.3f TFLOP/s, %.1f GB/s = %.1f%% of the copy ceiling\n",
                k == 0 ? "main kernel" : "kernel", m.kernel.c_str(), kr.ms, kr.tflops, kr.gbs,
                100.0 * kr.gbs / ceiling_gbs);
    res.kernels.push_back(kr);
  }
  std::printf("  after timing: %s", again.text.c_str());

  if (!opt.profile_csv.empty()) {
    const std::string prefix = opt.profile_csv + (several ? "_" + v.name : "");
    ensure_parent_dir(prefix + "_stats.csv");
    write_stats_csv(prefix + "_stats.csv", stats);
    write_trace_csv(prefix + "_trace.csv", rec.records());
    std::printf("  wrote %s_stats.csv and %s_trace.csv\n", prefix.c_str(), prefix.c_str());
  }
  if (!opt.save_npy.empty() && v.save_npy) v.save_npy(opt.save_npy);
  return res;
}

int report_variants(const ChapterSpec& spec, const Options& opt, const std::string& device,
                    const std::vector<VariantResult>& results, double ceiling_gbs) {
  std::printf("\nsummary (%s, B=%lld D=%lld L=%lld W=%d %s):\n", device.c_str(), static_cast<long long>(opt.batch),
              static_cast<long long>(opt.dim), static_cast<long long>(opt.seqlen), opt.width, dtype_name(opt.dtype));
  std::printf("  %-12s %12s %12s %10s %10s %9s\n", "variant", "end-to-end", "kernels", "TFLOP/s", "GB/s",
              "verified");
  bool all_ok = true;
  for (const VariantResult& r : results) {
    const KernelResult main_k = r.kernels.empty() ? KernelResult{} : r.kernels.front();
    std::printf("  %-12s %9.3f ms %9.3f ms %10.3f %10.1f %9s\n", r.name.c_str(), r.e2e_ms.median,
                r.device_ms.median, main_k.tflops, main_k.gbs, r.verified ? "yes" : "NO");
    all_ok &= r.verified;
  }
  if (!opt.summary.empty()) write_summary(opt.summary, spec, results, device, shape_string(opt), ceiling_gbs);
  std::printf("%s\n", all_ok ? "VERIFIED" : "VERIFICATION FAILED");
  return all_ok ? 0 : 1;
}

int64_t copy_ceiling_bytes(const DeviceInfo& dev) { return std::min<int64_t>(int64_t(256) << 20, dev.free_memory / 8); }

int64_t frame_device_bytes(const DeviceInfo& dev) { return 2 * dev.l2_bytes + 2 * copy_ceiling_bytes(dev); }

void print_run_header(const ChapterSpec& spec, const Options& opt, const DeviceInfo& dev) {
  std::printf("%s: chapter %s - %s\n", spec.exe_name().c_str(), spec.number.c_str(), spec.title.c_str());
  std::printf("device: %s\n", dev.describe().c_str());
  std::printf("shape: B=%lld D=%lld L=%lld W=%d, %s, bias %s, silu %s; %d warm-up + %d timed runs, seed %llu\n",
              static_cast<long long>(opt.batch), static_cast<long long>(opt.dim), static_cast<long long>(opt.seqlen),
              opt.width, dtype_name(opt.dtype), opt.bias ? "on" : "off", opt.silu ? "on" : "off", opt.warmup,
              opt.iters, static_cast<unsigned long long>(opt.seed));
  std::fflush(stdout);
}

int run_reporting_errors(const ChapterSpec& spec, const std::function<int()>& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", spec.exe_name().c_str(), e.what());
    return 1;
  }
}

double report_copy_ceiling(const DeviceInfo& dev) {
  const double ceiling = measure_copy_ceiling_gbs(static_cast<size_t>(copy_ceiling_bytes(dev)));
  std::printf("copy ceiling (device-to-device, bytes read + written): %.1f GB/s\n", ceiling);
  return ceiling;
}

void save_forward_inputs(const FwdProblem& p) {
  const Options& opt = p.opt;
  if (opt.save_npy.empty()) return;
  std::filesystem::create_directories(opt.save_npy);
  write_npy(opt.save_npy + "/x.npy", p.x, {opt.batch, opt.dim, opt.seqlen});
  write_npy(opt.save_npy + "/weight.npy", p.weight, {opt.dim, opt.width});
  if (opt.bias) write_npy(opt.save_npy + "/bias.npy", p.bias, {opt.dim});
  write_npy(opt.save_npy + "/reference.npy", p.ref, {opt.batch, opt.dim, opt.seqlen});
  std::printf("wrote x, weight%s and reference .npy files to %s\n", opt.bias ? ", bias" : "", opt.save_npy.c_str());
}

int run_forward_chapter(int argc, char** argv, const FwdChapter& ch) {
  Options opt;
  int rc = handle_command_line(argc, argv, ch.spec, &opt, ch.extra_flags);
  if (rc >= 0) return rc;
  rc = handle_missing_gpu(ch.spec);
  if (rc >= 0) return rc;
  const std::string exe = ch.spec.exe_name();
  try {
    const DeviceInfo dev = query_device();
    MemoryNeed need = ch.memory(opt);
    const int64_t n = opt.batch * opt.dim * opt.seqlen;
    need.device_bytes += frame_device_bytes(dev);
    need.host_bytes += n * (2 * dtype_bytes(opt.dtype) + 3 * 8);  // x, out; x, ref in fp64 (+ slack)
    const std::string err = check_memory(need);
    if (!err.empty()) {
      std::fprintf(stderr, "%s: %s\n", exe.c_str(), err.c_str());
      return 2;
    }

    print_run_header(ch.spec, opt, dev);

    const int64_t t_ref = host_now_ns();
    const FwdProblem p = make_forward_problem(opt);
    std::printf("inputs and fp64 reference: %.2f s on the CPU\n", (host_now_ns() - t_ref) * 1e-9);
    const double ceiling = report_copy_ceiling(dev);

    save_forward_inputs(p);

    L2Flusher flusher;
    const std::vector<FwdVariant> variants = ch.variants(opt);
    std::vector<VariantResult> results;
    for (const FwdVariant& v : variants)
      results.push_back(run_variant(v, p, flusher, ceiling, variants.size() > 1));
    return report_variants(ch.spec, opt, dev.name, results, ceiling);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", exe.c_str(), e.what());
    return 1;
  }
}

}  // namespace conv1d
