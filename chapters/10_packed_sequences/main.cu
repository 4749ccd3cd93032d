// Chapter 10 - packed sequences and state passing. See docs/10_packed_sequences.md.
//
// Chapter 08's forward kernels, taught to run the convolution the way models feed it:
//
//   rows    several documents packed into each row of [B, D, L] or [B, L, D], told apart by seq_idx
//           (--seq-lens), a row continuing from initial states (--initial-states) and handing its
//           final states on; run as one pass or as --chunks K pieces that pass states along.
//   varlen  channel-last tokens [total, D] of N sequences of any length (cu_seqlens), each starting
//           from its own row of a state cache (or from zeros) and writing its final state back.
//
// A run of a form is up to three kernels:
//
//   packing_masks     one byte per token: which of its W taps count          (masks.cuh)
//   conv_fwd_*        chapter 08's cf_chunked or cl_tiled, reading the masks  (chapter 08, kMasked)
//   sequence_edges    the first W-1 outputs of each sequence that starts from a state, again, with
//                     the state in the window; the last W-1 inputs of each row or sequence, its
//                     final state                                             (edges.cuh)
//
// and chapter 08's kernels run on the same x without packing (cf_plain, cl_plain) measure what the
// packing costs. As in chapters 08 and 09 the tensors stay on the device and a timed run is the
// kernels alone.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "chapters/10_packed_sequences/forward.cuh"
#include "chapters/10_packed_sequences/packing.h"
#include "common/buffers.h"
#include "common/npy.h"
#include "common/runner.h"
#include "common/verify.h"

namespace conv1d::ch10 {
namespace {

struct Flags {
  std::string form = "both";    // rows, varlen, both
  std::string layout = "both";  // of the rows form
  std::string seq_lens = "random:8";
  bool initial_states = false;
  int64_t chunks = 1;
};

// One measured variant.
struct Step {
  std::string name;  // cf_packed, cl_packed, cl_varlen, cf_plain, cl_plain, cf_chunks, cl_chunks
  Layout layout;
  enum Kind { packed, plain, varlen, chunks } kind;
};

ChapterSpec chapter_spec() {
  ChapterSpec s{"10", "packed_sequences",
                "packed sequences, initial and final states, variable-length batches, chunking"};
  s.dtypes = {Dtype::fp32, Dtype::fp16, Dtype::bf16};
  s.defaults.dtype = Dtype::bf16;
  s.bias = s.silu = true;
  return s;
}

class PackedChapter : public Chapter {
 public:
  PackedChapter() : Chapter(chapter_spec()) {}

  std::vector<ExtraFlag> flags(Options*) override {
    ExtraFlag lens{"--seq-lens",
                   "sequence lengths: random:N (N random lengths, 0 and 1 among them, filling each "
                   "row of L; varlen: filling the B*L tokens), a list a,b,c (rows: per row, the "
                   "rest is padding; varlen: summing to B*L) or none (one sequence per row; the rows "
                   "form only) (default random:8)",
                   true, [this](const std::string& v) {
                     flags_.seq_lens = v;
                     if (v == "none") return std::string();
                     std::vector<int64_t> lens;
                     const std::string err = parse_seq_lens(v, int64_t(1) << 40, 0, false, &lens);
                     return err;
                   }};
    return {
        choice_flag("--form", &flags_.form, {"rows", "varlen", "both"},
                    "rows (seq_idx over [B, D, L] or [B, L, D]), varlen (cu_seqlens over the B*L "
                    "tokens as [B*L, D]) or both (default)"),
        choice_flag("--layout", &flags_.layout, {"channel-first", "channel-last", "both"},
                    "layout of the rows form (default both); varlen is channel-last"),
        lens,
        switch_flag("--initial-states", &flags_.initial_states,
                    "rows start from random initial states; varlen sequences from random rows of "
                    "a state cache (one in eight from zeros)"),
        int_flag("--chunks", &flags_.chunks, 1, 64,
                 "also run the rows form as K chunks that pass their final states on, and check "
                 "it against the one-pass run bit for bit (needs --seq-lens none; default 1)")};
  }

