#include "chapters/10_packed_sequences/packing.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "chapters/06_channel_last_backward/backward_problem.h"
#include "common/reference.h"

namespace conv1d::ch10 {

namespace {

// N lengths summing to `total`: N-1 cut points drawn uniformly in [0, total], sorted.
std::vector<int64_t> random_lengths(int64_t n, int64_t total, Rng& r) {
  std::vector<int64_t> cuts{0, total};
  for (int64_t i = 0; i + 1 < n; ++i) cuts.push_back(r.range(0, total));
  std::sort(cuts.begin(), cuts.end());
  std::vector<int64_t> lens;
  for (size_t i = 1; i < cuts.size(); ++i) lens.push_back(cuts[i] - cuts[i - 1]);
  return lens;
}

}  // namespace

std::string parse_seq_lens(const std::string& spec, int64_t total, uint64_t seed, bool exact,
                           std::vector<int64_t>* lens) {
  lens->clear();
  const std::string where = "--seq-lens " + spec + ": ";
  if (spec.rfind("random:", 0) == 0) {
    const std::string n = spec.substr(7);
    if (n.empty() || n.size() > 7 || n.find_first_not_of("0123456789") != std::string::npos ||
        std::stoll(n) < 1)
      return where + "random:N needs a count N from 1 to 9999999";
    Rng r(seed);
    *lens = random_lengths(std::stoll(n), total, r);
    return "";
  }
  int64_t sum = 0;
  size_t at = 0;
  while (at <= spec.size()) {
    const size_t comma = std::min(spec.find(',', at), spec.size());
    const std::string item = spec.substr(at, comma - at);
    if (item.empty() || item.size() > 12 ||
        item.find_first_not_of("0123456789") != std::string::npos)
      return where + "expected random:N, none or a list of lengths like 100,0,1,27";
    lens->push_back(std::stoll(item));
    sum += lens->back();
    at = comma + 1;
  }
  if (exact ? sum != total : sum > total)
    return where + "the lengths sum to " + std::to_string(sum) +
           (exact ? ", not " : ", more than ") + std::to_string(total) +
           (exact ? " (B*L tokens)" : " (L)");
  return "";
}

std::string make_seq_idx(const std::string& spec, int64_t batch, int64_t seqlen, uint64_t seed,
                         std::vector<int32_t>* seq_idx) {
  seq_idx->assign(static_cast<size_t>(batch * seqlen), -1);
  const bool random = spec.rfind("random:", 0) == 0;
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<int64_t> lens;
    const std::string err = parse_seq_lens(spec, seqlen, seed + 1000 * uint64_t(b), false, &lens);
    if (!err.empty()) return err;
    int64_t t = 0;
    for (size_t j = 0; j < lens.size(); ++j) {
      const bool padding = random && b % 2 == 1 && j + 1 == lens.size();
      for (int64_t i = 0; i < lens[j]; ++i, ++t)
        (*seq_idx)[b * seqlen + t] = padding ? -1 : static_cast<int32_t>(j);
    }
  }
  return "";
}

namespace {

// n random values in [-1, 1) in fp32, from `seed`.
std::vector<float> random_floats(size_t n, uint64_t seed) {
  HostArray a(Dtype::fp32, n);
  fill_uniform(a, seed);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(a.get(i));
  return v;
}

// The tolerances of a reference's sums from the sizes of their terms (chapter 06).
void sum_tolerances(GradRef* g, const std::vector<double>& dw_sq,
                    const std::vector<double>& db_sq) {
  double w = 0, b = 0;
  for (double v : dw_sq) w += v;
  for (double v : db_sq) b += v;
  g->dweight_tol = ch06::sum_tolerance(w, static_cast<int64_t>(dw_sq.size()));
  g->dbias_tol = ch06::sum_tolerance(b, static_cast<int64_t>(db_sq.size()));
}

// The backward reference of a rows-form problem (channel-first), with the sums' tolerances.
GradRef rows_gradients(const RefProblem& rp, const std::vector<double>& dout,
                       const std::vector<double>& dfinal) {
  const ConvShape& s = rp.shape;
  GradRef g;
  g.dx.resize(static_cast<size_t>(s.elements()));
  g.dweight.resize(static_cast<size_t>(s.dim * s.width));
  g.dbias.resize(static_cast<size_t>(s.dim));
  g.dstates.resize(static_cast<size_t>(s.batch * s.dim * (s.width - 1)));
  std::vector<double> dw_sq(g.dweight.size()), db_sq(g.dbias.size());
  reference_backward(rp, dout.data(),
                     RefGrads{g.dx.data(), g.dweight.data(), g.dbias.data(), g.dstates.data(),
                              dw_sq.data(), db_sq.data()},
                     dfinal.empty() ? nullptr : dfinal.data());
  sum_tolerances(&g, dw_sq, db_sq);
  return g;
}

}  // namespace

