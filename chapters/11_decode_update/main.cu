// Chapter 11 - the decoding update. See docs/11_decode_update.md.
//
// A model that generates text runs the convolution on T = 1 new token per sequence per step (a
// few more with speculative decoding), against a cache that holds each sequence's last S >= W-1
// inputs: conv_state [C, D, S]. One step of a batch of B sequences moves a few MB at most, and a
// GPU moves that in a microsecond or two; launching a kernel costs about as much. So a decoding
// step is latency-bound work, and the chapter measures two things about it:
//
//   the kernel    one trip to memory for the row index, one for everything else: a thread per
//                 (batch row, 16 bytes of channels) with all its loads in flight at once
//                 (update_vector.cuh), or per (row, channel) for any S and D (update_channel.cuh)
//   the launches  a loop of N steps launched one by one, and the same loop captured once into a
//                 CUDA graph and replayed with one call (loop.cuh): what the graph takes away is
//                 the host's launch work between steps
//
// Two cache layouts (--buffer): linear (oldest first; a step shifts every entry) and circular
// (position p at index p % S, positions from cache_seqlens; a step writes its T inputs and moves
// nothing). With --gather, batch row b works on cache row conv_state_indices[b] of a larger cache,
// a negative index marking a padding row: outputs 0, no cache row touched.
//
// The proof of the arithmetic: a loop of N steps over N*T tokens per row is verified against the
// fp64 forward over the same tokens, starting from the cache's state (common/reference.h), and its
// final cache against the last inputs exactly. The kernels compute each output with chapter 08's
// multiply-adds in chapter 08's order, so a loop also equals chapter 10's GPU forward bit for bit
// (tests/test_ch11_decode.cu); here, the variants equal each other bit for bit.
//
// A run times whole loops (device events around the N steps, the L2 flushed before each loop),
// restores the cache after each loop outside the timed region, and reports the time per step.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "chapters/04_bias_epilogue/epilogue.cuh"
#include "chapters/11_decode_update/decode.h"
#include "chapters/11_decode_update/loop.cuh"
#include "common/npy.h"
#include "common/runner.h"
#include "common/verify.h"

namespace conv1d::ch11 {
namespace {

ChapterSpec chapter_spec() {
  ChapterSpec s{"11", "decode_update",
                "the decoding update: a few new tokens against a state cache, from a CUDA graph"};
  s.dtypes = {Dtype::fp32, Dtype::fp16, Dtype::bf16};
  s.bias = s.silu = true;
  s.defaults.batch = 64;
  s.defaults.dim = 4096;
  s.defaults.seqlen = 1;
  s.defaults.dtype = Dtype::bf16;
  return s;
}

// One measured variant: a buffer layout, launched one way.
struct Plan {
  Buffer buffer;
  bool graph;
  std::string name() const {
    return std::string(buffer_name(buffer)) + (graph ? "_graph" : "_direct");
  }
  const char* record() const {
    return graph ? "decode loop (graph replay)" : "decode loop (direct launches)";
  }
};

class DecodeChapter : public Chapter {
 public:
  DecodeChapter() : Chapter(chapter_spec()) {}

  std::vector<ExtraFlag> flags(Options*) override {
    return {
        int_flag("--steps", &flags_.steps, 1, 65536,
                 "decoding steps in the loop, each with --seqlen new tokens per batch row "
                 "(--seqlen is T here, 1..8) (default 64)"),
        int_flag("--state-len", &flags_.state_len, 0, 4096,
                 "S, the inputs the cache keeps per channel, at least W-1 (default 0: W-1)"),
        int_flag("--cache-rows", &flags_.cache_rows, 0, int64_t(1) << 24,
                 "C, rows of the cache, at least --batch (default 0: B, or 2B with --gather)"),
        choice_flag("--buffer", &flags_.buffer, {"linear", "circular", "both"},
                    "cache layout: linear (oldest first, shifted each step), circular (position p "
                    "at p % S, from cache_seqlens) or both (default)"),
        switch_flag("--gather", &flags_.gather,
                    "batch row b uses cache row conv_state_indices[b] of a larger cache (random "
                    "distinct rows; every eighth row from row 1 is padding, index -1)"),
        choice_flag("--kernel", &flags_.kernel, {"auto", "vector", "channel"},
                    "auto (default: vector where S = W-1 and D is a multiple of 16 bytes of "
                    "channels), vector or channel (a thread per channel, any shape)"),
        int_flag("--threads", &flags_.threads, 0, 512,
                 "threads per block: 64, 128, 256 or 512 (default 0: 128 where that gives every "
                 "multiprocessor two blocks, else 64)"),
        choice_flag("--pdl", &flags_.pdl, {"on", "off"},
                    "programmatic dependent launch: each step's blocks start while the step "
                    "before it finishes, and wait for it before reading anything but the filters "
                    "(on: default, where the GPU has it: NVIDIA compute capability 9.0 and "
                    "later) or ordinary launches (off)"),
        choice_flag("--spans", &flags_.spans, {"auto", "on", "off"},
                    "how the vector kernel's warps read and write: on, each warp its whole span "
                    "of contiguous bytes, handed out to its lanes through shared memory; off, "
                    "each lane its own run of 16-byte pieces; auto (default): on for a step of "
                    "at least 4096 threads"),
        choice_flag("--launch", &flags_.launch, {"graph", "direct", "both"},
                    "the loop replayed from a CUDA graph, launched step by step, or both "
                    "(default)")};
  }

