// Chapter 10 (packed sequences and state passing) against the fp64 reference, forward and backward:
// the rows form in both layouts (seq_idx with padding and sequences of length 0 and 1, initial
// states, final states, their gradients), the varlen form (random packings, a state cache read and
// written in place, negative indices, each cache row's gradient), and chunked runs that must give
// the one-pass results bit for bit (outputs, final states, dx, the initial states' gradient),
// including chunks shorter than the W-1 states. The host-side parsing and packing run without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "chapters/10_packed_sequences/backward.cuh"
#include "chapters/10_packed_sequences/cf_row_edges.cuh"
#include "chapters/10_packed_sequences/forward.cuh"
#include "chapters/10_packed_sequences/packing.h"
#include "common/buffers.h"
#include "common/runner.h"
#include "common/verify.h"
#include "tests/gpu_test_util.h"
#include "tests/shape_options.h"

using namespace conv1d;
using namespace conv1d::ch10;

namespace {

DeviceBuffer upload(const void* p, size_t bytes) {
  DeviceBuffer d(bytes);
  if (bytes) GPU_CHECK(cudaMemcpy(d.get(), p, bytes, cudaMemcpyHostToDevice));
  return d;
}
DeviceBuffer upload(const HostArray& h) { return upload(h.data(), h.bytes()); }
template <class V>
DeviceBuffer upload_vec(const std::vector<V>& v) {
  return upload(v.data(), v.size() * sizeof(V));
}
void download(HostArray& h, const DeviceBuffer& d) {
  GPU_CHECK(cudaMemcpy(h.data(), d.get(), h.bytes(), cudaMemcpyDeviceToHost));
}

auto now = [](const char*, auto&& launch) { launch(); };  // launch_forward without timing

std::string describe(const Options& o, const std::string& lens, bool init) {
  return "B=" + std::to_string(o.batch) + " D=" + std::to_string(o.dim) +
         " L=" + std::to_string(o.seqlen) + " W=" + std::to_string(o.width) + " " +
         dtype_name(o.dtype) + (o.bias ? " bias" : "") + (o.silu ? " silu" : "") + " --seq-lens " +
         lens + (init ? " --initial-states" : "");
}

// Outputs of one rows-form run, channel-first order, and the final states.
struct RowsResult {
  HostArray out, final_states;
};

// The rows form of `p` (x, seq_idx, initial states) in layout l, with chapter 08's launch choices
// `vectors` and `rows` (cf_chunked, cl_tiled) and `blocks` (cf_staged: at most that many, 0: as
// many as fit); the x of time steps [start, start + len) only when len > 0, starting from `init`
// instead of p.init (chunks). `cf_staged`: let the staged kernel take channel-first rows of a
// length the vector divides (with room for the words of taps); false: the chunked kernel and
// cf_row_edges. `staged`: the channel-last staged kernel's rows a thread (0: cl_tiled).
RowsResult run_rows(const Options& o, const Packed& p, Layout l, int vectors, int rows,
                    const HostArray* init = nullptr, int64_t start = 0, int64_t len = 0,
                    bool cf_staged = true, int64_t blocks = 0, int staged = 0) {
  const bool cl = l == Layout::channel_last;
  const HostArray x_full = cl ? transposed(p.in.x, o.batch, o.dim, o.seqlen) : p.in.x;
  const int64_t L = len > 0 ? len : o.seqlen;
  const HostArray x = len > 0 ? chunk_of(x_full, l, o, start, len) : x_full;
  const HostArray& states = init ? *init : p.init;
  DeviceBuffer dx = upload(x), dw = upload(p.in.weight), db = upload(p.in.bias),
               dinit = upload(states), dseq = upload_vec(p.seq_idx), out(x.bytes()),
               fin(size_t(o.batch * o.dim * (o.width - 1)) * dtype_bytes(o.dtype)),
               words(tap_words_bytes(o.batch, L));
  out.poison();
  fin.poison();
  words.poison();
  dispatch_storage(o.dtype, [&](auto tag) {
    using T = device_t<typename decltype(tag)::type>;
    const ch08::DirectArgs<T> a{dx.get<const T>(),
                                dw.get<const T>(),
                                o.bias ? db.get<const T>() : nullptr,
                                out.get<T>(),
                                o.batch,
                                o.dim,
                                L,
                                o.silu};
    Forward<T> f =
        with_tap_words(rows_forward(a, l, p.seq_idx.empty() ? nullptr : dseq.get<const int32_t>(),
                                    states.empty() ? nullptr : dinit.get<const T>(), fin.get<T>()),
                       words.get());
    f.staged = cf_staged;
    f.cf_blocks = blocks;
    f.cl_staged_rows = staged;
    launch_forward(f, o.width, vectors, rows, now);
  });
  GPU_CHECK(cudaDeviceSynchronize());
  RowsResult r{HostArray(o.dtype, x.size()),
               HostArray(o.dtype, size_t(o.batch * o.dim * (o.width - 1)))};
  download(r.out, out);
  download(r.final_states, fin);
  if (cl) r.out = transposed(r.out, o.batch, L, o.dim);
  return r;
}

// The rows a thread of chapter 08's channel-last staged kernel that chapter 10 compiles, where it
// takes the shape (16-bit types, D a multiple of 8): each is run beside cl_tiled.
std::vector<int> staged_choices(const Options& o) {
  if (o.dtype == Dtype::fp32 || o.dim % 8 != 0) return {};
  return {16, 64};
}

Options random_options(Rng& rng, int trial, int64_t max_l) {
  return random_shape_options(rng, trial, max_l);
}

// --seq-lens values that cover the cases: a few long sequences, many short ones (0 and 1 among
// them), one per row, and explicit lists with padding after them.
std::string random_lens_spec(Rng& rng, int64_t seqlen, bool allow_none) {
  switch (rng.range(0, allow_none ? 3 : 2)) {
    case 0: return "random:" + std::to_string(rng.range(1, 12));
    case 1: return "random:" + std::to_string(rng.range(1, std::max<int64_t>(1, seqlen)));
    case 2: {
      std::string s;
      int64_t sum = 0;
      while (true) {
        const int64_t len = rng.range(0, 3) == 0 ? rng.range(0, 1) : rng.range(0, 9);
        if (sum + len > seqlen) break;
        s += (s.empty() ? "" : ",") + std::to_string(len);
        sum += len;
        if (rng.range(0, 9) == 0) break;
      }
      return s.empty() ? "0" : s;
    }
    default: return "none";
  }
}

// A random rows case the staged kernels take: L a multiple of 8 (every dtype's vector), up to 8 *
// `most` vectors every fourth trial and 8 * `usually` otherwise, a random packing, states or not.
struct StagedCase {
  Options o;
  std::string lens;
  bool init;
};
StagedCase staged_case(Rng& rng, int trial, int64_t most, int64_t usually) {
  StagedCase c{random_options(rng, trial, 400), "", false};
  c.o.seqlen = 8 * rng.range(1, trial % 4 == 0 ? most : usually);
  c.lens = random_lens_spec(rng, c.o.seqlen, true);
  c.init = rng.range(0, 1) == 1;
  return c;
}

void expect_exact_zero_padding(const Options& o, const Packed& p, const HostArray& out_cf) {
  for (int64_t b = 0; b < o.batch; ++b)
    for (int64_t t = 0; t < o.seqlen; ++t)
      if (p.seq_idx[b * o.seqlen + t] < 0)
        for (int64_t d = 0; d < o.dim; ++d)
          ASSERT_EQ(out_cf.get((b * o.dim + d) * o.seqlen + t), 0.0)
              << "padding output at b=" << b << " d=" << d << " t=" << t;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Host side.

// What make_packed builds: one form (the rows form, or with `varlen` the varlen one), its packing,
// states or not, and the references of one direction.
PackSpec spec_of(bool varlen, const std::string& lens, bool init, bool backward = false) {
  PackSpec s;
  s.seq_lens = lens;
  s.initial_states = init;
  s.rows = !varlen;
  s.varlen = varlen;
  s.forward = !backward;
  s.backward = backward;
  return s;
}

TEST(Ch10Host, ParsesSeqLens) {
  std::vector<int64_t> lens;
  EXPECT_EQ(parse_seq_lens("3,0,1", 10, 1, false, &lens), "");
  EXPECT_EQ(lens, (std::vector<int64_t>{3, 0, 1}));
  EXPECT_NE(parse_seq_lens("3,0,1", 10, 1, true, &lens).find("sum to 4, not 10"),
            std::string::npos);
  EXPECT_NE(parse_seq_lens("8,8", 10, 1, false, &lens).find("more than 10"), std::string::npos);
  for (const char* bad : {"", "random:", "random:0", "random:x", "1,,2", "-1", "1;2", "abc"})
    EXPECT_NE(parse_seq_lens(bad, 10, 1, false, &lens), "") << bad;
  ASSERT_EQ(parse_seq_lens("random:64", 32768, 5, true, &lens), "");
  ASSERT_EQ(lens.size(), 64u);
  int64_t sum = 0;
  for (int64_t l : lens) sum += l;
  EXPECT_EQ(sum, 32768);
}

TEST(Ch10Host, SeqIdxRowsArePackedAndPadded) {
  std::vector<int32_t> seq;
  ASSERT_EQ(make_seq_idx("2,0,1", 2, 5, 1, &seq), "");
  EXPECT_EQ(seq, (std::vector<int32_t>{0, 0, 2, -1, -1, 0, 0, 2, -1, -1}));
  ASSERT_EQ(make_seq_idx("random:3", 4, 50, 9, &seq), "");
  for (int64_t b = 0; b < 4; ++b) {
    // Ids never decrease along a row but for padding; odd rows end in padding.
    int32_t last = -1;
    for (int64_t t = 0; t < 50; ++t)
      if (seq[b * 50 + t] >= 0) {
        EXPECT_GE(seq[b * 50 + t], last);
        last = seq[b * 50 + t];
      }
  }
}

TEST(Ch10Host, ChunksIncludePiecesShorterThanTheStates) {
  Options o = shape_options(1, 4, 40, 4, Dtype::fp32, false, false, 3);
  for (int k : {2, 3, 7}) {
    Packed p;
    PackSpec spec = spec_of(false, "none", false);
    spec.chunks = k;
    ASSERT_EQ(make_packed(o, spec, &p), "");
    ASSERT_EQ(p.chunk_lens.size(), size_t(k));
    int64_t at = 0;
    for (size_t i = 0; i < p.chunk_lens.size(); ++i) {
      EXPECT_EQ(p.chunk_starts[i], at);
      EXPECT_GE(p.chunk_lens[i], 1);
      at += p.chunk_lens[i];
    }
    EXPECT_EQ(at, 40);
    if (k >= 3) {
      EXPECT_EQ(p.chunk_lens[1], 1);
      EXPECT_EQ(p.chunk_lens[2], 2);
    }
  }
}

// Channel-first rows: every output is written by exactly one of the two kernels. The convolution
// stores the vectors it keeps (cf_left_to_policy false) whole; cf_row_edges the head and
// tail of each row (row_edges). Checked over the flat tensor for rows of every length up to three
// vectors and a few longer, 8 and 4 elements a vector, W 2 to 4.
template <int W, int kPer>
void expect_rows_covered_once(int64_t rows, int64_t len) {
  const int64_t n = rows * len;
  std::vector<int> writes(size_t(n), 0);
  for (int64_t e0 = 0; e0 < n; e0 += kPer) {  // the convolution's vectors
    const int64_t t0 = e0 % len;
    if (!cf_left_to_policy<W, kPer>(t0, len))
      for (int64_t i = 0; i < kPer; ++i) ++writes[size_t(e0 + i)];  // (inside one row: e0+i < n)
  }
  for (int64_t r = 0; r < rows; ++r) {  // cf_row_edges' threads
    const RowEdges e = row_edges<W, kPer>(r, len);
    ASSERT_LE(e.head, e.tail);
    for (int64_t t = 0; t < len; ++t)
      if (t < e.head || t >= e.tail) ++writes[size_t(r * len + t)];
  }
  for (int64_t e = 0; e < n; ++e)
    ASSERT_EQ(writes[size_t(e)], 1) << "W " << W << ", " << kPer << " a vector, L " << len
                                    << ": output " << e % len << " of row " << e / len;
}

// The words' workspace holds a word for every vector of every row, for every storage type.
TEST(Ch10Host, TapWordsFitTheirWorkspace) {
  for (int64_t batch : {1, 3, 8})
    for (int64_t len : {4, 8, 12, 24, 4096})
      for (int per : {4, 8})
        if (len % per == 0)
          EXPECT_GE(tap_words_bytes(batch, len), size_t(batch * (len / per)) * sizeof(uint32_t))
              << "B " << batch << " L " << len << ", " << per << " a vector";
}

TEST(Ch10Host, ChannelFirstRowsEveryOutputWrittenOnce) {
  for (int64_t len : {1, 2, 3, 5, 7, 8, 9, 11, 15, 16, 17, 23, 24, 25, 64, 67, 4096}) {
    expect_rows_covered_once<2, 8>(5, len);
    expect_rows_covered_once<3, 8>(5, len);
    expect_rows_covered_once<4, 8>(5, len);
    expect_rows_covered_once<2, 4>(5, len);
    expect_rows_covered_once<4, 4>(5, len);
  }
  // A row the convolution keeps whole vectors of: only its first vector is the edges'.
  const RowEdges e = row_edges<4, 8>(3, 4096);
  EXPECT_EQ(e.head, 8);
  EXPECT_EQ(e.tail, 4096);
}

// ---------------------------------------------------------------------------------------------
// The rows form against the fp64 reference.

TEST(Ch10Rows, MatchesReference) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  Rng rng(1010);
  for (int trial = 0; trial < 60; ++trial) {
    Options o = random_options(rng, trial, trial % 5 == 0 ? 600 : 140);
    if (trial % 3 == 0)
      o.seqlen = 8 * ceil_div(o.seqlen, int64_t(8));              // (the staged kernels' rows)
    if (trial % 2 == 0) o.dim = 8 * ceil_div(o.dim, int64_t(8));  // (cl_staged's rows of channels)
    const std::string lens = random_lens_spec(rng, o.seqlen, true);
    const bool init = rng.range(0, 1) == 1;
    const PackSpec spec = spec_of(false, lens, init);
    Packed p;
    ASSERT_EQ(make_packed(o, spec, &p), "") << describe(o, lens, init);
    // (The launch choices chapter 10's kernels are compiled for: ch10::compiled.)
    // (cf_staged with one block or two: each block takes many tiles in turn.)
    const int vectors = int(rng.range(1, 2));
    const int rows = std::vector<int>{8, 16, 32}[rng.range(0, o.dtype == Dtype::fp32 ? 2 : 1)];
    const int64_t blocks = std::vector<int64_t>{0, 1, 2}[rng.range(0, 2)];
    for (Layout l : {Layout::channel_first, Layout::channel_last}) {
      SCOPED_TRACE(describe(o, lens, init) + " " + layout_name(l) + " vectors " +
                   std::to_string(vectors) + " rows " + std::to_string(rows) + " blocks " +
                   std::to_string(blocks));
      const RowsResult r = run_rows(o, p, l, vectors, rows, nullptr, 0, 0, true, blocks);
      const VerifyReport out =
          verify("out", r.out, p.ref_rows, default_tolerance(o.dtype), {o.batch, o.dim, o.seqlen});
      EXPECT_TRUE(out.ok()) << out.summary() << "\n" << out.details();
      const VerifyReport fin = verify("final_states", r.final_states, p.ref_final, Tolerance{0, 0},
                                      {o.batch, o.dim, o.width - 1});
      EXPECT_TRUE(fin.ok()) << fin.summary() << "\n" << fin.details();
      if (!p.seq_idx.empty()) expect_exact_zero_padding(o, p, r.out);
      if (l == Layout::channel_first) continue;
      // Chapter 08's staged channel-last kernel: the same arithmetic a row, so the same bits.
      for (int staged : staged_choices(o)) {
        const RowsResult s = run_rows(o, p, l, vectors, rows, nullptr, 0, 0, true, 0, staged);
        EXPECT_TRUE(same_bits(s.out, r.out)) << "cl_staged with " << staged << " rows";
        EXPECT_TRUE(same_bits(s.final_states, r.final_states)) << "cl_staged " << staged;
      }
    }
  }
}

TEST(Ch10Rows, OneBatchManyShortSequencesWithStates) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  for (Dtype t : {Dtype::fp32, Dtype::bf16})
    for (int w : {2, 3, 4}) {
      const Options o = shape_options(1, 64, 333, w, t, true, true, 40 + w);
      const std::string lens = "1,0,1,2,3,1,1,0,0,5,1,2,1,7,1,1,1,3,2,1,9,1,4,0,1";
      const PackSpec spec = spec_of(false, lens, true);
      Packed p;
      ASSERT_EQ(make_packed(o, spec, &p), "");
      for (Layout l : {Layout::channel_first, Layout::channel_last}) {
        SCOPED_TRACE(describe(o, lens, true) + " " + layout_name(l));
        const RowsResult r = run_rows(o, p, l, 2, 16);
        EXPECT_TRUE(verify("out", r.out, p.ref_rows, default_tolerance(t)).ok());
        EXPECT_TRUE(verify("final_states", r.final_states, p.ref_final, Tolerance{0, 0}).ok());
        expect_exact_zero_padding(o, p, r.out);
      }
    }
}