std::string make_packed(const Options& o, const PackSpec& spec, Packed* p) {
  const int64_t B = o.batch, D = o.dim, L = o.seqlen, S = o.width - 1;
  p->in = draw_inputs(o);
  const ConvShape shape{B, D, L, o.width};
  if (spec.backward) {
    p->dout = HostArray(o.dtype, static_cast<size_t>(B * D * L));
    fill_uniform(p->dout, o.seed + 8);
    p->dout_last = transposed(p->dout, B, D, L);
  }
  // The filters in fp64, for the varlen reference (the rows form's RefInputs has them too).
  const std::vector<double> weight = p->in.weight.to_double(), bias = p->in.bias.to_double();
  if (spec.rows) {
    // Only the rows form reads x and dout in fp64 [B, D, L]: 8 bytes an element each, which a
    // varlen run at 2^31 elements cannot spare.
    const RefInputs ref_in(p->in);
    const std::vector<double> dout = spec.backward ? p->dout.to_double() : std::vector<double>();
    if (spec.initial_states) {
      p->init = HostArray(o.dtype, static_cast<size_t>(B * D * S));
      fill_uniform(p->init, o.seed + 3);
    }
    if (spec.seq_lens != "none") {
      const std::string err = make_seq_idx(spec.seq_lens, B, L, o.seed + 4, &p->seq_idx);
      if (!err.empty()) return err;
    }
    const std::vector<double> init = p->init.to_double();
    RefProblem rp = ref_in.problem(shape, Layout::channel_first, o.silu);
    rp.initial_states = init.empty() ? nullptr : init.data();
    rp.seq_idx = p->seq_idx.empty() ? nullptr : p->seq_idx.data();
    const RefProblem plain = ref_in.problem(shape, Layout::channel_first, o.silu);
    if (spec.forward) {
      p->ref_rows.resize(static_cast<size_t>(B * D * L));
      p->ref_final.resize(static_cast<size_t>(B * D * S));
      reference_forward(rp, p->ref_rows.data(), p->ref_final.data());
      p->ref_plain.resize(static_cast<size_t>(B * D * L));
      reference_forward(plain, p->ref_plain.data());
    }
    if (spec.backward) {
      p->dfinal_rows = random_floats(static_cast<size_t>(B * D * S), o.seed + 9);
      const std::vector<double> dfinal(p->dfinal_rows.begin(), p->dfinal_rows.end());
      p->grad_rows = rows_gradients(rp, dout, dfinal);
      p->grad_plain = rows_gradients(plain, dout, {});
      p->grad_plain.dstates.clear();
    }
  }
  if (spec.rows && spec.chunks > 1) {
    // Near-equal pieces, with a piece of 1 and one of 2 time steps after the first when there are
    // three pieces or more: chunks shorter than the W-1 states, whose final states reach back into
    // their initial states.
    const int64_t k = spec.chunks, shorts = k >= 3 ? 2 : 0, rest = L - (k >= 3 ? 3 : 0);
    std::vector<int64_t> pieces;
    for (int64_t i = 0; i < k - shorts; ++i)
      pieces.push_back(rest / (k - shorts) + (i < rest % (k - shorts) ? 1 : 0));
    if (shorts) pieces.insert(pieces.begin() + 1, {1, 2});
    int64_t start = 0;
    for (int64_t len : pieces) {
      p->chunk_starts.push_back(start);
      p->chunk_lens.push_back(len);
      // Its initial states: the W-1 inputs before it (the row's initial states, or zeros, before
      // t = 0), what the previous chunk's final states are.
      HostArray init(o.dtype, static_cast<size_t>(B * D * S));
      for (int64_t r = 0; r < B * D; ++r)
        for (int64_t j = 0; j < S; ++j) {
          const int64_t t = start - S + j;
          const size_t at = static_cast<size_t>(r * S + j);
          if (t >= 0)
            init.set(at, p->in.x.get(static_cast<size_t>(r * L + t)));
          else
            init.set(at, p->init.empty() ? 0.0 : p->init.get(static_cast<size_t>(r * S + S + t)));
        }
      p->chunk_init.push_back(std::move(init));
      start += len;
    }
  }
  p->x_last = transposed(p->in.x, B, D, L);
  if (spec.varlen) {
    const int64_t total = B * L;
    std::string err = parse_seq_lens(spec.seq_lens, total, o.seed + 5, true, &p->lens);
    if (!err.empty()) return err;
    const int64_t N = static_cast<int64_t>(p->lens.size());
    if (N > (int64_t(1) << 24)) return "--seq-lens: at most 2^24 sequences";
    p->cu_seqlens.assign(1, 0);
    for (int64_t len : p->lens)
      p->cu_seqlens.push_back(static_cast<int32_t>(p->cu_seqlens.back() + len));
    // A cache with room for more sequences than this batch has; each sequence its own random row,
    // one in eight none (from zeros, nothing written back).
    const int64_t C = N + N / 2 + 1;
    std::vector<int32_t> rows(static_cast<size_t>(C));
    for (int64_t i = 0; i < C; ++i) rows[i] = static_cast<int32_t>(i);
    Rng r(o.seed + 6);
    for (int64_t i = C - 1; i > 0; --i) std::swap(rows[i], rows[r.range(0, i)]);
    p->slots.resize(static_cast<size_t>(N));
    for (int64_t n = 0; n < N; ++n) p->slots[n] = r.range(0, 7) == 0 ? -1 : rows[n];
    p->cache = HostArray(o.dtype, static_cast<size_t>(C * D * S));
    fill_uniform(p->cache, o.seed + 7);
    p->states_written =
        std::count_if(p->slots.begin(), p->slots.end(), [](int32_t s) { return s >= 0; });
    p->states_read = spec.initial_states ? p->states_written : 0;

    const std::vector<double> tokens = p->x_last.to_double(), cache = p->cache.to_double();
    RefVarlen v;
    v.dim = D;
    v.width = o.width;
    v.x = tokens.data();
    v.weight = weight.data();
    v.bias = bias.empty() ? nullptr : bias.data();
    v.cu_seqlens = p->cu_seqlens.data();
    v.sequences = N;
    v.states = spec.initial_states ? cache.data() : nullptr;
    v.state_indices = p->slots.data();
    v.silu = o.silu;
    if (spec.forward) {
      p->ref_varlen.resize(static_cast<size_t>(total * D));
      p->ref_cache = cache;
      reference_varlen_forward(v, p->ref_varlen.data(), p->ref_cache.data());
    }
    if (spec.backward) {
      p->dfinal_cache = random_floats(static_cast<size_t>(C * D * S), o.seed + 10);
      const std::vector<double> dfinal(p->dfinal_cache.begin(), p->dfinal_cache.end());
      const std::vector<double> dout_tokens = p->dout_last.to_double();
      GradRef& g = p->grad_varlen;
      g.dx.resize(static_cast<size_t>(total * D));
      g.dweight.resize(static_cast<size_t>(D * o.width));
      g.dbias.resize(static_cast<size_t>(D));
      g.dstates.assign(static_cast<size_t>(C * D * S), kUntouched);
      std::vector<double> dw_sq(g.dweight.size()), db_sq(g.dbias.size());
      RefVarlenGrads rg;
      rg.dx = g.dx.data();
      rg.dweight = g.dweight.data();
      rg.dbias = g.dbias.data();
      rg.dstates = g.dstates.data();
      rg.dweight_sq = dw_sq.data();
      rg.dbias_sq = db_sq.data();
      reference_varlen_backward(v, dout_tokens.data(), dfinal.data(), rg);
      sum_tolerances(&g, dw_sq, db_sq);
    }
  }
  return "";
}

