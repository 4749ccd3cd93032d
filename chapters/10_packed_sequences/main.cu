// Chapter 10 - packed sequences and state passing. See docs/10_packed_sequences.md.
//
// Chapter 08's forward and chapter 09's backward kernels, extended (direct_forward/,
// direct_backward/) to run the convolution the way models feed it:
//
//   rows    several documents packed into each row of [B, D, L] or [B, L, D], told apart by seq_idx
//           (--seq-lens), a row continuing from initial states (--initial-states) and handing its
//           final states on; run as one pass or as --chunks K pieces that pass states along.
//   varlen  channel-last tokens [total, D] of N sequences of any length (cu_seqlens), each starting
//           from its own row of a state cache (or from zeros) and writing its final state back.
//
// Both are the same kernels with a sequence policy (policy.cuh, sequences.cuh): they ask it, once
// per tile or vector, whether every output there counts all its taps (almost everywhere: chapter
// 08's or 09's code), and only near a sequence's edges do they look at each position. A packed
// forward is one launch: where the rows' length is a multiple of the vector, the staged kernel,
// behind a small kernel that makes the words of taps (tap_words.cuh: which taps of each vector's
// outputs count, once per batch row), which takes the rows' first vectors and final states too;
// elsewhere the chunked kernel and a second, small launch for each row's first outputs and final
// states (cf_row_edges.cuh). A packed backward is the kernel and chapter 09's fixed-order sum of
// the weight gradients, with the states' gradients (dinitial_states, and dfinal_states coming back
// in) handled by the same launch: channel-first, the staged kernel where the rows' length is a
// multiple of the vector (with the forward's words of taps for rows with seq_idx), else cf_fused;
// channel-last, the staged kernel where D is a multiple of its copy, else cl_tiled. Chapter 08's
// and 09's own kernels on the same x without packing (*_plain) measure what it costs. As in
// chapters 08 and 09 the tensors stay on the device and a timed run is the kernels alone.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "chapters/10_packed_sequences/backward.cuh"
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
  std::string direction = "both";
  std::string seq_lens = "random:8";
  bool initial_states = false;
  int64_t chunks = 1;
};

// One measured variant.
struct Step {
  Layout layout;
  enum Kind { packed, plain, varlen, chunks } kind;
  bool backward;
  std::string name() const {
    static const char* kinds[] = {"packed", "plain", "varlen", "chunks"};
    return std::string(layout == Layout::channel_first ? "cf_" : "cl_") + kinds[kind] +
           (backward ? "_bwd" : "");
  }
};

ChapterSpec chapter_spec() {
  ChapterSpec s{"10", "packed_sequences",
                "packed sequences, initial and final states, variable-length batches, chunking"};
  s.dtypes = {Dtype::fp32, Dtype::fp16, Dtype::bf16};
  s.defaults.dtype = Dtype::bf16;
  s.bias = s.silu = true;
  s.pass = "forward and backward";
  return s;
}

// The tolerance of the state gradients: fp32 values, sums of a few terms.
Tolerance state_tolerance() { return default_tolerance(Dtype::fp32); }

class PackedChapter : public Chapter {
 public:
  PackedChapter() : Chapter(chapter_spec()) {}

  std::vector<ExtraFlag> flags(Options*) override {
    ExtraFlag lens{
        "--seq-lens",
        "sequence lengths: random:N (N random lengths, 0 and 1 among them, filling each "
        "row of L; varlen: filling the B*L tokens), a list a,b,c (rows: per row, the "
        "rest is padding; varlen: summing to B*L) or none (one sequence per row; the rows "
        "form only) (default random:8)",
        true, [this](const std::string& v) {
          flags_.seq_lens = v;
          if (v == "none") return std::string();
          std::vector<int64_t> lens;
          return parse_seq_lens(v, int64_t(1) << 40, 0, false, &lens);
        }};
    return {
        choice_flag("--form", &flags_.form, {"rows", "varlen", "both"},
                    "rows (seq_idx over [B, D, L] or [B, L, D]), varlen (cu_seqlens over the B*L "
                    "tokens as [B*L, D]) or both (default)"),
        choice_flag("--layout", &flags_.layout, {"channel-first", "channel-last", "both"},
                    "layout of the rows form (default both); varlen is channel-last"),
        choice_flag("--direction", &flags_.direction, {"forward", "backward", "both"},
                    "the forward, the backward (dx, dweight, dbias and the states' gradients) or "
                    "both (default)"),
        lens,
        switch_flag("--initial-states", &flags_.initial_states,
                    "rows start from random initial states; varlen sequences from random rows of "
                    "a state cache (one in eight from zeros)"),
        int_flag("--chunks", &flags_.chunks, 1, 64,
                 "also run the rows form as K chunks that pass their states on (the backward "
                 "passes their gradients back), and check it against the one-pass run bit for bit "
                 "(needs --seq-lens none; default 1)")};
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
    if (o.batch * o.seqlen > (int64_t(1) << 31) - 1 && varlen())
      return "--form varlen: at most 2^31 - 1 tokens (B*L; cu_seqlens are int32)";
    if (flags_.seq_lens != "none") {  // lists against the shape (random:N fits any)
      std::vector<int64_t> lens;
      std::string err;
      if (rows()) err = parse_seq_lens(flags_.seq_lens, o.seqlen, 0, false, &lens);
      if (err.empty() && varlen())
        err = parse_seq_lens(flags_.seq_lens, o.batch * o.seqlen, 0, true, &lens);
      if (!err.empty()) return err;
    }
    for (bool bwd : {false, true}) {
      if (!(bwd ? backward() : forward())) continue;
      if (rows())
        for (Layout l : {Layout::channel_first, Layout::channel_last}) {
          if (!wants(l)) continue;
          steps_.push_back({l, Step::packed, bwd});
          if (flags_.chunks > 1) steps_.push_back({l, Step::chunks, bwd});
          steps_.push_back({l, Step::plain, bwd});
        }
      if (varlen()) steps_.push_back({Layout::channel_last, Step::varlen, bwd});
    }
    return "";
  }