// Channel-first rows of a length the vector divides on the staged kernel (with the words of taps)
// and on the chunked kernel and cf_row_edges: each output by the same arithmetic, so the bits must
// not change. Rows of a few long and many short sequences, padding, states or not, every dtype;
// the staged kernel with one block (every tile in turn), three, or as many as fit.
TEST(Ch10Rows, StagedGivesTheChunkedBits) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  Rng rng(2026);
  for (int trial = 0; trial < 30; ++trial) {
    const auto [o, lens, init] = staged_case(rng, trial, 64, 12);
    Packed p;
    ASSERT_EQ(make_packed(o, spec_of(false, lens, init), &p), "") << describe(o, lens, init);
    const int vectors = int(rng.range(1, 2));
    SCOPED_TRACE(describe(o, lens, init) + " vectors " + std::to_string(vectors));
    const int64_t blocks = std::vector<int64_t>{0, 1, 3}[rng.range(0, 2)];
    const RowsResult staged =
        run_rows(o, p, Layout::channel_first, vectors, 8, nullptr, 0, 0, true, blocks);
    const RowsResult chunked =
        run_rows(o, p, Layout::channel_first, vectors, 8, nullptr, 0, 0, /*cf_staged=*/false);
    EXPECT_TRUE(same_bits(staged.out, chunked.out)) << "outputs differ between the kernels";
    EXPECT_TRUE(same_bits(staged.final_states, chunked.final_states)) << "final states differ";
    const VerifyReport out = verify("out", staged.out, p.ref_rows, default_tolerance(o.dtype),
                                    {o.batch, o.dim, o.seqlen});
    EXPECT_TRUE(out.ok()) << out.summary() << "\n" << out.details();
    if (!p.seq_idx.empty()) expect_exact_zero_padding(o, p, staged.out);
  }
}