  std::string check(const Options& o) override {
    const std::string why = check_flags(o, flags_);
    if (!why.empty()) return why;
    for (Buffer b : {Buffer::linear, Buffer::circular})
      for (bool graph : {true, false})
        if (wants(b) && (flags_.launch == "both" || (flags_.launch == "graph") == graph))
          plans_.push_back({b, graph});
    return "";
  }

  MemoryNeed memory(const Frame& f) override {
    const Options& o = f.opt;
    const int64_t e = dtype_bytes(o.dtype), n = flags_.steps * o.batch * o.dim * o.seqlen;
    const int64_t cache = cache_rows_of(o, flags_) * o.dim * state_len_of(o, flags_) * e;
    const int64_t buffers = flags_.buffer == "both" ? 2 : 1;
    MemoryNeed m;
    m.device_bytes = 2 * n * e + 2 * buffers * cache + o.dim * (o.width + 1) * e + 8 * o.batch;
    // x as rows and as steps, the outputs as steps, as rows and the first variant's; x in fp64 and
    // the reference; the caches before and after in both layouts and the one read back.
    m.host_bytes = 5 * n * e + 2 * n * 8 + 5 * cache;
    return m;
  }

  void describe(const Frame& f) override {
    std::printf(
        "decoding: --seqlen is T, the new tokens of one step; %lld steps, state %lld "
        "inputs, %lld cache rows%s, buffer %s, launch %s\n",
        static_cast<long long>(flags_.steps), static_cast<long long>(state_len_of(f.opt, flags_)),
        static_cast<long long>(cache_rows_of(f.opt, flags_)),
        flags_.gather ? " gathered by conv_state_indices" : "", flags_.buffer.c_str(),
        flags_.launch.c_str());
  }

  std::string make_problem(const Frame& f) override {
    p_ = make_decode(f.opt, flags_);
    return "; " + p_.summary();
  }

  void save_inputs(const std::string& dir) override {
    const Options& o = p_.opt;
    const int64_t L = p_.steps * o.seqlen, C = p_.cache_rows, S = p_.state_len;
    write_npy(dir + "/x.npy", p_.in.x, {o.batch, o.dim, L});
    write_npy(dir + "/weight.npy", p_.in.weight, {o.dim, o.width});
    if (o.bias) write_npy(dir + "/bias.npy", p_.in.bias, {o.dim});
    for (Buffer b : {Buffer::linear, Buffer::circular})
      if (wants(b)) {
        write_npy(dir + "/conv_state_" + buffer_name(b) + ".npy", p_.cache_before[int(b)],
                  {C, o.dim, S});
        write_npy(dir + "/conv_state_" + buffer_name(b) + "_reference.npy", p_.cache_after[int(b)],
                  {C, o.dim, S});
      }
    write_npy(dir + "/cache_seqlens.npy", p_.seqlens.data(), "<i4", {o.batch});
    if (!p_.indices.empty())
      write_npy(dir + "/conv_state_indices.npy", p_.indices.data(), "<i4", {o.batch});
    write_npy(dir + "/reference.npy", p_.ref, {o.batch, o.dim, L});
    std::printf(
        "wrote x (each row's %lld new tokens in order, [B, D, N*T]), weight%s, the caches "
        "before the loop ([C, D, S]) and their references after it (*_reference), "
        "cache_seqlens%s and the reference to %s\n",
        static_cast<long long>(L), o.bias ? ", bias" : "",
        p_.indices.empty() ? "" : ", conv_state_indices", dir.c_str());
  }

  std::vector<MeasuredVariant> variants(const Frame&) override {
    dev_ = std::make_unique<DecodeDevice>(p_, wants(Buffer::linear), wants(Buffer::circular));
    stream_ = std::make_unique<Stream>();
    std::vector<MeasuredVariant> vs;
    for (const Plan& plan : plans_) vs.push_back(variant(plan));
    return vs;
  }