  MemoryNeed memory(const Frame& f) override {
    const Options& o = f.opt;
    const int64_t n = o.batch * o.dim * o.seqlen, e = dtype_bytes(o.dtype);
    const int64_t layouts =
        (uses(Layout::channel_first) ? 1 : 0) + (uses(Layout::channel_last) ? 1 : 0);
    const int64_t dirs = (forward() ? 1 : 0) + (backward() ? 1 : 0);
    const int64_t chunk_copies = flags_.chunks > 1 ? 2 : 1;  // the pieces hold a second copy
    // States: rows' initial and final, the cache twice, and their fp32 gradients; per chunk too.
    const int64_t states = (o.batch * 4 + 1) * o.dim * (o.width - 1) * 4 * (flags_.chunks + 2);
    MemoryNeed m;
    // Per layout: x and out (forward), dout and dx (backward); the partial sums (at most one unit
    // of W+1 per 16 elements, or per row of a short sequence).
    m.device_bytes = 2 * dirs * layouts * n * e * chunk_copies + 5 * o.batch * o.seqlen + states +
                     (n / 16 + o.batch * o.dim) * (o.width + 1) * 4 + o.dim * (o.width + 1) * 8;
    // Host, as make_packed and the checks hold it (a run at 2^31 elements must fit a GPU host's
    // memory): x and x as [B, L, D] (dout too, backward); the rows form's fp64 x and its
    // references (packed and plain: outputs, or dx and the backward's scratch; dout in fp64); the
    // varlen form's tokens in fp64 and its references (dout's tokens in fp64, backward); each
    // step's results, and one transposed copy while a step is checked.
    const int64_t steps = static_cast<int64_t>(steps_.size());
    int64_t host = 2 * n * e + (backward() ? 2 * n * e : 0) + (steps + 1) * n * e;
    if (rows()) {
      host += n * 8 + (forward() ? 2 * n * 8 : 0);
      if (backward())
        host += 3 * n * 8 +
                reference_backward_scratch_bytes(ConvShape{o.batch, o.dim, o.seqlen, o.width});
    }
    if (varlen()) host += n * 8 + (forward() ? n * 8 : 0) + (backward() ? 2 * n * 8 : 0);
    m.host_bytes = host;
    return m;
  }

  void describe(const Frame&) override {
    std::printf("packing: --seq-lens %s, %s, form %s, %s", flags_.seq_lens.c_str(),
                flags_.initial_states ? "with initial states" : "from zeros", flags_.form.c_str(),
                flags_.direction.c_str());
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
    spec.forward = forward();
    spec.backward = backward();
    const std::string err = make_packed(opt_, spec, &pk_);
    if (!err.empty()) throw std::invalid_argument(err);
    return pk_.summary();
  }

  void save_inputs(const std::string& dir) override;

  std::vector<MeasuredVariant> variants(const Frame& f) override {
    upload();
    sm_count_ = f.dev.sm_count;
    const Options& o = opt_;
    vectors_ = ch08::chunked_vectors(
        ceil_div(o.batch * o.dim * o.seqlen, 16 / dtype_bytes(o.dtype)), f.dev.sm_count);
    std::vector<MeasuredVariant> vs;
    for (const Step& st : steps_) vs.push_back(variant(st));
    return vs;
  }

  // What packing costs: each packed step's whole run against the plain kernels on the same x.
  void report(const Frame&, std::vector<VariantResult>& results) override {
    auto find = [&](const std::string& name) -> const VariantResult* {
      for (const VariantResult& r : results)
        if (r.name == name) return &r;
      return nullptr;
    };
    for (const char* dir : {"", "_bwd"})
      for (const char* l : {"cf_", "cl_"}) {
        const VariantResult* packed = find(std::string(l) + "packed" + dir);
        const VariantResult* plain = find(std::string(l) + "plain" + dir);
        if (!packed || !plain || plain->device_ms.median <= 0) continue;
        std::printf("%spacked%s against %splain%s: %.3f ms against %.3f ms, %+.1f %%\n", l, dir, l,
                    dir, packed->device_ms.median, plain->device_ms.median,
                    100.0 * (packed->device_ms.median / plain->device_ms.median - 1.0));
      }
  }

 private:
  bool rows() const { return flags_.form != "varlen"; }
  // A varlen batch is made of sequence lengths: with --seq-lens none, "both" runs the rows form only.
  bool varlen() const { return flags_.form != "rows" && flags_.seq_lens != "none"; }
  bool forward() const { return flags_.direction != "backward"; }
  bool backward() const { return flags_.direction != "forward"; }
  bool wants(Layout l) const {
    return flags_.layout == "both" ||
           flags_.layout == (l == Layout::channel_first ? "channel-first" : "channel-last");
  }
  bool uses(Layout l) const {  // a device copy of x in layout l
    return (rows() && wants(l)) || (varlen() && l == Layout::channel_last);
  }

  // Device tensors of one layout; the chunks' own with --chunks.
  struct Chunk {
    DeviceBuffer x, out, states;                 // forward: its x, out, final states
    DeviceBuffer dout, dx, init, dinit, dw, db;  // backward
  };
  struct Tensors {
    DeviceBuffer x, out, dout, dx;
    std::vector<Chunk> chunks;
  };
  Tensors& tensors(Layout l) { return l == Layout::channel_first ? first_ : last_; }

  // One variant's results on the host.
  struct Results {
    HostArray out, dx;              // in the step's layout; chunks: assembled
    HostArray final_states, cache;  // forward
    std::vector<float> dweight, dbias, dstates;
    std::vector<float> first_dweight, first_dbias;  // the first verification run's (deterministic)
  };