// ---------------------------------------------------------------------------------------------
// Chunked prefill: K chunks passing their final states on give the one-pass results bit for bit.

// One random case of the chunk tests: rows of one sequence each (with initial states or not), cut
// into k chunks, with the references of the direction asked for.
struct ChunkCase {
  Options o;
  PackSpec spec;
};
ChunkCase chunk_case(Rng& rng, int k, Dtype t, int w, int trial, bool backward) {
  const int64_t L = rng.range(2 * k + 3, 300);
  ChunkCase c;
  c.o = shape_options(rng.range(1, 3), 8 * rng.range(1, 6), L, w, t, rng.range(0, 1) == 1,
                      rng.range(0, 1) == 1, trial);
  c.spec = spec_of(false, "none", rng.range(0, 1) == 1, backward);
  c.spec.chunks = k;
  return c;
}

TEST(Ch10Chunks, BitForBitTheOnePass) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  Rng rng(31);
  int trial = 0;
  for (int k : {2, 3, 7})
    for (Dtype t : {Dtype::fp32, Dtype::fp16, Dtype::bf16})
      for (int w : {2, 3, 4}) {
        const auto [o, spec] = chunk_case(rng, k, t, w, ++trial, false);
        Packed p;
        ASSERT_EQ(make_packed(o, spec, &p), "");
        for (Layout l : {Layout::channel_first, Layout::channel_last}) {
          SCOPED_TRACE(describe(o, "none", spec.initial_states) + " " + layout_name(l) +
                       " K=" + std::to_string(k));
          const RowsResult one = run_rows(o, p, l, 1, 8);
          HostArray out(o.dtype, one.out.size());
          HostArray states = p.init;
          for (size_t c = 0; c < p.chunk_lens.size(); ++c) {
            const RowsResult piece =
                run_rows(o, p, l, 1, 8, &states, p.chunk_starts[c], p.chunk_lens[c]);
            put_chunk(out, piece.out, Layout::channel_first, o, p.chunk_starts[c], p.chunk_lens[c]);
            states = piece.final_states;
          }
          EXPECT_TRUE(same_bits(out, one.out)) << "outputs differ from one pass";
          EXPECT_TRUE(same_bits(states, one.final_states)) << "final states differ";
          EXPECT_TRUE(verify("out", out, p.ref_rows, default_tolerance(t)).ok());
          if (l == Layout::channel_first) continue;
          // The chunks on chapter 08's staged channel-last kernel (pieces of 1 and 2 time steps
          // among them): the one pass's bits again.
          for (int staged : staged_choices(o)) {
            HostArray s_out(o.dtype, one.out.size());
            HostArray s_states = p.init;
            for (size_t c = 0; c < p.chunk_lens.size(); ++c) {
              const RowsResult piece = run_rows(o, p, l, 1, 8, &s_states, p.chunk_starts[c],
                                                p.chunk_lens[c], true, 0, staged);
              put_chunk(s_out, piece.out, Layout::channel_first, o, p.chunk_starts[c],
                        p.chunk_lens[c]);
              s_states = piece.final_states;
            }
            EXPECT_TRUE(same_bits(s_out, one.out)) << "cl_staged " << staged << ": outputs";
            EXPECT_TRUE(same_bits(s_states, one.final_states)) << "cl_staged " << staged;
          }
        }
      }
}