  // Per step: each loop's time over N, the bytes of a step against the copy ceiling, and what the
  // graph saved against direct launches.
  void report(const Frame& f, std::vector<VariantResult>& results) override {
    const double n = static_cast<double>(p_.steps);
    std::printf("\nper decoding step (the loop's median time / %lld steps; %.0f bytes a step):\n",
                static_cast<long long>(p_.steps), step_bytes());
    for (VariantResult& r : results) {
      if (r.kernels.empty()) continue;
      const KernelResult loop = r.kernels.front();
      r.kernels.push_back({"per step", loop.ms / n, loop.tflops, loop.gbs});
      std::printf("  %-16s %8.2f us  %8.1f GB/s = %5.1f%% of the copy ceiling\n", r.name.c_str(),
                  1000.0 * loop.ms / n, loop.gbs, 100.0 * loop.gbs / f.ceiling_gbs);
    }
    for (Buffer b : {Buffer::linear, Buffer::circular}) {
      const VariantResult* graph = find(results, Plan{b, true}.name());
      const VariantResult* direct = find(results, Plan{b, false}.name());
      if (graph && direct && !graph->kernels.empty() && graph->kernels.front().ms > 0)
        std::printf(
            "%s: %.2f us per step replayed from the graph, %.2f us launched one by one "
            "(%.2fx)\n",
            buffer_name(b), 1000.0 * graph->kernels.front().ms / n,
            1000.0 * direct->kernels.front().ms / n,
            direct->kernels.front().ms / graph->kernels.front().ms);
    }
  }

 private:
  const Options& opt() const { return p_.opt; }
  bool wants(Buffer b) const { return flags_.buffer == "both" || flags_.buffer == buffer_name(b); }
  static const VariantResult* find(const std::vector<VariantResult>& rs, const std::string& name) {
    for (const VariantResult& r : rs)
      if (r.name == name) return &r;
    return nullptr;
  }

  // The bytes one step must move: x in and out for every batch row; the W-1 inputs of the window
  // read and the min(T, S) new ones written per active row and channel; the filters; the indices
  // and positions. The linear buffer moves more than this (its shift): the count is what a step
  // needs, whichever layout it uses.
  double step_bytes() const {
    const Options& o = opt();
    const double e = dtype_bytes(o.dtype), bd = double(o.batch) * o.dim;
    const double active = double(p_.active_rows) * o.dim;
    const double written = std::min<double>(o.seqlen, p_.state_len);
    return e * (2 * bd * o.seqlen + active * (o.width - 1 + written) +
                double(o.dim) * (o.width + (o.bias ? 1 : 0))) +
           4.0 * o.batch * (1 + (p_.indices.empty() ? 0 : 1));
  }

  template <class T>
  void enqueue(const Plan& plan, Kernel k, cudaStream_t s) {
    enqueue_loop(dev_->first_step<T>(p_, plan.buffer), p_.steps, opt().width, k, s, how());
  }
  StepLaunch how() const {
    const Spans spans = flags_.spans == "on"    ? Spans::on
                        : flags_.spans == "off" ? Spans::off
                                                : Spans::automatic;
    return {int(flags_.threads), flags_.pdl == "on", spans};
  }

  MeasuredVariant variant(const Plan& plan) {
    const Options& o = opt();
    MeasuredVariant m;
    m.name = plan.name();
    Kernel kernel = Kernel::channel;
    KernelFacts facts;
    bool spans = false;
    dispatch_storage(o.dtype, [&](auto tag) {
      using T = device_t<typename decltype(tag)::type>;
      const StepArgs<T> first = dev_->first_step<T>(p_, plan.buffer);
      kernel = choose_kernel(first, o.width, flags_.kernel);
      spans = step_uses_spans(first, kernel, how());
      launch_decode_step(first, o.width, kernel, stream_->get(), &facts, how());
      if (plan.graph)
        graphs_[int(plan.buffer)] = std::make_unique<CapturedGraph>(
            stream_->get(), [&] { enqueue<T>(plan, kernel, stream_->get()); });
    });
    const char* how_runs = kernel != Kernel::vector ? ""
                           : spans                  ? ", warps read and write whole spans"
                                                    : ", lanes read and write their own runs";
    char intro[400];
    const int n = std::snprintf(intro, sizeof intro,
                                "%s%s, %s buffer: %d registers, %d blocks of %d threads per "
                                "multiprocessor, %s",
                                kernel_name(kernel), how_runs, buffer_name(plan.buffer),
                                facts.registers, facts.blocks_per_sm, facts.threads,
                                facts.early ? "launched early (programmatic dependent launch)"
                                : flags_.pdl == "on" ? "ordinary launches (no early launch here)"
                                                     : "ordinary launches (--pdl off)");
    if (plan.graph)
      std::snprintf(intro + n, sizeof intro - n,
                    "; %lld launches captured in %.2f ms, instantiated in %.2f ms (once)",
                    static_cast<long long>(p_.steps), graphs_[int(plan.buffer)]->capture_ms(),
                    graphs_[int(plan.buffer)]->instantiate_ms());
    m.intro = intro;
    const double steps = double(p_.steps);
    const double flops = steps * (2.0 * o.width * o.batch * o.dim * o.seqlen + epilogue_flops(o));
    m.kernels = {{plan.record(), flops, steps * step_bytes()}};
    m.run = [this, plan, kernel](RunContext& ctx) { run(plan, kernel, ctx); };
    m.check = [this, plan] { return check(plan); };
    m.save_npy = [this, plan](const std::string& dir) {
      const Options& op = opt();
      write_npy(dir + "/out_" + plan.name() + ".npy", out_host_,
                {op.batch, op.dim, p_.steps * op.seqlen});
      write_npy(dir + "/conv_state_" + plan.name() + ".npy", cache_host_,
                {p_.cache_rows, op.dim, p_.state_len});
      std::printf(
          "  wrote out_%s.npy ([B, D, N*T]) and conv_state_%s.npy (the cache after the "
          "loop)\n",
          plan.name().c_str(), plan.name().c_str());
    };
    return m;
  }