  void upload();
  template <class T>
  Forward<T> plan(const Step& st, int64_t chunk = -1);
  template <class T>
  Forward<T> plan_conv(const Step& st, int64_t chunk, DirectArgs<T> a, const T* init);
  template <class T>
  Backward<T> plan_backward(const Step& st, int64_t chunk = -1);
  void launch(const Step& st, RunContext* ctx, KernelFacts* facts);
  void copy_out(const Step& st, Results& r);
  CheckResult check(const Step& st, Results& r);
  CheckResult check_forward(const Step& st, Results& r);
  CheckResult check_backward(const Step& st, Results& r);
  MeasuredVariant variant(const Step& st);

  Flags flags_;
  std::vector<Step> steps_;
  Options opt_;
  Packed pk_;
  DeviceBuffer weight_, bias_, init_, final_, seq_idx_, cu_, slots_, cache_, cache0_, words_;
  DeviceBuffer dfinal_rows_, dinit_, dfinal_cache_, dstates_, dstates0_, partials_, dweight_,
      dbias_;
  Tensors first_, last_;
  int vectors_ = 1, sm_count_ = 1;
  std::vector<std::unique_ptr<Results>> results_;
  Results* one_pass_[2][2] = {};  // [backward][layout]: the packed step's results, for the chunks
};

DeviceBuffer to_device(const void* p, size_t bytes) {
  DeviceBuffer d(bytes);
  if (bytes) GPU_CHECK(cudaMemcpy(d.get(), p, bytes, cudaMemcpyHostToDevice));
  return d;
}
DeviceBuffer to_device(const HostArray& h) { return to_device(h.data(), h.bytes()); }
template <class V>
DeviceBuffer to_device(const std::vector<V>& v) {
  return to_device(v.data(), v.size() * sizeof(V));
}
template <class V>
void to_host(std::vector<V>& v, const DeviceBuffer& d) {
  std::fill(v.begin(), v.end(), V(std::nan("")));
  GPU_CHECK(cudaMemcpy(v.data(), d.get(), v.size() * sizeof(V), cudaMemcpyDeviceToHost));
}
void to_host(HostArray& h, const DeviceBuffer& d) {
  h.fill_nan();
  GPU_CHECK(cudaMemcpy(h.data(), d.get(), h.bytes(), cudaMemcpyDeviceToHost));
}

// Everything a run starts from, and the fp64 references of everything it computes, for NumPy:
// the rows form's inputs and references ([B, D, L], states [B, D, W-1]), the plain problem's
// references (chapters 08's and 09's, for the *_plain variants), and the varlen form's tokens
// ([B*L, D]), cu_seqlens, cache-row indices, the cache as a run finds it and its references. Each
// variant then writes its own outputs (MeasuredVariant::save_npy, below).
void PackedChapter::save_inputs(const std::string& dir) {
  const Options& o = opt_;
  const int64_t S = o.width - 1, tokens = o.batch * o.seqlen;
  const std::vector<int64_t> bdl{o.batch, o.dim, o.seqlen}, states{o.batch, o.dim, S},
      td{tokens, o.dim}, dw{o.dim, o.width}, d{o.dim};
  std::vector<std::string> written;
  auto put = [&](const std::string& name, auto&& write) {
    write(dir + "/" + name + ".npy");
    written.push_back(name);
  };
  put("x", [&](const std::string& f) { write_npy(f, pk_.in.x, bdl); });
  put("weight", [&](const std::string& f) { write_npy(f, pk_.in.weight, dw); });
  if (o.bias) put("bias", [&](const std::string& f) { write_npy(f, pk_.in.bias, d); });
  if (backward()) put("dout", [&](const std::string& f) { write_npy(f, pk_.dout, bdl); });
  auto grads = [&](const std::string& tag, const GradRef& g, const std::vector<int64_t>& dx_dims) {
    put("dx" + tag + "_reference", [&](const std::string& f) { write_npy(f, g.dx, dx_dims); });
    put("dweight" + tag + "_reference", [&](const std::string& f) { write_npy(f, g.dweight, dw); });
    put("dbias" + tag + "_reference", [&](const std::string& f) { write_npy(f, g.dbias, d); });
  };
  if (rows()) {
    if (!pk_.seq_idx.empty())
      put("seq_idx", [&](const std::string& f) {
        write_npy(f, pk_.seq_idx.data(), "<i4", {o.batch, o.seqlen});
      });
    if (pk_.init.size() > 0)
      put("initial_states", [&](const std::string& f) { write_npy(f, pk_.init, states); });
    if (forward()) {
      put("reference", [&](const std::string& f) { write_npy(f, pk_.ref_rows, bdl); });
      put("final_states_reference",
          [&](const std::string& f) { write_npy(f, pk_.ref_final, states); });
      put("reference_plain", [&](const std::string& f) { write_npy(f, pk_.ref_plain, bdl); });
    }
    if (backward()) {
      put("dfinal_states",
          [&](const std::string& f) { write_npy(f, pk_.dfinal_rows.data(), "<f4", states); });
      grads("", pk_.grad_rows, bdl);
      put("dinitial_states_reference",
          [&](const std::string& f) { write_npy(f, pk_.grad_rows.dstates, states); });
      grads("_plain", pk_.grad_plain, bdl);
    }
  }
  if (varlen()) {
    const int64_t rows_in_cache = int64_t(pk_.cache.size()) / (o.dim * S);
    const std::vector<int64_t> cache{rows_in_cache, o.dim, S};
    put("x_tokens", [&](const std::string& f) { write_npy(f, pk_.x_last, td); });
    put("cu_seqlens", [&](const std::string& f) {
      write_npy(f, pk_.cu_seqlens.data(), "<i4", {int64_t(pk_.cu_seqlens.size())});
    });
    put("state_indices", [&](const std::string& f) {
      write_npy(f, pk_.slots.data(), "<i4", {int64_t(pk_.slots.size())});
    });
    put("cache", [&](const std::string& f) { write_npy(f, pk_.cache, cache); });
    if (forward()) {
      put("reference_varlen", [&](const std::string& f) { write_npy(f, pk_.ref_varlen, td); });
      put("cache_reference", [&](const std::string& f) { write_npy(f, pk_.ref_cache, cache); });
    }
    if (backward()) {
      put("dout_tokens", [&](const std::string& f) { write_npy(f, pk_.dout_last, td); });
      put("dfinal_cache",
          [&](const std::string& f) { write_npy(f, pk_.dfinal_cache.data(), "<f4", cache); });
      grads("_varlen", pk_.grad_varlen, td);
      put("dstates_reference",
          [&](const std::string& f) { write_npy(f, pk_.grad_varlen.dstates, cache); });
    }
  }
  std::string list;
  for (const std::string& n : written) list += (list.empty() ? "" : ", ") + n;
  std::printf("wrote %s (.npy) to %s\n", list.c_str(), dir.c_str());
}