  std::string check(const Options& o) override {
    if (o.width < 2) return "--width must be 2, 3 or 4 (the states hold W-1 inputs)";
    if (flags_.chunks > 1 && flags_.seq_lens != "none")
      return "--chunks runs one sequence per row: use it with --seq-lens none (a chunk boundary "
             "at the start of a packed sequence would hand it the previous sequence's states)";
    if (flags_.chunks > 1 && flags_.form == "varlen")
      return "--chunks splits the rows form: use it with --form rows or both";
    if (flags_.chunks > 1 && o.seqlen < 2 * flags_.chunks + 3)
      return "--chunks " + std::to_string(flags_.chunks) +
             " needs --seqlen >= " + std::to_string(2 * flags_.chunks + 3);
    if (flags_.seq_lens == "none" && flags_.form == "varlen")
      return "--form varlen needs sequence lengths (--seq-lens random:N or a list)";
    if (flags_.seq_lens != "none") {  // lists against the shape (random:N fits any)
      std::vector<int64_t> lens;
      std::string err;
      if (rows()) err = parse_seq_lens(flags_.seq_lens, o.seqlen, 0, false, &lens);
      if (err.empty() && varlen())
        err = parse_seq_lens(flags_.seq_lens, o.batch * o.seqlen, 0, true, &lens);
      if (!err.empty()) return err;
    }
    if (rows())
      for (Layout l : {Layout::channel_first, Layout::channel_last}) {
        if (!wants(l)) continue;
        const std::string p = l == Layout::channel_first ? "cf_" : "cl_";
        steps_.push_back({p + "packed", l, Step::packed});
        if (flags_.chunks > 1) steps_.push_back({p + "chunks", l, Step::chunks});
        steps_.push_back({p + "plain", l, Step::plain});
      }
    if (varlen()) steps_.push_back({"cl_varlen", Layout::channel_last, Step::varlen});
    return "";
  }

  MemoryNeed memory(const Frame& f) override {
    const Options& o = f.opt;
    const int64_t n = o.batch * o.dim * o.seqlen, e = dtype_bytes(o.dtype);
    const int64_t tensors = (uses(Layout::channel_first) ? 1 : 0) + (uses(Layout::channel_last) ? 1 : 0);
    const int64_t states = (o.batch * 3 + 1) * o.dim * (o.width - 1) * e;  // rows, cache, chunks
    MemoryNeed m;
    m.device_bytes = 2 * tensors * n * e * (flags_.chunks > 1 ? 2 : 1) + 6 * o.batch * o.seqlen +
                     states * (flags_.chunks + 2) + o.dim * (o.width + 1) * e;
    // Host: x, its channel-last copy, an output per tensor; fp64 x (twice, while the references are
    // computed) and the references (packed rows, plain rows, varlen).
    m.host_bytes = (2 + 2 * tensors) * n * e + 5 * n * 8;
    return m;
  }

  void describe(const Frame&) override {
    std::printf("packing: --seq-lens %s, %s, form %s", flags_.seq_lens.c_str(),
                flags_.initial_states ? "with initial states" : "from zeros", flags_.form.c_str());
    if (flags_.chunks > 1) std::printf(", rows also as %d chunks", int(flags_.chunks));
    std::printf("\n");
  }

  std::string make_problem(const Frame& f) override {
    opt_ = f.opt;
    PackSpec spec;
    spec.seq_lens = flags_.seq_lens;
    spec.initial_states = flags_.initial_states;
    spec.chunks = static_cast<int>(flags_.chunks);
    spec.rows = rows();
    spec.varlen = varlen();
    const std::string err = make_packed(opt_, spec, &pk_);
    if (!err.empty()) throw std::invalid_argument(err);
    return pk_.summary();
  }

  void save_inputs(const std::string& dir) override {
    const Options& o = opt_;
    write_npy(dir + "/x.npy", pk_.in.x, {o.batch, o.dim, o.seqlen});
    write_npy(dir + "/weight.npy", pk_.in.weight, {o.dim, o.width});
    if (o.bias) write_npy(dir + "/bias.npy", pk_.in.bias, {o.dim});
    if (rows()) {  // the rows form's inputs beside x, and its references
      if (!pk_.seq_idx.empty())
        write_npy(dir + "/seq_idx.npy", pk_.seq_idx.data(), "<i4", {o.batch, o.seqlen});
      if (pk_.init.size() > 0)
        write_npy(dir + "/initial_states.npy", pk_.init, {o.batch, o.dim, o.width - 1});
      write_npy(dir + "/reference.npy", pk_.ref_rows, {o.batch, o.dim, o.seqlen});
      write_npy(dir + "/final_states_reference.npy", pk_.ref_final,
                {o.batch, o.dim, o.width - 1});
    }
    std::printf("wrote x, weight%s%s and the rows form's references ([B, D, L]) as .npy files to "
                "%s\n",
                o.bias ? ", bias" : "", rows() ? ", seq_idx and initial states (where used)" : "",
                dir.c_str());
  }