  // One loop of N steps, timed as a whole; the cache restored afterwards, outside the timing.
  void run(const Plan& plan, Kernel kernel, RunContext& ctx) {
    const cudaStream_t s = stream_->get();
    if (ctx.poison_outputs) dev_->out.poison(s);
    // Not gated (unlike PhaseRecorder::kernel): direct launches are paced by the host, and that
    // pacing is what the graph takes away, so the events must see it.
    ctx.rec.async(Category::kernel, plan.record(), s, 0, [&] {
      if (plan.graph) {
        graphs_[int(plan.buffer)]->launch(s);
      } else {
        dispatch_storage(opt().dtype, [&](auto tag) {
          enqueue<device_t<typename decltype(tag)::type>>(plan, kernel, s);
        });
      }
    });
    if (ctx.poison_outputs)
      ctx.rec.d2h("copy out and the cache to host", [&] {
        out_host_ = dev_->out_rows(p_);
        cache_host_ = dev_->cache_of(p_, plan.buffer);
      });
    ctx.rec.host("restore the cache (not timed)", [&] {
      dev_->restore(plan.buffer, s);
      GPU_CHECK(cudaStreamSynchronize(s));
    });
  }

  CheckResult check(const Plan& plan) {
    const Options& o = opt();
    const int64_t L = p_.steps * o.seqlen;
    CheckResult r{true, ""};
    auto add = [&](bool ok, const std::string& line) {
      r.ok = r.ok && ok;
      r.text += line + "\n";
    };
    const VerifyReport out =
        verify("out", out_host_, p_.ref, default_tolerance(o.dtype), {o.batch, o.dim, L});
    add(out.ok(), out.summary() + (out.ok() ? "" : "\n" + out.details()));
    if (p_.active_rows < o.batch) {
      int64_t nonzero = 0;
      for (int64_t b = 0; b < o.batch; ++b)
        if (p_.row_of(b) < 0)
          for (int64_t i = b * o.dim * L; i < (b + 1) * o.dim * L; ++i)
            nonzero += out_host_.get(i) != 0.0 || std::signbit(out_host_.get(i));
      add(nonzero == 0,
          "padding rows: " + (nonzero == 0 ? std::string("every output exactly 0")
                                           : std::to_string(nonzero) + " outputs NOT 0"));
    }
    // The cache holds copies of inputs: every bit as expected, rows no batch row names untouched.
    const HostArray& want = p_.cache_after[int(plan.buffer)];
    const bool cache_same = same_bits(cache_host_, want);
    const VerifyReport cache = verify("cache after the loop", cache_host_, want.to_double(),
                                      Tolerance{0, 0}, {p_.cache_rows, o.dim, p_.state_len});
    add(cache_same, cache.summary() + (cache_same ? ", bit for bit" : "\n" + cache.details()));
    // Every variant computes the same outputs: the first one's bits are the yardstick.
    if (first_out_.empty()) {
      first_out_ = out_host_;
      first_name_ = plan.name();
    } else if (first_name_ != plan.name()) {
      const bool same = same_bits(out_host_, first_out_);
      add(same, std::string("outputs ") + (same ? "bit for bit the same as " : "DIFFER from ") +
                    first_name_);
    }
    return r;
  }

  DecodeFlags flags_;
  std::vector<Plan> plans_;
  Decode p_;
  std::unique_ptr<DecodeDevice> dev_;
  std::unique_ptr<Stream> stream_;  // made with the device buffers: none before a GPU is found
  std::unique_ptr<CapturedGraph> graphs_[2];
  HostArray out_host_, cache_host_, first_out_;
  std::string first_name_;
};

}  // namespace
}  // namespace conv1d::ch11

int main(int argc, char** argv) {
  conv1d::ch11::DecodeChapter chapter;
  return conv1d::run_chapter(argc, argv, chapter);
}