void PackedChapter::upload() {
  const Options& o = opt_;
  const int64_t S = o.width - 1, states = o.batch * o.dim * S;
  weight_ = to_device(pk_.in.weight);
  bias_ = to_device(pk_.in.bias);
  init_ = to_device(pk_.init);
  final_ = DeviceBuffer(size_t(states * dtype_bytes(o.dtype)));
  seq_idx_ = to_device(pk_.seq_idx);
  if (rows() && wants(Layout::channel_first) && !pk_.seq_idx.empty())
    words_ = DeviceBuffer(tap_words_bytes(o.batch, o.seqlen));
  dweight_ = DeviceBuffer(size_t(o.dim * o.width) * sizeof(float));
  dbias_ = DeviceBuffer(size_t(o.dim) * sizeof(float));
  if (backward()) {
    dfinal_rows_ = to_device(pk_.dfinal_rows);
    dinit_ = DeviceBuffer(size_t(states) * sizeof(float));
  }
  if (varlen()) {
    cu_ = to_device(pk_.cu_seqlens);
    slots_ = to_device(pk_.slots);
    cache0_ = to_device(pk_.cache);
    cache_ = DeviceBuffer(pk_.cache.bytes());
    if (backward()) {
      dfinal_cache_ = to_device(pk_.dfinal_cache);
      const std::vector<float> untouched(pk_.dfinal_cache.size(), kUntouched);
      dstates0_ = to_device(untouched);
      dstates_ = DeviceBuffer(dstates0_.bytes());
    }
  }
  for (Layout l : {Layout::channel_first, Layout::channel_last}) {
    if (!uses(l)) continue;
    Tensors& t = tensors(l);
    const bool cf = l == Layout::channel_first;
    const HostArray& x = cf ? pk_.in.x : pk_.x_last;
    t.x = to_device(x);
    if (forward()) t.out = DeviceBuffer(x.bytes());
    if (backward()) {
      t.dout = to_device(cf ? pk_.dout : pk_.dout_last);
      t.dx = DeviceBuffer(x.bytes());
    }
    if (flags_.chunks > 1 && rows() && wants(l))
      for (size_t k = 0; k < pk_.chunk_lens.size(); ++k) {
        Chunk c;
        const HostArray xk = chunk_of(x, l, o, pk_.chunk_starts[k], pk_.chunk_lens[k]);
        c.x = to_device(xk);
        if (forward()) {
          c.out = DeviceBuffer(xk.bytes());
          c.states = DeviceBuffer(final_.bytes());
        }
        if (backward()) {
          c.dout = to_device(chunk_of(cf ? pk_.dout : pk_.dout_last, l, o, pk_.chunk_starts[k],
                                      pk_.chunk_lens[k]));
          c.dx = DeviceBuffer(xk.bytes());
          c.init = to_device(pk_.chunk_init[k]);
          c.dinit = DeviceBuffer(dinit_.bytes());
          c.dw = DeviceBuffer(dweight_.bytes());
          c.db = DeviceBuffer(dbias_.bytes());
        }
        t.chunks.push_back(std::move(c));
      }
  }
  pk_.x_last = HostArray();  // on the device now
  pk_.dout_last = HostArray();
}

// The forward of one step (of chunk `chunk` of it with --chunks).
template <class T>
Forward<T> PackedChapter::plan(const Step& st, int64_t chunk) {
  const Options& o = opt_;
  Tensors& t = tensors(st.layout);
  DirectArgs<T> a{t.x.get<const T>(),
                  weight_.get<const T>(),
                  o.bias ? bias_.get<const T>() : nullptr,
                  t.out.get<T>(),
                  o.batch,
                  o.dim,
                  o.seqlen,
                  o.silu};
  const T* init = pk_.init.empty() ? nullptr : init_.get<const T>();
  Forward<T> f = plan_conv(st, chunk, a, init);
  if (f.layout == Layout::channel_last) f.cl_staged_rows = staged_rows(f.conv, sm_count_);
  return f;
}