// ---------------------------------------------------------------------------------------------
// Variable-length batches: tokens [B*L, D], a state cache read and written in place.

// A random packing of o's B*L tokens for the varlen form: an explicit list must cover every token,
// so it gets one more sequence with the tokens it leaves.
std::string varlen_lens(Rng& rng, const Options& o) {
  const std::string lens = random_lens_spec(rng, o.batch * o.seqlen, false);
  if (lens.rfind("random:", 0) == 0) return lens;
  std::vector<int64_t> parsed;
  EXPECT_EQ(parse_seq_lens(lens, o.batch * o.seqlen, 0, false, &parsed), "");
  int64_t sum = 0;
  for (int64_t v : parsed) sum += v;
  return lens + "," + std::to_string(o.batch * o.seqlen - sum);
}

TEST(Ch10Varlen, MatchesReference) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  Rng rng(2020);
  for (int trial = 0; trial < 40; ++trial) {
    Options o = random_options(rng, trial, trial % 5 == 0 ? 500 : 120);
    if (trial % 2 == 0) o.dim = 8 * ceil_div(o.dim, int64_t(8));  // (cl_staged's rows of channels)
    const std::string lens = varlen_lens(rng, o);
    const bool init = rng.range(0, 1) == 1;
    const PackSpec spec = spec_of(true, lens, init);
    Packed p;
    ASSERT_EQ(make_packed(o, spec, &p), "") << describe(o, lens, init);
    const int rows = std::vector<int>{8, 16, 32}[rng.range(0, o.dtype == Dtype::fp32 ? 2 : 1)];
    // cl_tiled (staged 0), then chapter 08's staged kernel where it takes the shape.
    std::vector<int> kernels{0};
    for (int r : staged_choices(o)) kernels.push_back(r);
    for (int staged : kernels) {
      SCOPED_TRACE(describe(o, lens, init) + " rows " + std::to_string(rows) + " staged " +
                   std::to_string(staged));
      const int64_t total = o.batch * o.seqlen;
      DeviceBuffer dx = upload(p.x_last), dw = upload(p.in.weight), db = upload(p.in.bias),
                   cu = upload_vec(p.cu_seqlens), slots = upload_vec(p.slots),
                   cache_buf(p.cache.bytes() + 16), out(p.x_last.bytes());
      out.poison();
      // Every fourth trial puts the cache one element past a 16-byte boundary: the edge work then
      // reads and writes the states a value at a time (sequences.cuh, load_states).
      char* cache = cache_buf.get<char>() + (trial % 4 == 3 ? dtype_bytes(o.dtype) : 0);
      GPU_CHECK(cudaMemcpy(cache, p.cache.data(), p.cache.bytes(), cudaMemcpyHostToDevice));
      dispatch_storage(o.dtype, [&](auto tag) {
        using T = device_t<typename decltype(tag)::type>;
        const ch08::DirectArgs<T> a{dx.get<const T>(),
                                    dw.get<const T>(),
                                    o.bias ? db.get<const T>() : nullptr,
                                    out.get<T>(),
                                    1,
                                    o.dim,
                                    total,
                                    o.silu};
        Forward<T> f =
            varlen_forward(a, cu.get<const int32_t>(), int32_t(p.lens.size()),
                           slots.get<const int32_t>(), reinterpret_cast<T*>(cache), init);
        f.cl_staged_rows = staged;
        launch_forward(f, o.width, 1, rows, now);
      });
      GPU_CHECK(cudaDeviceSynchronize());
      HostArray got(o.dtype, p.x_last.size()), got_cache(o.dtype, p.cache.size());
      download(got, out);
      GPU_CHECK(cudaMemcpy(got_cache.data(), cache, got_cache.bytes(), cudaMemcpyDeviceToHost));
      const VerifyReport r =
          verify("out", got, p.ref_varlen, default_tolerance(o.dtype), {total, o.dim});
      EXPECT_TRUE(r.ok()) << r.summary() << "\n" << r.details();
      const VerifyReport c = verify("state cache", got_cache, p.ref_cache, Tolerance{0, 0});
      EXPECT_TRUE(c.ok()) << c.summary() << "\n" << c.details();
    }
  }
}