  std::vector<MeasuredVariant> variants(const Frame& f) override {
    upload();
    sm_count_ = f.dev.sm_count;
    const Options& o = opt_;
    const int e = dtype_bytes(o.dtype);
    vectors_ =
        ch08::chunked_vectors(ceil_div(o.batch * o.dim * o.seqlen, 16 / e), f.dev.sm_count);
    std::vector<MeasuredVariant> vs;
    for (const Step& st : steps_) vs.push_back(variant(st, f));
    return vs;
  }

  // What packing costs: each packed step's whole run against chapter 08's kernel on the same x.
  void report(const Frame&, std::vector<VariantResult>& results) override {
    auto find = [&](const std::string& name) -> const VariantResult* {
      for (const VariantResult& r : results)
        if (r.name == name) return &r;
      return nullptr;
    };
    for (const char* l : {"cf_", "cl_"}) {
      const VariantResult* packed = find(std::string(l) + "packed");
      const VariantResult* plain = find(std::string(l) + "plain");
      if (!packed || !plain || plain->device_ms.median <= 0) continue;
      std::printf("%spacked against %splain: %.3f ms against %.3f ms per forward, %+.1f %%\n", l,
                  l, packed->device_ms.median, plain->device_ms.median,
                  100.0 * (packed->device_ms.median / plain->device_ms.median - 1.0));
    }
  }

 private:
  bool rows() const { return flags_.form != "varlen"; }
  // A varlen batch is made of sequence lengths: with --seq-lens none, "both" runs the rows form only.
  bool varlen() const { return flags_.form != "rows" && flags_.seq_lens != "none"; }
  bool wants(Layout l) const {
    return flags_.layout == "both" ||
           flags_.layout == (l == Layout::channel_first ? "channel-first" : "channel-last");
  }
  bool uses(Layout l) const {  // a device copy of x in layout l
    return (rows() && wants(l)) || (varlen() && l == Layout::channel_last);
  }

  // Device tensors of one layout; the chunks' own with --chunks.
  struct Tensors {
    DeviceBuffer x, out;
    HostArray out_host;
    std::vector<DeviceBuffer> chunk_x, chunk_out, chunk_states;
  };
  Tensors& tensors(Layout l) { return l == Layout::channel_first ? first_ : last_; }

  void upload();
  template <class T>
  Forward<T> plan(const Step& st, Tensors& t, int64_t chunk = -1);
  template <class T>
  void run_plan(const Forward<T>& f, PhaseRecorder* rec, KernelFacts* facts = nullptr);
  void copy_out(const Step& st);
  CheckResult check(const Step& st);
  MeasuredVariant variant(const Step& st, const Frame& f);