// The forward of one step before its channel-last kernel is chosen.
template <class T>
Forward<T> PackedChapter::plan_conv(const Step& st, int64_t chunk, DirectArgs<T> a, const T* init) {
  const Options& o = opt_;
  Tensors& t = tensors(st.layout);
  switch (st.kind) {
    case Step::plain: return plain_forward(a, st.layout);
    case Step::varlen:  // B = 1, L = every token
      a.batch = 1;
      a.seqlen = o.batch * o.seqlen;
      return varlen_forward(a, cu_.get<const int32_t>(), static_cast<int32_t>(pk_.lens.size()),
                            slots_.get<const int32_t>(), cache_.get<T>(), flags_.initial_states);
    case Step::packed:
      return with_tap_words(
          rows_forward(a, st.layout, pk_.seq_idx.empty() ? nullptr : seq_idx_.get<const int32_t>(),
                       init, final_.get<T>()),
          words_.get());
    case Step::chunks:
    default: {  // chunk k: its own x and out, the final states of chunk k-1 (the first: the initial)
      Chunk& c = t.chunks[chunk];
      a.x = c.x.get<const T>();
      a.out = c.out.get<T>();
      a.seqlen = pk_.chunk_lens[chunk];
      const T* from = chunk > 0 ? t.chunks[chunk - 1].states.get<const T>() : init;
      return with_tap_words(rows_forward(a, st.layout, nullptr, from, c.states.get<T>()),
                            words_.get());
    }
  }
}

// The backward of one step (chunk `chunk` of it with --chunks: its dfinal_states are the next
// chunk's dinitial_states, so the chunks run last to first).
template <class T>
Backward<T> PackedChapter::plan_backward(const Step& st, int64_t chunk) {
  const Options& o = opt_;
  Tensors& t = tensors(st.layout);
  ch09::BwdArgs<T> a{t.x.get<const T>(),
                     t.dout.get<const T>(),
                     weight_.get<const T>(),
                     o.bias ? bias_.get<const T>() : nullptr,
                     t.dx.get<T>(),
                     partials_.get<float>(),
                     dweight_.get<float>(),
                     dbias_.get<float>(),
                     o.batch,
                     o.dim,
                     o.seqlen,
                     o.silu,
                     false};
  const T* init = pk_.init.empty() ? nullptr : init_.get<const T>();
  switch (st.kind) {
    case Step::plain: return plain_backward(a, st.layout);
    case Step::varlen:
      a.batch = 1;
      a.seqlen = o.batch * o.seqlen;
      return varlen_backward(a, cu_.get<const int32_t>(), static_cast<int32_t>(pk_.lens.size()),
                             slots_.get<const int32_t>(), cache0_.get<const T>(),
                             flags_.initial_states, dfinal_cache_.get<const float>(),
                             dstates_.get<float>());
    case Step::packed:
      return with_tap_words(
          rows_backward(a, st.layout, pk_.seq_idx.empty() ? nullptr : seq_idx_.get<const int32_t>(),
                        init, dfinal_rows_.get<const float>(), dinit_.get<float>()),
          words_.get());
    case Step::chunks:
    default: {
      Chunk& c = t.chunks[chunk];
      a.x = c.x.get<const T>();
      a.dout = c.dout.get<const T>();
      a.dx = c.dx.get<T>();
      a.dweight = c.dw.get<float>();
      a.dbias = c.db.get<float>();
      a.seqlen = pk_.chunk_lens[chunk];
      const bool last = chunk + 1 == int64_t(t.chunks.size());
      // (Chunks run without seq_idx: the staged kernel or cf_fused, no words.)
      return rows_backward(
          a, st.layout, nullptr, c.init.get<const T>(),
          last ? dfinal_rows_.get<const float>() : t.chunks[chunk + 1].dinit.get<const float>(),
          c.dinit.get<float>());
    }
  }
}

// The launches of one run of a step, each recorded (or, with `facts`, the main kernel described).
void PackedChapter::launch(const Step& st, RunContext* ctx, KernelFacts* facts) {
  const int pieces = st.kind == Step::chunks ? int(pk_.chunk_lens.size()) : 1;
  auto record = [&](const char* name, auto&& go) {
    if (ctx) ctx->rec.kernel(name, go);
  };
  dispatch_storage(opt_.dtype, [&](auto tag) {
    using T = device_t<typename decltype(tag)::type>;
    for (int i = 0; i < pieces; ++i) {
      const int64_t k = st.kind == Step::chunks ? (st.backward ? pieces - 1 - i : i) : -1;
      if (!st.backward) {
        const Forward<T> f = plan<T>(st, k);
        launch_forward(f, opt_.width, vectors_, tiled_rows(f.conv, sm_count_), record, 0, facts);
      } else {
        const Backward<T> b = plan_backward<T>(st, k);
        launch_backward(b, opt_.width, backward_choices(b.args, sm_count_), record, 0, facts);
      }
      if (facts) return;
    }
  });
}

void PackedChapter::copy_out(const Step& st, Results& r) {
  const Options& o = opt_;
  Tensors& t = tensors(st.layout);
  const size_t n = size_t(o.batch * o.dim * o.seqlen);
  const size_t states = size_t(o.batch * o.dim * (o.width - 1));
  HostArray& whole = st.backward ? r.dx : r.out;
  whole = HostArray(o.dtype, n);
  if (st.kind == Step::chunks) {
    whole.fill_nan();
    for (size_t k = 0; k < t.chunks.size(); ++k) {
      HostArray piece(o.dtype, n / o.seqlen * pk_.chunk_lens[k]);
      to_host(piece, st.backward ? t.chunks[k].dx : t.chunks[k].out);
      put_chunk(whole, piece, st.layout, o, pk_.chunk_starts[k], pk_.chunk_lens[k]);
    }
    if (!st.backward) {
      r.final_states = HostArray(o.dtype, states);
      to_host(r.final_states, t.chunks.back().states);
      return;
    }
    // dweight and dbias: each chunk's, added in chunk order; the states' gradient: chunk 0's.
    r.dweight.assign(size_t(o.dim * o.width), 0.0f);
    r.dbias.assign(size_t(o.dim), 0.0f);
    std::vector<float> dw(r.dweight.size()), db(r.dbias.size());
    for (const Chunk& c : t.chunks) {
      to_host(dw, c.dw);
      to_host(db, c.db);
      for (size_t i = 0; i < dw.size(); ++i) r.dweight[i] += dw[i];
      for (size_t i = 0; i < db.size(); ++i) r.dbias[i] += db[i];
    }
    r.dstates.resize(states);
    to_host(r.dstates, t.chunks.front().dinit);
    return;
  }
  to_host(whole, st.backward ? t.dx : t.out);
  if (!st.backward) {
    if (st.kind == Step::packed) {
      r.final_states = HostArray(o.dtype, states);
      to_host(r.final_states, final_);
    }
    if (st.kind == Step::varlen) {
      r.cache = HostArray(o.dtype, pk_.cache.size());
      to_host(r.cache, cache_);
    }
    return;
  }
  r.dweight.resize(size_t(o.dim * o.width));
  r.dbias.resize(size_t(o.dim));
  to_host(r.dweight, dweight_);
  to_host(r.dbias, dbias_);
  if (st.kind == Step::packed) {
    r.dstates.resize(states);
    to_host(r.dstates, dinit_);
  } else if (st.kind == Step::varlen) {
    r.dstates.resize(pk_.dfinal_cache.size());
    to_host(r.dstates, dstates_);
  }
}