TEST(Ch10Host, RefusesOverlappingRowStates) {
  // The rows form's final states are written while other threads may still read initial states:
  // the two may not overlap (the varlen cache is the in-place form). Refused before any launch.
  float buffer[64] = {};
  ch08::DirectArgs<float> a{buffer, buffer, nullptr, buffer, 2, 3, 5, false};
  const Forward<float> f = rows_forward(a, Layout::channel_first, nullptr, buffer + 4, buffer + 8);
  EXPECT_THROW(launch_forward(f, 4, 1, 8, now), std::invalid_argument);
  EXPECT_FALSE(ch10::overlap(buffer, 72, buffer + 18, 72));
  EXPECT_TRUE(ch10::overlap(buffer, 72, buffer + 17, 72));
}

// ---------------------------------------------------------------------------------------------
// The backward: dx, dweight, dbias and the states' gradients against the fp64 reference.

namespace {

// One backward run's results: dx in channel-first order ([B, D, L] or the varlen [total, D]).
struct Grads {
  HostArray dx;
  std::vector<float> dweight, dbias, dstates;
  std::string cf_kernel;  // (channel-first rows) the convolution that ran: cf_kernel_name
};

template <class V>
std::vector<V> download_vec(const void* device, size_t n) {
  std::vector<V> v(n);
  GPU_CHECK(cudaMemcpy(v.data(), device, n * sizeof(V), cudaMemcpyDeviceToHost));
  return v;
}

// Launches `b` (its partial-sum buffer allocated here) and copies dweight and dbias back.
template <class T>
void run_backward(Backward<T> b, int width, BwdChoices c, Grads* g) {
  c.access_bytes = backward_choices(b.args, 1).access_bytes;
  DeviceBuffer partials(size_t(partial_floats(backward_partials(b, width, c), b.args.dim, width)) *
                        sizeof(float));
  partials.poison();
  b.args.partials = partials.get<float>();
  launch_backward(b, width, c, now);
  GPU_CHECK(cudaDeviceSynchronize());
  g->dweight = download_vec<float>(b.args.dweight, size_t(b.args.dim * width));
  g->dbias = download_vec<float>(b.args.dbias, size_t(b.args.dim));
}

// The rows form's backward of `p` in layout l with launch choices c; the time steps [start,
// start + len) only when len > 0, starting from `init` and receiving `dfinal` instead of p's.
// `words`: give it room for the words of taps (channel-first rows with seq_idx of a length the
// vector divides use them on the staged kernel). `staged`: let the staged kernel take the rows
// where it can, at most `blocks` blocks of it when set; false: cf_fused.
Grads run_rows_backward(const Options& o, const Packed& p, Layout l, const BwdChoices& c,
                        const HostArray* init = nullptr, const std::vector<float>* dfinal = nullptr,
                        int64_t start = 0, int64_t len = 0, bool words = true, bool staged = true,
                        int64_t blocks = 0) {
  const bool cl = l == Layout::channel_last;
  const int64_t L = len > 0 ? len : o.seqlen, S = o.width - 1;
  auto piece = [&](const HostArray& cf) {
    const HostArray full = cl ? transposed(cf, o.batch, o.dim, o.seqlen) : cf;
    return len > 0 ? chunk_of(full, l, o, start, len) : full;
  };
  const HostArray x = piece(p.in.x), g = piece(p.dout);
  const HostArray& states = init ? *init : p.init;
  const std::vector<float>& dfin = dfinal ? *dfinal : p.dfinal_rows;
  const size_t n_states = size_t(o.batch * o.dim * S);
  DeviceBuffer dx_in = upload(x), dg = upload(g), dw = upload(p.in.weight), db = upload(p.in.bias),
               dinit = upload(states), dseq = upload_vec(p.seq_idx), dfin_d = upload_vec(dfin),
               dx_out(x.bytes()), dinit_out(n_states * sizeof(float)),
               dweight(size_t(o.dim * o.width) * sizeof(float)),
               dbias(size_t(o.dim) * sizeof(float)),
               word_room(words ? tap_words_bytes(o.batch, L) : 0);
  for (DeviceBuffer* d : {&dx_out, &dinit_out, &dweight, &dbias, &word_room}) d->poison();
  Grads r;
  dispatch_storage(o.dtype, [&](auto tag) {
    using T = device_t<typename decltype(tag)::type>;
    const ch09::BwdArgs<T> a{dx_in.get<const T>(),
                             dg.get<const T>(),
                             dw.get<const T>(),
                             o.bias ? db.get<const T>() : nullptr,
                             dx_out.get<T>(),
                             nullptr,
                             dweight.get<float>(),
                             dbias.get<float>(),
                             o.batch,
                             o.dim,
                             L,
                             o.silu,
                             false};
    Backward<T> b = with_tap_words(
        rows_backward(a, l, p.seq_idx.empty() ? nullptr : dseq.get<const int32_t>(),
                      states.empty() ? nullptr : dinit.get<const T>(),
                      dfin.empty() ? nullptr : dfin_d.get<const float>(), dinit_out.get<float>()),
        word_room.get());
    b.staged = staged;
    b.cf_blocks = blocks;
    r.cf_kernel = cf_kernel_name(b);
    run_backward(b, o.width, c, &r);
  });
  r.dx = HostArray(o.dtype, x.size());
  download(r.dx, dx_out);
  if (cl) r.dx = transposed(r.dx, o.batch, L, o.dim);
  r.dstates = download_vec<float>(dinit_out.get(), n_states);
  return r;
}

void expect_gradients(const Options& o, const GradRef& want, const Grads& got,
                      const std::vector<int64_t>& dims, const char* states_name) {
  const std::vector<double> dw(got.dweight.begin(), got.dweight.end()),
      db(got.dbias.begin(), got.dbias.end()), ds(got.dstates.begin(), got.dstates.end());
  const VerifyReport rx = verify("dx", got.dx, want.dx, default_tolerance(o.dtype), dims);
  EXPECT_TRUE(rx.ok()) << rx.summary() << "\n" << rx.details();
  const VerifyReport rw = verify("dweight", dw, want.dweight, want.dweight_tol, {o.dim, o.width});
  EXPECT_TRUE(rw.ok()) << rw.summary() << "\n" << rw.details();
  const VerifyReport rb = verify("dbias", db, want.dbias, want.dbias_tol, {o.dim});
  EXPECT_TRUE(rb.ok()) << rb.summary() << "\n" << rb.details();
  const VerifyReport rs = verify(states_name, ds, want.dstates, default_tolerance(Dtype::fp32));
  EXPECT_TRUE(rs.ok()) << rs.summary() << "\n" << rs.details();
}

// Launch choices chapter 10's kernels are compiled for (ch10::compiled); the access is the
// chapter's own choice for the shape (run_backward).
BwdChoices random_choices(Rng& rng, Dtype t) {
  const bool fp32 = t == Dtype::fp32;
  BwdChoices c;
  c.vectors = std::vector<int>{1, 2, 4}[rng.range(0, fp32 ? 1 : 2)];
  c.rows = std::vector<int>{16, 32, 64}[rng.range(0, fp32 ? 2 : 1)];
  c.staged_rows = std::vector<int>{0, 16, 64}[rng.range(0, 2)];  // (0: cl_tiled)
  return c;
}

}  // namespace

