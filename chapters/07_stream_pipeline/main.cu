// Chapter 07 - the forward pass as a pipeline of chunks on several streams. See docs/07_stream_pipeline.md.
//
// This chapter runs its own main (built from the frame's pieces, like chapter 06) because it owns
// what the generic frame does not: the host tensors live in pinned memory (or pageable, to compare),
// the pinned copy bandwidth is measured before the variants, and after each variant the chapter
// reads its stage records back as a per-stream timeline, an overlap efficiency and a lower bound.
//
// What a timed run covers: from x [B, D, L] in host memory to out [B, D, L] in host memory (both in
// the memory kind of --host-memory), weights uploaded and expanded, every chunk copied in, computed
// and copied out. Outside it: the one-time copy of the frame's input into that memory, the first
// run's allocations and graph capture (recorded in the verification run), the L2 flush.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include "chapters/07_stream_pipeline/pipeline.cuh"
#include "common/device.h"
#include "common/npy.h"
#include "common/verify.h"

namespace conv1d::ch07 {
namespace {

struct Flags {
  int64_t streams = 4;
  int64_t chunks = 0;  // per batch row along L; 0 = enough for 8 chunks in all
  std::string variant = "all";
  std::string host_memory = "pinned";
  std::string timeline;  // TSV file for the stage timeline ("" = only printed)
};

ChapterSpec chapter_spec() {
  ChapterSpec spec{"07", "stream_pipeline",
                   "chunks on several streams: copies overlap compute, no host transposes, no "
                   "allocation per run"};
  spec.dtypes = {Dtype::fp16};
  spec.defaults.dtype = Dtype::fp16;
  spec.bias = spec.silu = true;
  return spec;
}

std::vector<ExtraFlag> chapter_flags(Flags* f) {
  std::vector<ExtraFlag> v;
  v.push_back(
      int_flag("--streams", &f->streams, 1, 64, "streams the chunks are spread over (default 4)"));
  v.push_back(int_flag(
      "--chunks", &f->chunks, 0, Limits::max_seqlen,
      "chunks per batch row along the sequence (default 0: enough for at least 8 chunks)"));
  v.push_back(choice_flag("--variant", &f->variant, {"all", "pipelined", "serial", "graph"},
                          "all (default; pipelined is the headline), pipelined, serial or graph"));
  v.push_back(choice_flag("--host-memory", &f->host_memory, {"pinned", "pageable"},
                          "where x and out live on the host (default pinned; graph needs pinned)"));
  v.push_back(ExtraFlag{
      "--timeline", "append the stage timeline of the pipelined and serial runs to this TSV file",
      true, [f](const std::string& s) {
        f->timeline = s;
        return s.empty() ? std::string("--timeline needs a file name") : std::string();
      }});
  return v;
}

// ---------------------------------------------------------------------------------------------
// The pinned copy bandwidth of this machine, measured in this run: the bound's denominator.

struct CopyRates {
  double h2d_gbs = 0, d2h_gbs = 0;
  double both_gbs = 0;  // H2D and D2H at the same time, bytes of both per second
};

int64_t bandwidth_bytes(const DeviceInfo& dev) {
  return std::min<int64_t>(int64_t(256) << 20, dev.free_memory / 8);
}

CopyRates measure_pinned_rates(size_t bytes) {
  PinnedBuffer host(bytes);
  DeviceBuffer dev(bytes);
  std::memset(host.get(), 0, bytes);
  auto rate = [&](cudaMemcpyKind kind) {
    void* dst = kind == cudaMemcpyHostToDevice ? dev.get() : host.get();
    const void* src = kind == cudaMemcpyHostToDevice ? host.get() : dev.get();
    GPU_CHECK(cudaMemcpy(dst, src, bytes, kind));  // warm-up: mappings, clocks
    EventPair ev;
    ev.start();
    GPU_CHECK(cudaMemcpyAsync(dst, src, bytes, kind, 0));
    ev.stop();
    return bytes / (ev.elapsed_ms() * 1e-3) / 1e9;
  };
  CopyRates r{rate(cudaMemcpyHostToDevice), rate(cudaMemcpyDeviceToHost)};
  // Both directions at once, on two streams, as the pipeline uses them: whether the link carries
  // the two full rates together decides how close a pipeline can get to max(H2D, D2H).
  PinnedBuffer host2(bytes);
  DeviceBuffer dev2(bytes);
  std::memset(host2.get(), 0, bytes);
  GPU_CHECK(
      cudaMemset(dev2.get(), 0, bytes));  // copied out below: written first, as initcheck expects
  cudaStream_t up = nullptr, down = nullptr;
  GPU_CHECK(cudaStreamCreateWithFlags(&up, cudaStreamNonBlocking));
  GPU_CHECK(cudaStreamCreateWithFlags(&down, cudaStreamNonBlocking));
  EventPair both, join;
  both.start(up);
  GPU_CHECK(cudaStreamWaitEvent(down, both.start_event(), 0));
  GPU_CHECK(cudaMemcpyAsync(dev.get(), host.get(), bytes, cudaMemcpyHostToDevice, up));
  GPU_CHECK(cudaMemcpyAsync(host2.get(), dev2.get(), bytes, cudaMemcpyDeviceToHost, down));
  join.stop(down);
  GPU_CHECK(cudaStreamWaitEvent(up, join.stop_event(), 0));
  both.stop(up);
  r.both_gbs = 2.0 * bytes / (both.elapsed_ms() * 1e-3) / 1e9;
  GPU_CHECK(cudaStreamDestroy(up));
  GPU_CHECK(cudaStreamDestroy(down));
  return r;
}

// ---------------------------------------------------------------------------------------------
// A variant, and what it leaves behind for the report: the records of each timed run.

struct VariantState {
  std::string kind;  // pipelined, serial, graph
  std::string name;  // kind, with "-pageable" appended in pageable runs
  std::unique_ptr<Pipeline> pipe;
  std::vector<std::vector<PhaseRecord>> runs;  // timed runs, in order
  HostArray out;                               // the last run's output, for the check
};

// The recorder resolves a run's device times when the run ends, so a run's records are complete
// when the next run starts: collected then (timed iterations are 1..iters).
void collect_previous_run(const PhaseRecorder& rec, int iters, VariantState& st) {
  const std::vector<PhaseRecord>& all = rec.records();
  if (all.empty()) return;
  const int it = all.back().iteration;
  if (it < 1 || it > iters || static_cast<int>(st.runs.size()) >= it) return;
  std::vector<PhaseRecord> run;
  for (const PhaseRecord& r : all)
    if (r.iteration == it) run.push_back(r);
  st.runs.push_back(std::move(run));
}

MeasuredVariant make_variant(const FwdProblem& p, HostData& h, VariantState& st) {
  MeasuredVariant m;
  m.name = st.name;
  if (st.kind != "graph") {
    const Options& o = p.opt;
    const double rows = double(o.batch) * o.seqlen;
    m.kernels = {ch05::sparse_model(o),
                 {"img2col_channel_first", 0, 2.0 * (rows * o.dim + rows * o.width * o.dim)},
                 {"time_to_channel_first", 0, 2.0 * 2.0 * rows * o.dim}};
  }
  const bool graph = st.kind == "graph";
  m.run = [&p, &h, &st, graph](RunContext& ctx) {
    collect_previous_run(ctx.rec, p.opt.iters, st);
    if (ctx.poison_outputs) std::memset(h.io.out, 0xFF, h.out_bytes);  // fp16 NaN in every element
    st.pipe->run(h.io, ctx.rec, ctx.poison_outputs, graph);
  };
  m.check = [&p, &h, &st] {
    st.out = HostArray(Dtype::fp16, p.x.size());
    std::memcpy(st.out.data(), h.io.out, h.out_bytes);
    const VerifyReport r = verify("out", st.out, p.ref, default_tolerance(Dtype::fp16),
                                  {p.opt.batch, p.opt.dim, p.opt.seqlen});
    return CheckResult{r.ok(), r.summary() + "\n" + r.details()};
  };
  m.save_npy = [&p, &st](const std::string& dir) {
    const std::string path = dir + "/out_" + st.name + ".npy";
    write_npy(path, st.out, {p.opt.batch, p.opt.dim, p.opt.seqlen});
    std::printf("  wrote %s\n", path.c_str());
  };
  return m;
}

// ---------------------------------------------------------------------------------------------
// The report: timeline, overlap efficiency, lower bound.

struct TimelineRow {
  int stream;
  std::string chunk, stage;
  double start_us, end_us;
};

// One run's records as rows relative to the run's first record; chunk numbers follow from the
// order the stages were enqueued in (each chunk enqueues each stage once, chunks in order).
std::vector<TimelineRow> timeline(const std::vector<PhaseRecord>& run) {
  std::vector<TimelineRow> rows;
  if (run.empty()) return rows;
  int64_t t0 = run.front().start_ns;
  for (const PhaseRecord& r : run) t0 = std::min(t0, r.start_ns);
  std::map<std::string, int> seen;
  const auto& stages = chunk_stages();
  for (const PhaseRecord& r : run) {
    if (r.category == Category::alloc || r.category == Category::host) continue;
    const bool per_chunk = std::find(stages.begin(), stages.end(), r.name) != stages.end();
    rows.push_back({r.stream, per_chunk ? std::to_string(seen[r.name]++) : "-", r.name,
                    (r.start_ns - t0) * 1e-3, (r.end_ns - t0) * 1e-3});
  }
  std::stable_sort(rows.begin(), rows.end(), [](const TimelineRow& a, const TimelineRow& b) {
    return a.start_us < b.start_us;
  });
  return rows;
}

double median_of(const std::vector<std::vector<PhaseRecord>>& runs,
                 bool (*keep)(const PhaseRecord&)) {
  std::vector<double> v;
  for (const auto& run : runs) {
    int64_t ns = 0;
    for (const PhaseRecord& r : run)
      if (keep(r)) ns += r.duration_ns();
    v.push_back(ns * 1e-6);
  }
  return v.empty() ? 0.0 : summarize(v).median;
}
bool is_stage(const PhaseRecord& r) {
  return r.category != Category::alloc && r.category != Category::host;
}
bool is_kernel(const PhaseRecord& r) { return r.category == Category::kernel; }

// Bytes one run moves each way: every chunk with its halo in, the weights; the output out.
struct RunBytes {
  double h2d = 0, d2h = 0;
};
RunBytes run_bytes(const Options& o, const ChunkPlan& plan) {
  RunBytes b;
  for (const Chunk& c : plan.chunks)
    b.h2d += 2.0 * o.dim * (c.t1 - c.t0 + std::min<int64_t>(o.width - 1, c.t0));
  b.h2d += 2.0 * o.dim * (o.width + (o.bias ? 1 : 0));
  b.d2h = 2.0 * o.batch * o.dim * o.seqlen;
  return b;
}

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// The chapter on the frame (common/runner.h).
class PipelineChapter : public ForwardProblemChapter {
 public:
  PipelineChapter() : ForwardProblemChapter(chapter_spec()) {}