// One report from several, every line of it.
CheckResult combine(const std::vector<VerifyReport>& reports, std::string extra = "") {
  CheckResult c{true, ""};
  for (const VerifyReport& v : reports) {
    c.ok = c.ok && v.ok();
    c.text += v.summary() + "\n" + (v.ok() ? "" : v.details());
  }
  c.text += extra;
  return c;
}

CheckResult PackedChapter::check_forward(const Step& st, Results& r) {
  const Options& o = opt_;
  const Tolerance tol = default_tolerance(o.dtype);
  const std::vector<int64_t> bdl{o.batch, o.dim, o.seqlen}, states{o.batch, o.dim, o.width - 1};
  // Channel-last outputs are compared in channel-first order: indices are [b, d, t].
  const HostArray out = st.layout == Layout::channel_first || st.kind == Step::varlen
                            ? r.out
                            : transposed(r.out, o.batch, o.seqlen, o.dim);
  if (st.kind == Step::plain) return combine({verify("out", out, pk_.ref_plain, tol, bdl)});
  if (st.kind == Step::varlen) {
    // The states are copies of inputs: exact. Rows no sequence writes must be untouched.
    return combine(
        {verify("out", out, pk_.ref_varlen, tol, {o.batch * o.seqlen, o.dim}),
         verify("state cache", r.cache, pk_.ref_cache, Tolerance{0, 0},
                {int64_t(pk_.ref_cache.size()) / (o.dim * (o.width - 1)), o.dim, o.width - 1})});
  }
  const CheckResult c =
      combine({verify("out", out, pk_.ref_rows, tol, bdl),
               verify("final_states", r.final_states, pk_.ref_final, Tolerance{0, 0}, states)});
  const int li = st.layout == Layout::channel_first ? 0 : 1;
  if (st.kind == Step::packed) return c;
  // The point of the chunks: the same bits as one pass (the same arithmetic for every output).
  const Results* one = one_pass_[0][li];
  const bool out_same = one && same_bits(r.out, one->out);
  const bool final_same = one && same_bits(r.final_states, one->final_states);
  return CheckResult{c.ok && out_same && final_same,
                     c.text + "chunks against one pass: outputs " +
                         (out_same ? "bit for bit the same" : "DIFFER") + ", final states " +
                         (final_same ? "bit for bit the same" : "DIFFER") + "\n"};
}

CheckResult PackedChapter::check_backward(const Step& st, Results& r) {
  const Options& o = opt_;
  const bool var = st.kind == Step::varlen;
  const GradRef& g = st.kind == Step::plain ? pk_.grad_plain
                     : var                  ? pk_.grad_varlen
                                            : pk_.grad_rows;
  const std::vector<int64_t> dims = var ? std::vector<int64_t>{o.batch * o.seqlen, o.dim}
                                        : std::vector<int64_t>{o.batch, o.dim, o.seqlen};
  const HostArray dx =
      st.layout == Layout::channel_first || var ? r.dx : transposed(r.dx, o.batch, o.seqlen, o.dim);
  const std::vector<double> dw(r.dweight.begin(), r.dweight.end()),
      db(r.dbias.begin(), r.dbias.end());
  std::vector<VerifyReport> reports{
      verify("dx", dx, g.dx, default_tolerance(o.dtype), dims),
      verify("dweight", dw, g.dweight, g.dweight_tol, {o.dim, o.width}),
      verify("dbias", db, g.dbias, g.dbias_tol, {o.dim})};
  if (st.kind != Step::plain) {
    const std::vector<double> ds(r.dstates.begin(), r.dstates.end());
    reports.push_back(
        verify(var ? "dstates (by cache row)" : "dinitial_states", ds, g.dstates, state_tolerance(),
               {int64_t(g.dstates.size()) / (o.dim * (o.width - 1)), o.dim, o.width - 1}));
  }
  std::string extra;
  bool ok = true;
  if (st.kind != Step::chunks) {  // the sums in a fixed order: the same bits every run
    if (r.first_dweight.empty()) {
      r.first_dweight = r.dweight;
      r.first_dbias = r.dbias;
    } else {
      const bool same = same_bits(r.first_dweight, r.dweight) && same_bits(r.first_dbias, r.dbias);
      extra = std::string("dweight and dbias bitwise identical to the first run: ") +
              (same ? "yes" : "NO") + "\n";
      ok = same;
    }
  } else {  // dx and the initial states' gradient: the one pass's bits
    const Results* one = one_pass_[1][st.layout == Layout::channel_first ? 0 : 1];
    const bool dx_same = one && same_bits(r.dx, one->dx);
    const bool ds_same = one && same_bits(r.dstates, one->dstates);
    extra = std::string("chunks against one pass: dx ") +
            (dx_same ? "bit for bit the same" : "DIFFERS") + ", dinitial_states " +
            (ds_same ? "bit for bit the same" : "DIFFER") +
            " (dweight and dbias: summed chunk by chunk, within their tolerances)\n";
    ok = dx_same && ds_same;
  }
  CheckResult c = combine(reports, extra);
  c.ok = c.ok && ok;
  return c;
}