TEST(Ch10RowsBackward, MatchesReference) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  Rng rng(3030);
  for (int trial = 0; trial < 50; ++trial) {
    Options o = random_options(rng, trial, trial % 5 == 0 ? 600 : 140);
    if (trial % 3 == 0)
      o.seqlen = 8 * ceil_div(o.seqlen, int64_t(8));              // (the staged kernels' rows)
    if (trial % 2 == 0) o.dim = 8 * ceil_div(o.dim, int64_t(8));  // (cl_staged's rows of channels)
    const std::string lens = random_lens_spec(rng, o.seqlen, true);
    const bool init = rng.range(0, 1) == 1;
    const PackSpec spec = spec_of(false, lens, init, true);
    Packed p;
    ASSERT_EQ(make_packed(o, spec, &p), "") << describe(o, lens, init);
    const BwdChoices c = random_choices(rng, o.dtype);
    for (Layout l : {Layout::channel_first, Layout::channel_last}) {
      SCOPED_TRACE(describe(o, lens, init) + " " + layout_name(l) + " vectors " +
                   std::to_string(c.vectors) + " rows " + std::to_string(c.rows) + " staged rows " +
                   std::to_string(c.staged_rows));
      const Grads r = run_rows_backward(o, p, l, c);
      expect_gradients(o, p.grad_rows, r, {o.batch, o.dim, o.seqlen}, "dinitial_states");
      if (!p.seq_idx.empty())  // padding receives no gradient: exactly 0
        expect_exact_zero_padding(o, p, r.dx);
      if (l == Layout::channel_last) {  // cl_staged and cl_tiled: the same dx and dstates bits
        BwdChoices other = c;
        other.staged_rows = c.staged_rows ? 0 : 64;
        const Grads q = run_rows_backward(o, p, l, other);
        EXPECT_TRUE(same_bits(q.dx, r.dx)) << "dx differs between cl_staged and cl_tiled";
        EXPECT_TRUE(same_bits(q.dstates, r.dstates)) << "dinitial_states differ";
      }
    }
  }
}

TEST(Ch10RowsBackward, OneBatchManyShortSequencesWithStates) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  for (Dtype t : {Dtype::fp32, Dtype::bf16})
    for (int w : {2, 3, 4})
      for (int64_t len : {333, 336}) {  // (336: the staged kernel's rows)
        const Options o = shape_options(1, 64, len, w, t, true, true, 50 + w);
        const std::string lens = "1,0,1,2,3,1,1,0,0,5,1,2,1,7,1,1,1,3,2,1,9,1,4,0,1";
        const PackSpec spec = spec_of(false, lens, true, true);
        Packed p;
        ASSERT_EQ(make_packed(o, spec, &p), "");
        for (Layout l : {Layout::channel_first, Layout::channel_last}) {
          SCOPED_TRACE(describe(o, lens, true) + " " + layout_name(l));
          for (int staged_rows : {0, 16}) {
            const Grads r = run_rows_backward(o, p, l, BwdChoices{2, 16, 0, staged_rows});
            expect_gradients(o, p.grad_rows, r, {o.batch, o.dim, o.seqlen}, "dinitial_states");
            expect_exact_zero_padding(o, p, r.dx);
          }
        }
      }
}

// Channel-last rows whose sequences end early, so that whole tiles of the staged kernel (16 and
// 64 rows a warp) hold nothing but padding and take its shortcut (dx written as zeros, nothing
// added to the sums): the reference's gradients, exactly 0 at padding, and the same dx and
// dinitial_states bits as cl_tiled, which walks every tile. Widths 2-4, states or not, bias and
// SiLU on (SiLU of padding is not 0 before the mask; the shortcut must not care).
TEST(Ch10RowsBackward, ChannelLastTilesOfPadding) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  for (Dtype t : {Dtype::bf16, Dtype::fp32})
    for (int w : {2, 3, 4})
      for (bool init : {false, true}) {
        const Options o = shape_options(2, 24, 700, w, t, true, true, uint64_t(80 + w));
        const std::string lens = "37,1,0,90";  // (then 572 positions of padding in every row)
        Packed p;
        ASSERT_EQ(make_packed(o, spec_of(false, lens, init, true), &p), "");
        SCOPED_TRACE(describe(o, lens, init));
        const Grads tiled = run_rows_backward(o, p, Layout::channel_last, BwdChoices{1, 16, 0, 0});
        for (int staged_rows : {16, 64}) {
          SCOPED_TRACE("staged rows " + std::to_string(staged_rows));
          const Grads r =
              run_rows_backward(o, p, Layout::channel_last, BwdChoices{1, 16, 0, staged_rows});
          expect_gradients(o, p.grad_rows, r, {o.batch, o.dim, o.seqlen}, "dinitial_states");
          expect_exact_zero_padding(o, p, r.dx);
          EXPECT_TRUE(same_bits(tiled.dx, r.dx)) << "dx differs from cl_tiled's";
          EXPECT_TRUE(same_bits(tiled.dstates, r.dstates)) << "dinitial_states differ";
        }
      }
}