  Flags flags_;
  std::vector<Step> steps_;
  Options opt_;
  Packed pk_;
  DeviceBuffer weight_, bias_, init_, final_, seq_idx_, masks_, cu_, slots_, cache_, cache0_;
  HostArray final_host_, cache_host_;
  Tensors first_, last_;
  int vectors_ = 1, sm_count_ = 1;
  HostArray one_pass_[2], one_pass_final_[2];  // cf_packed / cl_packed results, for the chunks
};

void PackedChapter::upload() {
  const Options& o = opt_;
  const int64_t S = o.width - 1;
  auto to_device = [](const void* p, size_t bytes) {
    DeviceBuffer d(bytes);
    if (bytes) GPU_CHECK(cudaMemcpy(d.get(), p, bytes, cudaMemcpyHostToDevice));
    return d;
  };
  weight_ = to_device(pk_.in.weight.data(), pk_.in.weight.bytes());
  bias_ = to_device(pk_.in.bias.data(), pk_.in.bias.bytes());
  init_ = to_device(pk_.init.data(), pk_.init.bytes());
  final_ = DeviceBuffer(size_t(o.batch * o.dim * S * dtype_bytes(o.dtype)));
  final_host_ = HostArray(o.dtype, size_t(o.batch * o.dim * S));
  seq_idx_ = to_device(pk_.seq_idx.data(), pk_.seq_idx.size() * sizeof(int32_t));
  masks_ = DeviceBuffer(size_t(o.batch * o.seqlen));
  if (varlen()) {
    cu_ = to_device(pk_.cu_seqlens.data(), pk_.cu_seqlens.size() * sizeof(int32_t));
    slots_ = to_device(pk_.slots.data(), pk_.slots.size() * sizeof(int32_t));
    cache0_ = to_device(pk_.cache.data(), pk_.cache.bytes());
    cache_ = DeviceBuffer(pk_.cache.bytes());
    cache_host_ = HostArray(o.dtype, pk_.cache.size());
  }
  for (Layout l : {Layout::channel_first, Layout::channel_last}) {
    if (!uses(l)) continue;
    Tensors& t = tensors(l);
    const HostArray& x = l == Layout::channel_first ? pk_.in.x : pk_.x_last;
    t.x = to_device(x.data(), x.bytes());
    t.out = DeviceBuffer(x.bytes());
    t.out_host = HostArray(o.dtype, x.size());
    if (flags_.chunks > 1 && rows() && wants(l))
      for (size_t k = 0; k < pk_.chunk_lens.size(); ++k) {
        const HostArray xk = chunk_of(x, l, o, pk_.chunk_starts[k], pk_.chunk_lens[k]);
        t.chunk_x.push_back(to_device(xk.data(), xk.bytes()));
        t.chunk_out.emplace_back(xk.bytes());
        t.chunk_states.emplace_back(final_.bytes());
      }
  }
  pk_.x_last = HostArray();  // on the device now
}

// The launches of one step (of chunk `chunk` of it with --chunks).
template <class T>
Forward<T> PackedChapter::plan(const Step& st, Tensors& t, int64_t chunk) {
  const Options& o = opt_;
  ch08::DirectArgs<T> a{t.x.get<const T>(), weight_.get<const T>(),
                        o.bias ? bias_.get<const T>() : nullptr, t.out.get<T>(), o.batch, o.dim,
                        o.seqlen, o.silu};
  const T* init = pk_.init.empty() ? nullptr : init_.get<const T>();
  switch (st.kind) {
    case Step::plain:
      return plain_forward(a, st.layout);
    case Step::varlen:  // B = 1, L = every token
      a.batch = 1;
      a.seqlen = o.batch * o.seqlen;
      return varlen_forward(a, cu_.get<const int32_t>(), static_cast<int32_t>(pk_.lens.size()),
                            slots_.get<const int32_t>(), cache_.get<T>(), flags_.initial_states,
                            masks_.get<uint8_t>());
    case Step::packed:
      return rows_forward(a, st.layout, pk_.seq_idx.empty() ? nullptr : seq_idx_.get<const int32_t>(),
                          masks_.get<uint8_t>(), init, final_.get<T>());
    case Step::chunks:
    default:  // chunk k: its own x and out, the final states of chunk k-1 (the first: the initial)
      a.x = t.chunk_x[chunk].get<const T>();
      a.out = t.chunk_out[chunk].get<T>();
      a.seqlen = pk_.chunk_lens[chunk];
      return rows_forward(a, st.layout, nullptr, nullptr,
                          chunk > 0 ? t.chunk_states[chunk - 1].get<const T>() : init,
                          t.chunk_states[chunk].get<T>());
  }
}

template <class T>
void PackedChapter::run_plan(const Forward<T>& f, PhaseRecorder* rec, KernelFacts* facts) {
  const int rows = ch08::cl_tiled_rows(f.conv.batch, f.conv.seqlen,
                                       f.conv.dim / ch08::cl_access_elements(f.conv), sm_count_, 0,
                                       sizeof(T) == 4 ? 32 : 16);
  launch_forward(
      f, opt_.width, vectors_, rows,
      [&](const char* name, auto&& launch) { rec->kernel(name, launch); }, 0, facts);
}

void PackedChapter::copy_out(const Step& st) {
  const Options& o = opt_;
  Tensors& t = tensors(st.layout);
  auto get = [](HostArray& h, const DeviceBuffer& d) {
    h.fill_nan();
    GPU_CHECK(cudaMemcpy(h.data(), d.get(), h.bytes(), cudaMemcpyDeviceToHost));
  };
  if (st.kind == Step::chunks) {
    t.out_host.fill_nan();
    for (size_t k = 0; k < t.chunk_out.size(); ++k) {
      HostArray piece(o.dtype, t.out_host.size() / o.seqlen * pk_.chunk_lens[k]);
      get(piece, t.chunk_out[k]);
      put_chunk(t.out_host, piece, st.layout, o, pk_.chunk_starts[k], pk_.chunk_lens[k]);
    }
    get(final_host_, t.chunk_states.back());
    return;
  }
  get(t.out_host, t.out);
  if (st.kind == Step::packed) get(final_host_, final_);
  if (st.kind == Step::varlen) get(cache_host_, cache_);
}

CheckResult PackedChapter::check(const Step& st) {
  const Options& o = opt_;
  const Tensors& t = tensors(st.layout);
  const Tolerance tol = default_tolerance(o.dtype);
  const std::vector<int64_t> bdl{o.batch, o.dim, o.seqlen}, states{o.batch, o.dim, o.width - 1};
  std::vector<VerifyReport> reports;
  // Channel-last outputs are compared in channel-first order: indices are [b, d, t].
  auto out_cf = [&] {
    return st.layout == Layout::channel_first ? t.out_host
                                              : transposed(t.out_host, o.batch, o.seqlen, o.dim);
  };
  std::string extra;
  if (st.kind == Step::plain) {
    reports.push_back(verify("out", out_cf(), pk_.ref_plain, tol, bdl));
  } else if (st.kind == Step::varlen) {
    reports.push_back(verify("out", t.out_host, pk_.ref_varlen, tol, {o.batch * o.seqlen, o.dim}));
    // The states are copies of inputs: exact. Rows no sequence writes must be untouched.
    reports.push_back(verify("state cache", cache_host_, pk_.ref_cache, Tolerance{0, 0},
                             {int64_t(pk_.ref_cache.size()) / (o.dim * (o.width - 1)), o.dim,
                              o.width - 1}));
  } else {
    const HostArray got = out_cf();
    reports.push_back(verify("out", got, pk_.ref_rows, tol, bdl));
    reports.push_back(verify("final_states", final_host_, pk_.ref_final, Tolerance{0, 0}, states));
    const int li = st.layout == Layout::channel_first ? 0 : 1;
    if (st.kind == Step::packed) {
      one_pass_[li] = got;
      one_pass_final_[li] = final_host_;
    } else {
      // The point of the chunks: the same bits as one pass (same arithmetic for every output).
      const bool out_same = !one_pass_[li].empty() && same_bits(got, one_pass_[li]);
      const bool final_same = !one_pass_final_[li].empty() && same_bits(final_host_, one_pass_final_[li]);
      extra = std::string("chunks against one pass: outputs ") +
              (out_same ? "bit for bit the same" : "DIFFER") + ", final states " +
              (final_same ? "bit for bit the same" : "DIFFER") + "\n";
      if (!out_same || !final_same) return CheckResult{false, extra};
    }
  }
  CheckResult r{true, ""};
  for (const VerifyReport& v : reports) {
    r.ok = r.ok && v.ok();
    r.text += v.summary() + "\n" + (v.ok() ? "" : v.details());
  }
  r.text += extra;
  return r;
}

MeasuredVariant PackedChapter::variant(const Step& st, const Frame&) {
  const Options& o = opt_;
  const double e = dtype_bytes(o.dtype), S = o.width - 1;
  const bool cl = st.layout == Layout::channel_last;
  const double n = double(o.batch) * o.dim * o.seqlen;
  const double params = double(o.dim) * (o.width + (o.bias ? 1 : 0)) * e;
  const std::string conv = cl ? "conv_fwd_cl_tiled" : "conv_fwd_cf_chunked";
  // The bytes a forward must move: x in, out, the filters; states in and out; seq_idx or
  // cu_seqlens and the state indices read; the masks written and read once (tiny).
  const bool var = st.kind == Step::varlen;
  const double row_states = double(o.batch) * o.dim * S * e;
  const double states_in = var ? pk_.states_read * o.dim * S * e
                           : flags_.initial_states ? row_states
                                                   : 0.0;
  const double states_out = var ? pk_.states_written * o.dim * S * e : row_states;
  const double ids = var ? 8.0 * pk_.lens.size() + 4 : 4.0 * pk_.seq_idx.size();
  const double mask_bytes = (var || !pk_.seq_idx.empty()) ? double(o.batch) * o.seqlen : 0.0;
  MeasuredVariant m;
  m.name = st.name;
  Tensors& t = tensors(st.layout);
  KernelFacts facts;
  dispatch_storage(o.dtype, [&](auto tag) {
    using T = device_t<typename decltype(tag)::type>;
    run_plan(plan<T>(st, t, st.kind == Step::chunks ? 0 : -1), nullptr, &facts);
  });
  const double flops = 2.0 * o.width * n;
  char intro[384];
  std::snprintf(intro, sizeof intro, "%s, %s: %d registers, %d blocks of %d threads per "
                "multiprocessor", conv.c_str(),
                st.kind == Step::plain    ? "chapter 08's kernel, no packing (the baseline)"
                : st.kind == Step::varlen ? "variable-length batch"
                : st.kind == Step::chunks ? "the rows form as chunks passing states on"
                                          : "packed rows",
                facts.registers, facts.blocks_per_sm, facts.threads);
  m.intro = intro;
  if (st.kind == Step::plain) {
    m.kernels = {{conv, flops, 2 * n * e + params}};
  } else {
    // sequence_edges: the states read, as many outputs rewritten, the final states written (its
    // re-reads of x not counted)
    m.kernels = {{conv, flops, 2 * n * e + params},
                 {"sequence_edges", 0, 2 * states_in + states_out}};
    if (mask_bytes > 0) m.kernels.push_back({"packing_masks", 0, ids + mask_bytes});
    m.whole_run_name = "whole forward";
    m.whole_run_bytes = 2 * n * e + params + states_in + states_out + ids;
  }
  m.run = [this, st](RunContext& ctx) {
    Tensors& tt = tensors(st.layout);
    if (st.kind == Step::varlen)  // updated in place: every run starts from the same cache
      ctx.rec.host("restore the state cache", [&] {
        GPU_CHECK(
            cudaMemcpy(cache_.get(), cache0_.get(), cache0_.bytes(), cudaMemcpyDeviceToDevice));
      });
    if (ctx.poison_outputs) {
      tt.out.poison();
      final_.poison();
      for (DeviceBuffer& b : tt.chunk_out) b.poison();
      for (DeviceBuffer& b : tt.chunk_states) b.poison();
    }
    dispatch_storage(opt_.dtype, [&](auto tag) {
      using T = device_t<typename decltype(tag)::type>;
      if (st.kind != Step::chunks) {
        run_plan(plan<T>(st, tt), &ctx.rec);
      } else {
        for (size_t k = 0; k < tt.chunk_x.size(); ++k)
          run_plan(plan<T>(st, tt, static_cast<int64_t>(k)), &ctx.rec);
      }
    });
    if (ctx.poison_outputs) ctx.rec.d2h("copy out to host", [&] { copy_out(st); });
  };
  m.check = [this, st] { return check(st); };
  m.save_npy = [this, st](const std::string& dir) {
    const Options& op = opt_;
    const std::string path = dir + "/out_" + st.name + ".npy";
    const bool first = st.layout == Layout::channel_first;
    write_npy(path, tensors(st.layout).out_host,
              first ? std::vector<int64_t>{op.batch, op.dim, op.seqlen}
                    : std::vector<int64_t>{op.batch, op.seqlen, op.dim});
    std::printf("  wrote %s (%s)\n", path.c_str(), first ? "[B, D, L]" : "[B, L, D]");
  };
  return m;
}

}  // namespace
}  // namespace conv1d::ch10

int main(int argc, char** argv) {
  conv1d::ch10::PackedChapter chapter;
  return conv1d::run_chapter(argc, argv, chapter);
}