  std::vector<ExtraFlag> flags(Options*) override { return chapter_flags(&flags_); }

  std::string check(const Options&) override {
    if (flags_.variant == "graph" && !pinned())
      return "--variant graph needs --host-memory pinned (a graph cannot copy pageable memory)";
    return "";
  }

  MemoryNeed memory(const Frame& f) override {
    const Options& opt = f.opt;
    const ConvShape shape{opt.batch, opt.dim, opt.seqlen, opt.width};
    for (const char* kind : {"pipelined", "serial", "graph"}) {
      if (flags_.variant != "all" && flags_.variant != kind) continue;
      if (std::string(kind) == "graph" && !pinned()) {
        std::printf(
            "graph: skipped with --host-memory pageable (a graph cannot copy pageable memory)\n");
        continue;
      }
      auto st = std::make_unique<VariantState>();
      st->kind = kind;
      st->name = std::string(kind) + (pinned() ? "" : "-pageable");
      states_.push_back(std::move(st));
    }
    MemoryNeed need;
    for (const auto& st : states_)
      need.device_bytes += Pipeline::device_bytes(shape, streams_of(*st), flags_.chunks);
    need.device_bytes += bandwidth_bytes(f.dev);
    // x and out (frame's, chapter's, one per variant for the check) in fp16; x and the reference in
    // fp64 (+ slack); the pinned buffer of the bandwidth measurement.
    need.host_bytes =
        shape.elements() * (int64_t(4 + states_.size()) * 2 + 3 * 8) + bandwidth_bytes(f.dev);
    return need;
  }