// Four rows a warp (channel-first, 16-bit storage, no SiLU): when B*D is not a multiple of 4 a
// warp's last rows lie past the end and must write nothing, not even partial sums; rows of
// several chunks, of a length the vector divides (600) and not (601), on cf_fused either way.
TEST(Ch10RowsBackward, FourRowsAWarpWithRowsLeftOver) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  for (Dtype t : {Dtype::bf16, Dtype::fp16})
    for (const auto& [b, d] : {std::pair<int64_t, int64_t>{1, 5}, {3, 3}, {2, 7}})
      for (int64_t len : {600, 601}) {
        const Options o = shape_options(b, d, len, 4, t, true, false, uint64_t(70 + b * d));
        const std::string lens = "random:5";
        Packed p;
        ASSERT_EQ(make_packed(o, spec_of(false, lens, true, true), &p), "");
        SCOPED_TRACE(describe(o, lens, true));
        const Grads r = run_rows_backward(o, p, Layout::channel_first, BwdChoices{4, 16}, nullptr,
                                          nullptr, 0, 0, true, /*staged=*/false);
        ASSERT_EQ(r.cf_kernel, "conv_bwd_cf");
        expect_gradients(o, p.grad_rows, r, {o.batch, o.dim, o.seqlen}, "dinitial_states");
        expect_exact_zero_padding(o, p, r.dx);
      }
}

namespace {

// Chapter 10's channel-first rows on chapter 09's staged kernel (which reports itself as `kernel`)
// against cf_fused on the same rows: dx and dinitial_states the same bits (the same arithmetic a
// position), every gradient the same bits whatever the staged kernel's blocks (`blocks`), and both
// kernels' gradients within tolerance of the reference (dweight and dbias are summed in other
// units than cf_fused's). The staged kernel's gradients go to `out` when it is given.
void expect_staged_as_fused(const Options& o, const Packed& p, const BwdChoices& c, int64_t blocks,
                            const std::string& kernel, Grads* out = nullptr) {
  const Grads staged = run_rows_backward(o, p, Layout::channel_first, c);
  const Grads few =
      run_rows_backward(o, p, Layout::channel_first, c, nullptr, nullptr, 0, 0, true, true, blocks);
  const Grads fused = run_rows_backward(o, p, Layout::channel_first, c, nullptr, nullptr, 0, 0,
                                        true, /*staged=*/false);
  ASSERT_EQ(staged.cf_kernel, kernel);  // (else the comparison proves nothing)
  ASSERT_EQ(fused.cf_kernel, "conv_bwd_cf");
  EXPECT_TRUE(same_bits(staged.dx, fused.dx)) << "dx differs from cf_fused's";
  EXPECT_TRUE(same_bits(staged.dstates, fused.dstates)) << "dinitial_states differ from cf_fused's";
  EXPECT_TRUE(same_bits(staged.dx, few.dx) && same_bits(staged.dstates, few.dstates) &&
              same_bits(staged.dweight, few.dweight) && same_bits(staged.dbias, few.dbias))
      << "the staged kernel's results depend on its blocks";
  expect_gradients(o, p.grad_rows, staged, {o.batch, o.dim, o.seqlen}, "dinitial_states");
  expect_gradients(o, p.grad_rows, fused, {o.batch, o.dim, o.seqlen}, "dinitial_states");
  if (out) *out = staged;
}

}  // namespace

// Rows of one sequence each (no seq_idx) whose length the vector divides take chapter 09's staged
// kernel, the state before t = 0 and the final states' gradient by row: the same bits in dx and
// dinitial_states as cf_fused (the same arithmetic a position), and every gradient the same bits
// whatever the staged kernel's blocks (1 or 3: many tiles a block); dweight and dbias are summed
// in other units than cf_fused's, so within their tolerances of the reference. Pieces of a row
// (4104: a short last piece) and whole rows a tile (512, and B*D not a multiple of the rows a
// tile), initial states or zeros, every dtype, widths 2-4, bias and SiLU or not.
TEST(Ch10RowsBackward, RowsWithoutSeqIdxOnTheStagedKernel) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  int trial = 0;
  for (Dtype t : {Dtype::bf16, Dtype::fp16, Dtype::fp32})
    for (int w : {2, 3, 4})
      for (int64_t len : {4104, 512}) {
        ++trial;
        const Options o = shape_options(1 + trial % 2, 5 + trial % 4, len, w, t, trial % 2 == 0,
                                        trial % 3 == 0, uint64_t(900 + trial));
        const bool init = trial % 4 != 3;
        Packed p;
        ASSERT_EQ(make_packed(o, spec_of(false, "none", init, true), &p), "");
        const BwdChoices c{2, 16};
        const int64_t blocks = trial % 2 == 0 ? 1 : 3;
        SCOPED_TRACE(describe(o, "none", init) + " blocks " + std::to_string(blocks));
        ASSERT_NO_FATAL_FAILURE(expect_staged_as_fused(o, p, c, blocks, "conv_bwd_cf_staged"));
      }
}