std::string Packed::summary() const {
  std::string s;
  if (!seq_idx.empty()) {
    int64_t runs = 0, padding = 0;
    for (size_t i = 0; i < seq_idx.size(); ++i) {
      padding += seq_idx[i] < 0;
      runs += seq_idx[i] >= 0 && (i == 0 || seq_idx[i - 1] != seq_idx[i]);
    }
    s += "rows: " + std::to_string(runs) + " sequences, " + std::to_string(padding) +
         " padding tokens";
  }
  if (!lens.empty()) {
    const int64_t empty = std::count(lens.begin(), lens.end(), 0);
    s += std::string(s.empty() ? "" : "; ") + "varlen: " + std::to_string(lens.size()) +
         " sequences (" + std::to_string(empty) + " empty, longest " +
         std::to_string(*std::max_element(lens.begin(), lens.end())) + "), " +
         std::to_string(states_read) + " states read, " + std::to_string(states_written) +
         " written";
  }
  return s;
}

HostArray chunk_of(const HostArray& x, Layout l, const Options& o, int64_t start, int64_t len) {
  const bool cf = l == Layout::channel_first;
  const int64_t outer = cf ? o.batch * o.dim : o.batch, inner = cf ? 1 : o.dim;
  const size_t e = static_cast<size_t>(dtype_bytes(x.dtype()));
  HostArray c(x.dtype(), static_cast<size_t>(outer * len * inner));
  for (int64_t r = 0; r < outer; ++r)
    std::memcpy(static_cast<char*>(c.data()) + r * len * inner * e,
                static_cast<const char*>(x.data()) + (r * o.seqlen + start) * inner * e,
                len * inner * e);
  return c;
}

void put_chunk(HostArray& x, const HostArray& chunk, Layout l, const Options& o, int64_t start,
               int64_t len) {
  const bool cf = l == Layout::channel_first;
  const int64_t outer = cf ? o.batch * o.dim : o.batch, inner = cf ? 1 : o.dim;
  const size_t e = static_cast<size_t>(dtype_bytes(x.dtype()));
  for (int64_t r = 0; r < outer; ++r)
    std::memcpy(static_cast<char*>(x.data()) + (r * o.seqlen + start) * inner * e,
                static_cast<const char*>(chunk.data()) + r * len * inner * e, len * inner * e);
}

}  // namespace conv1d::ch10
