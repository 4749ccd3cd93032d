#include "chapters/11_decode_update/decode.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "chapters/10_packed_sequences/packing.h"
#include "common/reference.h"

namespace conv1d::ch11 {

const char* buffer_name(Buffer b) { return b == Buffer::linear ? "linear" : "circular"; }

int64_t state_len_of(const Options& o, const DecodeFlags& f) {
  return f.state_len > 0 ? f.state_len : o.width - 1;
}

int64_t cache_rows_of(const Options& o, const DecodeFlags& f) {
  return f.cache_rows > 0 ? f.cache_rows : (f.gather ? 2 * o.batch : o.batch);
}

bool vector_kernel_fits(const Options& o, const DecodeFlags& f) {
  return state_len_of(o, f) == o.width - 1 && o.dim % (16 / dtype_bytes(o.dtype)) == 0;
}

std::string check_flags(const Options& o, const DecodeFlags& f) {
  if (o.seqlen > kMaxTokens)
    return "--seqlen is the number of new tokens per decoding step here, 1.." +
           std::to_string(kMaxTokens) + " (got " + std::to_string(o.seqlen) + ")";
  if (f.state_len != 0 && f.state_len < o.width - 1)
    return "--state-len must be at least --width - 1 = " + std::to_string(o.width - 1) +
           " (the window of an output reaches W-1 inputs back; got " + std::to_string(f.state_len) +
           ")";
  if (f.cache_rows != 0 && f.cache_rows < o.batch)
    return "--cache-rows must be at least --batch = " + std::to_string(o.batch) + " (got " +
           std::to_string(f.cache_rows) + ")";
  if (f.kernel == "vector" && !vector_kernel_fits(o, f))
    return "--kernel vector needs --state-len " + std::to_string(o.width - 1) +
           " (W-1) and --dim a multiple of " + std::to_string(16 / dtype_bytes(o.dtype)) +
           " (16 bytes of channels); --kernel channel takes any shape";
  if (f.threads != 0 && f.threads != 64 && f.threads != 128 && f.threads != 256 && f.threads != 512)
    return "--threads must be 0 (the launch chooses), 64, 128, 256 or 512 (got " +
           std::to_string(f.threads) + ")";
  int64_t bd = 0, tokens = 0, per_tensor = 0, cache = 0;
  if (!checked_mul(o.batch, o.dim, &bd) || !checked_mul(f.steps, o.seqlen, &tokens) ||
      !checked_mul(bd, tokens, &per_tensor) || per_tensor > Limits::max_elements)
    return "--steps x --batch x --dim x --seqlen exceeds the limit of " +
           std::to_string(Limits::max_elements) +
           " elements (the loop keeps every step's x and out)";
  if (!checked_mul(cache_rows_of(o, f) * o.dim, state_len_of(o, f), &cache) ||
      cache > Limits::max_elements)
    return "--cache-rows x --dim x --state-len exceeds the limit of " +
           std::to_string(Limits::max_elements) + " elements";
  return "";
}

namespace {

// Copies n elements of the same dtype, bits unchanged.
void copy_elements(HostArray& dst, int64_t at, const HostArray& src, int64_t from, int64_t n) {
  const size_t e = static_cast<size_t>(dtype_bytes(src.dtype()));
  std::memcpy(static_cast<char*>(dst.data()) + at * e,
              static_cast<const char*>(src.data()) + from * e, n * e);
}

}  // namespace

HostArray rows_of_steps(const HostArray& steps, const Options& o, int64_t n_steps) {
  Options rows = o;
  rows.seqlen = o.seqlen * n_steps;
  HostArray r(steps.dtype(), steps.size());
  const int64_t one_step = o.batch * o.dim * o.seqlen;
  HostArray piece(steps.dtype(), static_cast<size_t>(one_step));
  for (int64_t k = 0; k < n_steps; ++k) {
    copy_elements(piece, 0, steps, k * one_step, one_step);
    ch10::put_chunk(r, piece, Layout::channel_first, rows, k * o.seqlen, o.seqlen);
  }
  return r;
}

HostArray steps_of_rows(const HostArray& rows, const Options& o, int64_t n_steps) {
  Options in_rows = o;
  in_rows.seqlen = o.seqlen * n_steps;
  HostArray s(rows.dtype(), rows.size());
  const int64_t one_step = o.batch * o.dim * o.seqlen;
  for (int64_t k = 0; k < n_steps; ++k)
    copy_elements(s, k * one_step,
                  ch10::chunk_of(rows, Layout::channel_first, in_rows, k * o.seqlen, o.seqlen), 0,
                  one_step);
  return s;
}

Decode make_decode(const Options& o, const DecodeFlags& f) {
  Decode p;
  p.opt = o;
  p.steps = f.steps;
  p.state_len = state_len_of(o, f);
  p.cache_rows = cache_rows_of(o, f);
  const int64_t B = o.batch, D = o.dim, T = o.seqlen, N = f.steps, S = p.state_len,
                C = p.cache_rows, W = o.width, L = N * T;
  Options rows = o;
  rows.seqlen = L;
  p.in = draw_inputs(rows);
  p.x_steps = steps_of_rows(p.in.x, o, N);

  // The inputs each cache row holds before the loop, oldest first: the linear layout.
  HostArray history(o.dtype, static_cast<size_t>(C * D * S));
  fill_uniform(history, o.seed + 3);
  if (f.gather) {  // distinct random rows of the cache; every eighth batch row from row 1 pads
    std::vector<int32_t> perm(static_cast<size_t>(C));
    for (int64_t r = 0; r < C; ++r) perm[r] = static_cast<int32_t>(r);
    Rng rng(o.seed + 4);
    for (int64_t r = C - 1; r > 0; --r) std::swap(perm[r], perm[rng.range(0, r)]);
    for (int64_t b = 0; b < B; ++b) p.indices.push_back(b % 8 == 1 ? -1 : perm[b]);
  }
  // Positions: row 0 starts a sequence (position 0: its window reads whatever the buffer holds
  // before it, as the reference library does), the others anywhere in the first few laps.
  Rng rng(o.seed + 5);
  for (int64_t b = 0; b < B; ++b)
    p.seqlens.push_back(b == 0 ? 0 : static_cast<int32_t>(rng.range(0, 4 * S + 8)));
  for (int64_t b = 0; b < B; ++b) p.active_rows += p.row_of(b) >= 0;

  // The reference: each batch row's N*T tokens as one sequence, starting from the newest W-1
  // inputs of its cache row (zeros for padding rows, whose outputs are then set to 0).
  std::vector<double> init(static_cast<size_t>(B * D * (W - 1)), 0.0);
  for (int64_t b = 0; b < B; ++b)
    if (p.row_of(b) >= 0)
      for (int64_t d = 0; d < D; ++d)
        for (int64_t k = 0; k < W - 1; ++k)
          init[(b * D + d) * (W - 1) + k] =
              history.get((p.row_of(b) * D + d) * S + S - (W - 1) + k);
  std::vector<double> final_states(init.size());
  {
    const RefInputs ref_in(p.in);
    RefProblem rp = ref_in.problem(ConvShape{B, D, L, o.width}, Layout::channel_first, o.silu);
    rp.initial_states = init.data();
    p.ref.resize(static_cast<size_t>(B * D * L));
    reference_forward(rp, p.ref.data(), final_states.data());
  }
  for (int64_t b = 0; b < B; ++b)
    if (p.row_of(b) < 0) std::fill_n(p.ref.begin() + b * D * L, D * L, 0.0);

  // The cache after the loop, linear: the last S inputs of (the row's history, its N*T tokens);
  // the newest W-1 of them are the reference's final states, the older ones inputs before those.
  HostArray after = history;
  for (int64_t b = 0; b < B; ++b) {
    const int64_t r = p.row_of(b);
    if (r < 0) continue;
    for (int64_t d = 0; d < D; ++d) {
      const int64_t at = (r * D + d) * S;
      for (int64_t j = 0; j < S - (W - 1); ++j) {  // stream index L + j: history, then tokens
        const int64_t q = L + j;
        if (q < S)
          copy_elements(after, at + j, history, at + q, 1);
        else
          copy_elements(after, at + j, p.in.x, (b * D + d) * L + q - S, 1);
      }
      for (int64_t k = 0; k < W - 1; ++k)
        after.set(at + S - (W - 1) + k, final_states[(b * D + d) * (W - 1) + k]);
    }
  }
  // Circular: a row whose newest input has position `end` - 1 keeps position p at index p % S;
  // rows no batch row names keep the history as it is.
  auto circular = [&](const HostArray& linear, int64_t tokens_after) {
    HostArray c = linear;
    for (int64_t b = 0; b < B; ++b) {
      const int64_t r = p.row_of(b);
      if (r < 0) continue;
      const int64_t end = p.seqlens[b] + tokens_after;
      for (int64_t d = 0; d < D; ++d)
        for (int64_t j = 0; j < S; ++j)
          copy_elements(c, (r * D + d) * S + wrap(end - S + j, S), linear, (r * D + d) * S + j, 1);
    }
    return c;
  };
  p.cache_before[int(Buffer::linear)] = history;
  p.cache_before[int(Buffer::circular)] = circular(history, 0);
  p.cache_after[int(Buffer::circular)] = circular(after, L);
  p.cache_after[int(Buffer::linear)] = std::move(after);
  return p;
}

std::string Decode::summary() const {
  int32_t lo = seqlens.empty() ? 0 : *std::min_element(seqlens.begin(), seqlens.end());
  int32_t hi = seqlens.empty() ? 0 : *std::max_element(seqlens.begin(), seqlens.end());
  return std::to_string(steps) + " steps of " + std::to_string(opt.seqlen) + " token(s), state " +
         std::to_string(state_len) + " inputs, " + std::to_string(cache_rows) + " cache rows, " +
         std::to_string(opt.batch - active_rows) + " padding row(s), circular start positions " +
         std::to_string(lo) + ".." + std::to_string(hi);
}

}  // namespace conv1d::ch11