  std::vector<MeasuredVariant> variants(const Frame& f) override {
    const Options& opt = f.opt;
    rates_ = measure_pinned_rates(static_cast<size_t>(bandwidth_bytes(f.dev)));
    std::printf(
        "pinned copies (%lld MiB, one each way): H2D %.1f GB/s, D2H %.1f GB/s; both at once %.1f "
        "GB/s in all\n",
        static_cast<long long>(bandwidth_bytes(f.dev) >> 20), rates_.h2d_gbs, rates_.d2h_gbs,
        rates_.both_gbs);
    host_ = host_data(problem_, pinned());
    std::printf("host memory: %s (x and out); weights and bias pinned\n",
                flags_.host_memory.c_str());
    const ConvShape shape{opt.batch, opt.dim, opt.seqlen, opt.width};
    std::vector<MeasuredVariant> vs;
    for (const auto& st : states_) {
      st->pipe = std::make_unique<Pipeline>(shape, opt.silu, streams_of(*st), flags_.chunks);
      const ChunkPlan& plan = st->pipe->plan();
      MeasuredVariant m = make_variant(problem_, *host_, *st);
      m.intro = std::to_string(plan.chunks.size()) + " chunks (" + std::to_string(plan.per_row) +
                " per batch row of up to " + std::to_string(plan.len) + " positions) on " +
                std::to_string(plan.streams) + " stream(s)";
      vs.push_back(std::move(m));
    }
    return vs;
  }