// Rows with seq_idx whose length the vector divides take chapter 09's staged kernel with the
// forward's tap words: the same bits in dx and dinitial_states as cf_fused (the
// same products, skipped or added in the same order), every gradient the same bits whatever the
// staged kernel's blocks (1 or 3: many tiles a block), all of them within tolerance of the
// reference, and exactly 0 in dx at padding. Random packings (sequences of length 0 and 1, rows
// that end in padding; 8 documents a row in every third), states or not, every dtype, widths 2-4,
// bias and SiLU or not; pieces of a row (4104: a short last piece), whole rows a tile (512
// positions in 16-bit storage, 256 in fp32) and random lengths; last, rows of 4096 whose
// sequences end at 1601, without SiLU, so that whole warps hold nothing but padding.
TEST(Ch10RowsBackward, RowsWithSeqIdxOnTheStagedKernel) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  Rng rng(2028);
  for (int trial = 0; trial < 26; ++trial) {
    auto [o, lens, init] = staged_case(rng, trial, 200, 32);
    if (trial % 4 == 1) o.seqlen = o.dtype == Dtype::fp32 ? 256 : 512;
    if (trial % 4 == 2) o.seqlen = 4104;
    lens = trial % 3 == 0 ? "random:8" : random_lens_spec(rng, o.seqlen, /*allow_none=*/false);
    if (trial >= 24) {  // (for certain: whole warps of padding without SiLU, which count no tap)
      o.seqlen = 4096;
      o.dtype = trial == 24 ? Dtype::bf16 : Dtype::fp32;
      o.silu = false;
      lens = "700,1,0,900";
      init = true;
    }
    Packed p;
    ASSERT_EQ(make_packed(o, spec_of(false, lens, init, true), &p), "") << describe(o, lens, init);
    ASSERT_FALSE(p.seq_idx.empty());
    const BwdChoices c = random_choices(rng, o.dtype);
    const int64_t blocks = trial % 2 == 0 ? 1 : 3;
    SCOPED_TRACE(describe(o, lens, init) + " blocks " + std::to_string(blocks));
    Grads staged;
    ASSERT_NO_FATAL_FAILURE(expect_staged_as_fused(o, p, c, blocks, kWordsAndBackward, &staged));
    expect_exact_zero_padding(o, p, staged.dx);
  }
}

// Chunked training: the chunks run last to first, each receiving the next one's initial states'
// gradient as its final states' gradient. dx and the first chunk's initial states' gradient are the
// one pass's bits (the same products added in the same order); dweight and dbias are summed chunk
// by chunk, so they agree within their tolerances.
TEST(Ch10ChunksBackward, BitForBitTheOnePass) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  Rng rng(41);
  int trial = 0;
  for (int k : {2, 3, 7})
    for (Dtype t : {Dtype::fp32, Dtype::fp16, Dtype::bf16})
      for (int w : {2, 3, 4}) {
        const auto [o, spec] = chunk_case(rng, k, t, w, ++trial, true);
        Packed p;
        ASSERT_EQ(make_packed(o, spec, &p), "");
        const BwdChoices c = random_choices(rng, o.dtype);
        for (Layout l : {Layout::channel_first, Layout::channel_last}) {
          SCOPED_TRACE(describe(o, "none", spec.initial_states) + " " + layout_name(l) +
                       " K=" + std::to_string(k));
          const Grads one = run_rows_backward(o, p, l, c);
          Grads chunked;
          chunked.dx = HostArray(o.dtype, one.dx.size());
          chunked.dweight.assign(one.dweight.size(), 0.0f);
          chunked.dbias.assign(one.dbias.size(), 0.0f);
          std::vector<float> dfinal = p.dfinal_rows;
          for (int64_t i = int64_t(p.chunk_lens.size()) - 1; i >= 0; --i) {
            const Grads piece = run_rows_backward(o, p, l, c, &p.chunk_init[i], &dfinal,
                                                  p.chunk_starts[i], p.chunk_lens[i]);
            put_chunk(chunked.dx, piece.dx, Layout::channel_first, o, p.chunk_starts[i],
                      p.chunk_lens[i]);
            for (size_t j = 0; j < piece.dweight.size(); ++j)
              chunked.dweight[j] += piece.dweight[j];
            for (size_t j = 0; j < piece.dbias.size(); ++j) chunked.dbias[j] += piece.dbias[j];
            dfinal = piece.dstates;
          }
          chunked.dstates = dfinal;
          EXPECT_TRUE(same_bits(chunked.dx, one.dx)) << "dx differs from one pass";
          EXPECT_TRUE(same_bits(chunked.dstates, one.dstates))
              << "the initial states' gradient differs from one pass";
          expect_gradients(o, p.grad_rows, chunked, {o.batch, o.dim, o.seqlen}, "dinitial_states");
        }
      }
}

TEST(Ch10VarlenBackward, MatchesReference) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  Rng rng(5050);
  for (int trial = 0; trial < 40; ++trial) {
    Options o = random_options(rng, trial, trial % 5 == 0 ? 500 : 120);
    const std::string lens = varlen_lens(rng, o);
    const bool init = rng.range(0, 1) == 1;
    const PackSpec spec = spec_of(true, lens, init, true);
    Packed p;
    ASSERT_EQ(make_packed(o, spec, &p), "") << describe(o, lens, init);
    const BwdChoices c = random_choices(rng, o.dtype);
    SCOPED_TRACE(describe(o, lens, init) + " rows " + std::to_string(c.rows) + " staged rows " +
                 std::to_string(c.staged_rows));

    const int64_t total = o.batch * o.seqlen;
    const std::vector<float> untouched(p.dfinal_cache.size(), kUntouched);
    DeviceBuffer dx_in = upload(p.x_last), dg = upload(p.dout_last), dw = upload(p.in.weight),
                 db = upload(p.in.bias), cu = upload_vec(p.cu_seqlens), slots = upload_vec(p.slots),
                 cache = upload(p.cache), dfinal = upload_vec(p.dfinal_cache),
                 dstates = upload_vec(untouched), dx_out(p.x_last.bytes()),
                 dweight(size_t(o.dim * o.width) * sizeof(float)),
                 dbias(size_t(o.dim) * sizeof(float));
    for (DeviceBuffer* d : {&dx_out, &dweight, &dbias}) d->poison();
    Grads r;
    dispatch_storage(o.dtype, [&](auto tag) {
      using T = device_t<typename decltype(tag)::type>;
      const ch09::BwdArgs<T> a{dx_in.get<const T>(),
                               dg.get<const T>(),
                               dw.get<const T>(),
                               o.bias ? db.get<const T>() : nullptr,
                               dx_out.get<T>(),
                               nullptr,
                               dweight.get<float>(),
                               dbias.get<float>(),
                               1,
                               o.dim,
                               total,
                               o.silu,
                               false};
      run_backward(varlen_backward(a, cu.get<const int32_t>(), int32_t(p.lens.size()),
                                   slots.get<const int32_t>(), cache.get<const T>(), init,
                                   dfinal.get<const float>(), dstates.get<float>()),
                   o.width, c, &r);
    });
    r.dx = HostArray(o.dtype, p.x_last.size());
    download(r.dx, dx_out);
    r.dstates = download_vec<float>(dstates.get(), p.dfinal_cache.size());
    expect_gradients(o, p.grad_varlen, r, {total, o.dim}, "dstates (by cache row)");
  }
}