CheckResult PackedChapter::check(const Step& st, Results& r) {
  CheckResult c = st.backward ? check_backward(st, r) : check_forward(st, r);
  if (st.kind == Step::packed)
    one_pass_[st.backward ? 1 : 0][st.layout == Layout::channel_first ? 0 : 1] = &r;
  return c;
}

MeasuredVariant PackedChapter::variant(const Step& st) {
  const Options& o = opt_;
  const double e = dtype_bytes(o.dtype), S = o.width - 1, n = double(o.batch) * o.dim * o.seqlen;
  const bool var = st.kind == Step::varlen, plain = st.kind == Step::plain;
  const double params = double(o.dim) * (o.width + (o.bias ? 1 : 0)) * e;
  // The bytes a run must move: the tensors (forward: x in, out; backward: x and dout in, dx out),
  // the filters, the ids it reads, and the states: forward the initial states in and the final
  // ones out, backward the initial states in, the final states' gradient in and the initial
  // states' gradient out (fp32). Varlen counts the cache rows sequences read and write.
  const double rows_states = double(o.batch) * o.dim * S;
  const double read = var ? pk_.states_read * o.dim * S : flags_.initial_states ? rows_states : 0;
  const double written = var ? pk_.states_written * o.dim * S : rows_states;
  const double ids = plain ? 0 : var ? 8.0 * pk_.lens.size() + 4 : 4.0 * pk_.seq_idx.size();
  const double states = plain ? 0 : st.backward ? read * e + 2 * written * 4 : (read + written) * e;
  const double tensor_bytes = (st.backward ? 3 : 2) * n * e;
  // Per element: forward W multiply-adds (and the epilogue); backward as chapter 09 counts it.
  const double flops =
      st.backward ? n * (4.0 * o.width + 1 + (o.silu ? 2.0 * o.width + 8 : 0)) : 2.0 * o.width * n;
  // (The channel-first forward: the staged kernel where the rows are a length the vector divides,
  // else the chunked kernel. Chunks: each piece by its own length.)
  const int per = 16 / int(dtype_bytes(o.dtype));
  auto mapped = [&](int64_t len) { return len > 0 && len % per == 0; };
  const bool staged_main = st.kind == Step::chunks ? mapped(pk_.chunk_lens[0]) : mapped(o.seqlen);
  const char* cf_kernel = staged_main ? "conv_fwd_cf_staged" : "conv_fwd_cf_chunked";
  // The backward's kernels, as its plans choose them (backward.cuh; chunks: each piece by its own
  // length); and the partial sums, the most any piece needs.
  std::vector<std::string> bwd_kernels;
  if (st.backward) {
    int64_t need = 0;
    dispatch_storage(o.dtype, [&](auto tag) {
      using T = device_t<typename decltype(tag)::type>;
      const int64_t pieces = st.kind == Step::chunks ? int64_t(pk_.chunk_lens.size()) : 1;
      for (int64_t k = 0; k < pieces; ++k) {
        const Backward<T> bk = plan_backward<T>(st, st.kind == Step::chunks ? k : -1);
        const BwdChoices c = backward_choices(bk.args, sm_count_);
        need = std::max(need, partial_floats(backward_partials(bk, o.width, c), o.dim, o.width));
        const std::string name = kernel_name(bk, c);
        if (std::find(bwd_kernels.begin(), bwd_kernels.end(), name) == bwd_kernels.end())
          bwd_kernels.push_back(name);
      }
    });
    if (static_cast<int64_t>(partials_.bytes()) < need * int64_t(sizeof(float)))
      partials_ = DeviceBuffer(size_t(need) * sizeof(float));
  }
  // The channel-last forward's kernel, as its plan chooses it (staged or tiled).
  const std::string cl_kernel = dispatch_storage(o.dtype, [&](auto tag) -> std::string {
    using T = device_t<typename decltype(tag)::type>;
    if (st.backward || st.layout != Layout::channel_last) return "";
    return kernel_name(plan<T>(st, st.kind == Step::chunks ? 0 : -1));
  });
  const std::string kernel = st.backward                         ? bwd_kernels.front()
                             : st.layout == Layout::channel_last ? cl_kernel
                                                                 : cf_kernel;

  auto results = std::make_unique<Results>();
  Results* r = results.get();
  results_.push_back(std::move(results));
  MeasuredVariant m;
  m.name = st.name();
  KernelFacts facts;
  launch(st, nullptr, &facts);
  char intro[384];
  std::snprintf(intro, sizeof intro,
                "%s, %s: %d registers, %zu bytes of local memory, %d blocks of %d threads per "
                "multiprocessor",
                kernel.c_str(),
                plain ? "no packing (the baseline: chapter 08's or 09's problem)"
                : var ? "variable-length batch"
                : st.kind == Step::chunks ? "the rows form as chunks passing states on"
                                          : "packed rows",
                facts.registers, facts.local_bytes, facts.blocks_per_sm, facts.threads);
  m.intro = intro;
  m.kernels = {{kernel, flops, tensor_bytes + params + (plain ? 0 : ids + states)}};
  // Channel-first rows whose length the vector divides take the staged kernel: all of them, none,
  // or (chunks) some.
  bool map_all = false, map_none = true;
  if (!plain && !var && st.layout == Layout::channel_first) {
    map_all = mapped(o.seqlen);
    map_none = !map_all;
    if (st.kind == Step::chunks) {
      map_all = std::all_of(pk_.chunk_lens.begin(), pk_.chunk_lens.end(), mapped);
      map_none = std::none_of(pk_.chunk_lens.begin(), pk_.chunk_lens.end(), mapped);
    }
  }
  const bool map_ids = map_all && !pk_.seq_idx.empty();  // (chunks run without seq_idx)
  if (!st.backward && !plain && !var && st.layout == Layout::channel_first) {
    // Channel-first rows: the staged kernel takes every vector, the rows' edges and final states
    // too, and make_tap_words (which reads the ids) is timed with it, which it overlaps
    // (forward.cuh); the chunked kernel leaves the edges and final states to a kernel of their own
    // after it (cf_row_edges.cuh), whose bytes the states are. (Chunks of both kinds: both
    // kernels.)
    m.kernels = {{map_ids ? kWordsAndConvolution : kernel, flops,
                  tensor_bytes + params + ids + (map_none ? 0 : states)}};
    if (!map_all && !map_none)
      m.kernels.push_back({staged_main ? "conv_fwd_cf_chunked" : "conv_fwd_cf_staged", 0, 0});
    if (!map_all) m.kernels.push_back({"cf_row_edges", 0, states});
    m.whole_run_name = "whole forward";
    m.whole_run_bytes = tensor_bytes + params + ids + states;
  }
  if (st.backward) {  // every kernel the plans launch
    m.kernels = {{kernel, flops, tensor_bytes + params + (plain ? 0 : states + ids)}};
    for (size_t i = 1; i < bwd_kernels.size(); ++i) m.kernels.push_back({bwd_kernels[i], 0, 0});
  }
  if (st.backward) {
    const double sums = double(o.dim) * (o.width + 1) * 4;
    m.kernels.push_back({"reduce_partials", 0, sums});  // (its partials not counted: see docs)
    m.whole_run_name = "whole backward";
    m.whole_run_bytes = tensor_bytes + params + (plain ? 0 : ids + states) + sums;
  }
  m.run = [this, st, r](RunContext& ctx) {
    Tensors& t = tensors(st.layout);
    if (st.kind == Step::varlen && !st.backward)  // updated in place: each run from the same cache
      ctx.rec.host("restore the state cache", [&] {
        GPU_CHECK(
            cudaMemcpy(cache_.get(), cache0_.get(), cache0_.bytes(), cudaMemcpyDeviceToDevice));
      });
    if (st.kind == Step::varlen && st.backward)  // rows no sequence owns must keep their values
      ctx.rec.host("reset the cache rows' gradients", [&] {
        GPU_CHECK(cudaMemcpy(dstates_.get(), dstates0_.get(), dstates0_.bytes(),
                             cudaMemcpyDeviceToDevice));
      });
    if (ctx.poison_outputs) {
      for (DeviceBuffer* b : {&t.out, &t.dx, &final_, &dinit_, &partials_, &dweight_, &dbias_})
        if (b->bytes()) b->poison();
      for (Chunk& c : t.chunks)
        for (DeviceBuffer* b : {&c.out, &c.states, &c.dx, &c.dinit, &c.dw, &c.db})
          if (b->bytes()) b->poison();
    }
    launch(st, &ctx, nullptr);
    if (ctx.poison_outputs) ctx.rec.d2h("copy the results to the host", [&] { copy_out(st, *r); });
  };
  m.check = [this, st, r] { return check(st, *r); };
  // Every output of the variant: out or dx (in the step's layout; varlen [B*L, D]); the final
  // states (rows forward), the state cache after the run (varlen forward); dweight and dbias, and
  // the initial states' gradient (rows backward) or each cache row's (varlen backward).
  m.save_npy = [this, st, r](const std::string& dir) {
    const Options& op = opt_;
    const int64_t S = op.width - 1, cache_rows = int64_t(pk_.cache.size()) / (op.dim * S);
    const bool first = st.layout == Layout::channel_first && st.kind != Step::varlen;
    const std::vector<int64_t> dims = st.kind == Step::varlen
                                          ? std::vector<int64_t>{op.batch * op.seqlen, op.dim}
                                      : first ? std::vector<int64_t>{op.batch, op.dim, op.seqlen}
                                              : std::vector<int64_t>{op.batch, op.seqlen, op.dim};
    const std::vector<int64_t> row_states{op.batch, op.dim, S}, cache{cache_rows, op.dim, S};
    std::vector<std::string> written;
    auto put = [&](const std::string& what, auto&& write) {
      const std::string path = dir + "/" + what + "_" + st.name() + ".npy";
      write(path);
      written.push_back(path);
    };
    put(st.backward ? "dx" : "out",
        [&](const std::string& f) { write_npy(f, st.backward ? r->dx : r->out, dims); });
    if (!st.backward && r->final_states.size() > 0)
      put("final_states", [&](const std::string& f) { write_npy(f, r->final_states, row_states); });
    if (!st.backward && st.kind == Step::varlen)
      put("cache", [&](const std::string& f) { write_npy(f, r->cache, cache); });
    if (st.backward) {
      put("dweight", [&](const std::string& f) {
        write_npy(f, r->dweight.data(), "<f4", {op.dim, op.width});
      });
      put("dbias", [&](const std::string& f) { write_npy(f, r->dbias.data(), "<f4", {op.dim}); });
      if (st.kind == Step::varlen)
        put("dstates",
            [&](const std::string& f) { write_npy(f, r->dstates.data(), "<f4", cache); });
      else if (st.kind != Step::plain)
        put("dinitial_states",
            [&](const std::string& f) { write_npy(f, r->dstates.data(), "<f4", row_states); });
    }
    for (const std::string& path : written) std::printf("  wrote %s\n", path.c_str());
  };
  return m;
}

}  // namespace
}  // namespace conv1d::ch10

int main(int argc, char** argv) {
  conv1d::ch10::PackedChapter chapter;
  return conv1d::run_chapter(argc, argv, chapter);
}