  void report(const Frame& f, std::vector<VariantResult>& results) override {
    const Options& opt = f.opt;
    const CopyRates& rates = rates_;
    const std::vector<std::unique_ptr<VariantState>>& states = states_;
    // The lower bound of a run: the busiest of the H2D engine, the D2H engine and the SMs, each
    // working alone at its measured rate.
    const ChunkPlan& plan0 = states.front()->pipe->plan();
    const RunBytes bytes = run_bytes(opt, plan0);
    double compute_ms = 0;
    for (const auto& st : states)
      if (st->kind != "graph" && compute_ms == 0) compute_ms = median_of(st->runs, is_kernel);
    const double h2d_ms = bytes.h2d / (rates.h2d_gbs * 1e9) * 1e3,
                 d2h_ms = bytes.d2h / (rates.d2h_gbs * 1e9) * 1e3;
    const double bound_ms = std::max({h2d_ms, d2h_ms, compute_ms});
    std::printf(
        "\nlower bound of a run: max(H2D %.3f ms, D2H %.3f ms, kernels %.3f ms) = %.3f ms "
        "(%.1f MB in, %.1f MB out at the pinned rates above)\n",
        h2d_ms, d2h_ms, compute_ms, bound_ms, bytes.h2d * 1e-6, bytes.d2h * 1e-6);
    // The same bound when the two directions share the link at the rate measured for both at once.
    const double both_ms = (bytes.h2d + bytes.d2h) / (rates.both_gbs * 1e9) * 1e3;
    const double shared_bound_ms = std::max(bound_ms, both_ms);
    std::printf(
        "  with both directions at once at %.1f GB/s in all: %.3f ms for the copies, bound %.3f "
        "ms\n",
        rates.both_gbs, both_ms, shared_bound_ms);
    double serial_ms = 0;
    for (size_t i = 0; i < states.size(); ++i)
      if (states[i]->kind == "serial") serial_ms = results[i].e2e_ms.median;
    std::printf("  %-20s %8s %12s %12s %11s %11s %10s\n", "variant", "streams", "wall ms",
                "stages ms", "overlap", "wall/bound", "vs serial");
    std::vector<std::string> metric_rows, timeline_rows;
    const std::string shape_text = shape_string(opt);
    for (size_t i = 0; i < states.size(); ++i) {
      const VariantState& st = *states[i];
      const double wall = results[i].e2e_ms.median;
      const bool separable = st.kind != "graph";
      const double stages = separable ? median_of(st.runs, is_stage) : 0.0;
      const double overlap = separable && wall > 0 ? stages / wall : 0.0;
      const double speedup = serial_ms > 0 && wall > 0 ? serial_ms / wall : 0.0;
      std::printf("  %-20s %8d %12.3f %12s %11s %11.2f %10s\n", st.name.c_str(),
                  st.pipe->plan().streams, wall, separable ? fmt("%.3f", stages).c_str() : "n/a",
                  separable ? fmt("%.2f", overlap).c_str() : "n/a",
                  bound_ms > 0 ? wall / bound_ms : 0.0,
                  speedup > 0 ? fmt("%.2fx", speedup).c_str() : "-");
      metric_rows.push_back(
          st.name + "\t" + flags_.host_memory + "\t" + std::to_string(st.pipe->plan().streams) +
          "\t" + std::to_string(st.pipe->plan().chunks.size()) + "\t" + fmt("%.4f", wall) + "\t" +
          (separable ? fmt("%.4f", stages) : "") + "\t" + (separable ? fmt("%.3f", overlap) : "") +
          "\t" + fmt("%.4f", h2d_ms) + "\t" + fmt("%.4f", d2h_ms) + "\t" + fmt("%.4f", compute_ms) +
          "\t" + fmt("%.4f", bound_ms) + "\t" + fmt("%.3f", wall / bound_ms) + "\t" +
          (speedup > 0 ? fmt("%.3f", speedup) : "") + "\t" + fmt("%.2f", rates.h2d_gbs) + "\t" +
          fmt("%.2f", rates.d2h_gbs) + "\t" + fmt("%.2f", rates.both_gbs) + "\t" +
          fmt("%.4f", shared_bound_ms) + "\t" + fmt("%.3f", wall / shared_bound_ms) + "\t" +
          f.dev.name + "\t" + shape_text);
      if (!separable || st.runs.empty()) continue;
      const std::vector<TimelineRow> rows = timeline(st.runs.back());
      for (const TimelineRow& r : rows)
        timeline_rows.push_back(st.name + "\t" + std::to_string(r.stream) + "\t" + r.chunk + "\t" +
                                r.stage + "\t" + fmt("%.1f", r.start_us) + "\t" +
                                fmt("%.1f", r.end_us));
      if (st.kind != "pipelined") continue;
      std::printf("\ntimeline of the last timed %s run (device times, us from its first stage):\n",
                  st.name.c_str());
      std::printf("  %6s %6s %-24s %10s %10s\n", "stream", "chunk", "stage", "start", "end");
      for (const TimelineRow& r : rows)
        std::printf("  %6d %6s %-24s %10.1f %10.1f\n", r.stream, r.chunk.c_str(), r.stage.c_str(),
                    r.start_us, r.end_us);
    }
    if (!opt.summary.empty()) {
      append_rows(tsv_stem(opt.summary) + "_pipeline.tsv",
                  "variant\thost_memory\tstreams\tchunks\twall_ms\tstages_ms\toverlap\th2d_bound_"
                  "ms\td2h_bound_ms\t"
                  "compute_ms\tbound_ms\twall_over_bound\tspeedup_vs_serial\tpinned_h2d_"
                  "gbs\tpinned_d2h_gbs\t"
                  "both_ways_gbs\tshared_bound_ms\twall_over_shared_bound\tdevice\tshape",
                  metric_rows);
    }
    if (!flags_.timeline.empty())
      append_rows(flags_.timeline, "variant\tstream\tchunk\tstage\tstart_us\tend_us",
                  timeline_rows);
  }

 private:
  bool pinned() const { return flags_.host_memory == "pinned"; }
  int streams_of(const VariantState& st) const {
    return st.kind == "serial" ? 1 : static_cast<int>(flags_.streams);
  }

  Flags flags_;
  std::vector<std::unique_ptr<VariantState>> states_;
  CopyRates rates_;
  std::unique_ptr<HostData> host_;
};

}  // namespace
}  // namespace conv1d::ch07

int main(int argc, char** argv) {
  conv1d::ch07::PipelineChapter chapter;
  return conv1d::run_chapter(argc, argv, chapter);
}
