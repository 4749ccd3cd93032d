// The fp64 CPU reference: plain loops over (b, d, t), written to be read first. Two concessions to
// speed, because the chapters check runs of 2^31 elements against it: groups of channels run in
// parallel on every core, and each group walks time in the outer loop (see kGroup below).
//
// Everything is organised around one (batch, channel) row at a time, because the convolution is
// depthwise: channel d of the output only ever sees channel d of the input. `RowView` hides the
// two layouts, the initial states and the seq_idx masking behind two questions:
//   - xin(s):          the input value at position s (s < 0 reaches into the initial states);
//   - tap(s, t):       the input value at position s *as seen by output t*, i.e. zero whenever s
//                      does not contribute to t (different sequence, padding, before t = 0 with
//                      seq_idx).
// The forward and the backward are then direct transcriptions of the formulas in reference.h.
#include "common/reference.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/parallel.h"
#include "common/util.h"

namespace conv1d {

namespace {

// sigmoid(z) without overflow: exp() is only ever called on a non-positive argument, so it stays
// in [0, 1] and neither branch can produce inf/inf or 0 * inf.
double sigmoid(double z) {
  if (z >= 0.0) return 1.0 / (1.0 + std::exp(-z));
  const double e = std::exp(z);
  return e / (1.0 + e);
}

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("conv1d reference: " + what);
}

void validate(const RefProblem& p) {
  const ConvShape& s = p.shape;
  require(s.batch >= 1, "batch must be >= 1 (got " + std::to_string(s.batch) + ")");
  require(s.dim >= 1, "dim must be >= 1 (got " + std::to_string(s.dim) + ")");
  require(s.seqlen >= 1, "seqlen must be >= 1 (got " + std::to_string(s.seqlen) + ")");
  require(s.width >= 1, "width must be >= 1 (got " + std::to_string(s.width) + ")");
  require(p.x != nullptr, "x must not be null");
  require(p.weight != nullptr, "weight must not be null");
}

// One (b, d) row of the problem, in either layout.
class RowView {
 public:
  RowView(const RefProblem& p, int64_t b, int64_t d)
      : p_(p),
        b_(b),
        d_(d),
        W_(p.shape.width),
        w_(p.weight + d * p.shape.width),
        init_(p.initial_states ? p.initial_states + (b * p.shape.dim + d) * (p.shape.width - 1)
                               : nullptr),
        seq_(p.seq_idx ? p.seq_idx + b * p.shape.seqlen : nullptr) {}

  int64_t batch() const { return b_; }
  int64_t channel() const { return d_; }
  double weight(int k) const { return w_[k]; }
  double bias() const { return p_.bias ? p_.bias[d_] : 0.0; }

  // Flat offset of position t (0 <= t < L) of this row in x / out / dout / dx.
  int64_t at(int64_t t) const { return offset(p_.layout, p_.shape, b_, d_, t); }

  // Padding position: its output is exactly 0 and it receives no gradient.
  bool is_padding(int64_t t) const { return seq_ && seq_[t] < 0; }

  // Does input position s (possibly negative) contribute to output t?
  bool contributes(int64_t s, int64_t t) const {
    if (!seq_) return true;                // no packing: everything in the window counts
    if (seq_[t] < 0) return false;         // padding output
    if (s < 0) return seq_[0] == seq_[t];  // before t = 0: the row's first sequence
    return seq_[s] == seq_[t];             // same packed sequence only
  }

  // Does input position s (possibly negative) belong to the final states? They are what the row's
  // last sequence would see next: the inputs that an output at t = L with the id of t = L-1 sees.
  bool in_final_states(int64_t s) const {
    if (!seq_) return true;
    const int32_t last = seq_[p_.shape.seqlen - 1];
    if (last < 0) return false;  // the row ends in padding: nothing to carry on
    return (s < 0 ? seq_[0] : seq_[s]) == last;
  }

  // The unmasked input: x for 0 <= s < L, initial states (or zeros) for -(W-1) <= s < 0.
  double xin(int64_t s) const {
    if (s >= 0) return p_.x[at(s)];
    return init_ ? init_[(W_ - 1) + s] : 0.0;
  }

  // The input at s as output t sees it.
  double tap(int64_t s, int64_t t) const { return contributes(s, t) ? xin(s) : 0.0; }

  // Pre-activation z at a non-padding position t.
  double z(int64_t t) const {
    double acc = bias();
    for (int k = 0; k < W_; ++k) acc += w_[k] * tap(t - (W_ - 1) + k, t);
    return acc;
  }

 private:
  const RefProblem& p_;
  int64_t b_, d_;
  int W_;
  const double* w_;
  const double* init_;
  const int32_t* seq_;
};

// Rows are handled in groups of kGroup neighbouring channels of one batch, time outermost. In
// channel-last memory those channels are neighbours, so a time step touches 4 or 5 cache lines
// instead of kGroup (measured on 2 cores: 8 channels made the channel-last reference 1.6 times
// slower than 32; channel-first memory, kGroup sequential streams, did not care). Groups run in
// parallel. What a group writes is its own, and every sum is added in the order the serial loops
// would add it, so the threads change nothing but the time.
constexpr int64_t kGroup = 32;

// The rows (b, d0 .. d0+n-1) of one group.
struct Group {
  int64_t d0;
  int n;
  std::vector<RowView> rows;
  Group(const RefProblem& p, int64_t b, int64_t d0)
      : d0(d0), n(static_cast<int>(std::min(kGroup, p.shape.dim - d0))) {
    rows.reserve(n);
    for (int j = 0; j < n; ++j) rows.emplace_back(p, b, d0 + j);
  }
};

int64_t groups_per_batch(const ConvShape& s) { return ceil_div(s.dim, kGroup); }

}  // namespace

double silu(double z) { return z * sigmoid(z); }

double silu_grad(double z) {
  const double s = sigmoid(z);
  return s * (1.0 + z * (1.0 - s));
}

void reference_forward(const RefProblem& p, double* out, double* final_states) {
  validate(p);
  require(out != nullptr, "out must not be null");
  const ConvShape& s = p.shape;
  const int W = s.width;
  const int64_t groups = groups_per_batch(s);

  parallel_for(
      s.batch * groups,
      [&](int64_t item) {
        const Group g(p, item / groups, (item % groups) * kGroup);
        for (int64_t t = 0; t < s.seqlen; ++t) {
          for (const RowView& row : g.rows) {
            if (row.is_padding(t)) {
              out[row.at(t)] = 0.0;
              continue;
            }
            const double z = row.z(t);
            out[row.at(t)] = p.silu ? silu(z) : z;
          }
        }
        if (final_states) {
          // The last W-1 inputs: what the next chunk of a stream needs as initial states.
          for (const RowView& row : g.rows) {
            double* fs = final_states + (row.batch() * s.dim + row.channel()) * (W - 1);
            for (int j = 0; j < W - 1; ++j) {
              const int64_t si = s.seqlen - (W - 1) + j;
              fs[j] = row.in_final_states(si) ? row.xin(si) : 0.0;
            }
          }
        }
      },
      "fp64 reference (forward)");
}

int64_t reference_backward_scratch_bytes(const ConvShape& s) {
  return int64_t(host_threads()) * std::min(kGroup, s.dim) * s.seqlen * int64_t(sizeof(double));
}

void reference_backward(const RefProblem& p, const double* dout, const RefGrads& g,
                        const double* dfinal_states) {
  validate(p);
  require(dout != nullptr, "dout must not be null");
  const ConvShape& s = p.shape;
  const int W = s.width;
  const int64_t L = s.seqlen;
  const bool sums = g.dweight || g.dweight_sq || g.dbias || g.dbias_sq;
  // What dfinal_states adds at input position s: its value where the final state j = s-(L-(W-1))
  // came from s, 0 elsewhere.
  auto dfinal_at = [&](const RowView& row, int64_t si) {
    const int64_t j = si - (L - (W - 1));
    if (j < 0 || !row.in_final_states(si)) return 0.0;
    return dfinal_states[(row.batch() * s.dim + row.channel()) * (W - 1) + j];
  };

  // One item is one group of channels over the whole batch, so that the sums over the batch are
  // added in batch order by the one thread that owns those channels.
  parallel_for(
      groups_per_batch(s),
      [&](int64_t item) {
        const int64_t d0 = item * kGroup;
        const int n = static_cast<int>(std::min(kGroup, s.dim - d0));
        std::vector<double> dz(static_cast<size_t>(L * n));  // [t][j]
        // Per channel and tap: the batch's total, and one row's sum over time (then added to the
        // total).
        std::vector<double> dw(n * W, 0.0), dw_sq(n * W, 0.0), db(n, 0.0), db_sq(n, 0.0);
        std::vector<double> row_dw(n * W), row_dw_sq(n * W), row_db(n), row_db_sq(n);

        for (int64_t b = 0; b < s.batch; ++b) {
          const Group grp(p, b, d0);

          // dz = d(sum out*dout)/dz: dout through the activation; nothing flows out of padding.
          for (int64_t t = 0; t < L; ++t)
            for (int j = 0; j < n; ++j) {
              const RowView& row = grp.rows[j];
              double& v = dz[t * n + j];
              if (row.is_padding(t)) {
                v = 0.0;
                continue;
              }
              const double go = dout[row.at(t)];
              v = p.silu ? go * silu_grad(row.z(t)) : go;
            }

          // dx[s]: input s feeds output t = s + (W-1) - k through tap k (t >= s always; drop t >= L).
          if (g.dx) {
            for (int64_t si = 0; si < L; ++si)
              for (int j = 0; j < n; ++j) {
                const RowView& row = grp.rows[j];
                double acc = 0.0;
                for (int k = 0; k < W; ++k) {
                  const int64_t t = si + (W - 1) - k;
                  if (t < L && row.contributes(si, t)) acc += row.weight(k) * dz[t * n + j];
                }
                if (dfinal_states) acc += dfinal_at(row, si);
                g.dx[row.at(si)] = acc;
              }
          }

          // dinitial_states[j] is position s = j - (W-1) < 0, feeding outputs t = j - k >= 0.
          if (g.dinitial_states) {
            for (int j = 0; j < n; ++j) {
              const RowView& row = grp.rows[j];
              double* di = g.dinitial_states + (b * s.dim + d0 + j) * (W - 1);
              for (int i = 0; i < W - 1; ++i) {
                const int64_t si = i - (W - 1);
                double acc = 0.0;
                for (int k = 0; k < W; ++k) {
                  const int64_t t = si + (W - 1) - k;
                  if (t >= 0 && t < L && row.contributes(si, t))
                    acc += row.weight(k) * dz[t * n + j];
                }
                if (dfinal_states) acc += dfinal_at(row, si);
                di[i] = acc;
              }
            }
          }

          // dweight[k] = sum_t dz[t] * tap(t-(W-1)+k, t) and dbias = sum_t dz[t]: each row's sum runs
          // over t in ascending order, then the row's sum is added to the batch's total.
          if (sums) {
            std::fill(row_dw.begin(), row_dw.end(), 0.0);
            std::fill(row_dw_sq.begin(), row_dw_sq.end(), 0.0);
            std::fill(row_db.begin(), row_db.end(), 0.0);
            std::fill(row_db_sq.begin(), row_db_sq.end(), 0.0);
            for (int64_t t = 0; t < L; ++t)
              for (int j = 0; j < n; ++j) {
                const RowView& row = grp.rows[j];
                const double v = dz[t * n + j];
                for (int k = 0; k < W; ++k) {
                  const double term = v * row.tap(t - (W - 1) + k, t);
                  row_dw[j * W + k] += term;
                  row_dw_sq[j * W + k] += term * term;
                }
                row_db[j] += v;
                row_db_sq[j] += v * v;
              }
            for (int i = 0; i < n * W; ++i) {
              dw[i] += row_dw[i];
              dw_sq[i] += row_dw_sq[i];
            }
            for (int j = 0; j < n; ++j) {
              db[j] += row_db[j];
              db_sq[j] += row_db_sq[j];
            }
          }
        }

        // Outputs are overwritten, never accumulated into across calls.
        for (int j = 0; j < n; ++j) {
          const int64_t d = d0 + j;
          for (int k = 0; k < W; ++k) {
            if (g.dweight) g.dweight[d * W + k] = dw[j * W + k];
            if (g.dweight_sq) g.dweight_sq[d * W + k] = dw_sq[j * W + k];
          }
          if (g.dbias) g.dbias[d] = db[j];
          if (g.dbias_sq) g.dbias_sq[d] = db_sq[j];
        }
      },
      "fp64 reference (backward)");
}

void reference_varlen_forward(const RefVarlen& p, double* out, double* final_states) {
  require(p.dim >= 1 && p.width >= 1, "dim and width must be >= 1");
  require(p.sequences >= 0 && p.cu_seqlens != nullptr, "cu_seqlens must not be null");
  require(p.cu_seqlens[0] == 0, "cu_seqlens must start at 0");
  const int64_t D = p.dim, S = p.width - 1;
  std::vector<double> fs(static_cast<size_t>(D * S));
  for (int64_t n = 0; n < p.sequences; ++n) {
    const int64_t start = p.cu_seqlens[n], len = p.cu_seqlens[n + 1] - start;
    require(len >= 0, "cu_seqlens must not decrease");
    const int64_t slot = p.state_indices ? p.state_indices[n] : n;
    const double* init = p.states && slot >= 0 ? p.states + slot * D * S : nullptr;
    if (len > 0) {
      RefProblem one;
      one.shape = ConvShape{1, D, len, p.width};
      one.layout = Layout::channel_last;  // tokens of one sequence: [1, len, D]
      one.x = p.x + start * D;
      one.weight = p.weight;
      one.bias = p.bias;
      one.initial_states = init;
      one.silu = p.silu;
      reference_forward(one, out + start * D, fs.data());
    } else {  // nothing new: the state passes through (zeros without one)
      for (int64_t i = 0; i < D * S; ++i) fs[i] = init ? init[i] : 0.0;
    }
    if (final_states && slot >= 0) std::copy(fs.begin(), fs.end(), final_states + slot * D * S);
  }
}

void reference_varlen_backward(const RefVarlen& p, const double* dout, const double* dfinal_states,
                               const RefVarlenGrads& g) {
  require(p.dim >= 1 && p.width >= 1, "dim and width must be >= 1");
  require(p.sequences >= 0 && p.cu_seqlens != nullptr, "cu_seqlens must not be null");
  require(p.cu_seqlens[0] == 0, "cu_seqlens must start at 0");
  require(dout != nullptr || p.cu_seqlens[p.sequences] == 0, "dout must not be null");
  const int64_t D = p.dim, W = p.width, S = W - 1;
  for (double* sum : {g.dweight, g.dweight_sq})
    if (sum) std::fill(sum, sum + D * W, 0.0);
  for (double* sum : {g.dbias, g.dbias_sq})
    if (sum) std::fill(sum, sum + D, 0.0);
  std::vector<double> dw(static_cast<size_t>(D * W)), db(static_cast<size_t>(D)),
      dw_sq(static_cast<size_t>(D * W)), db_sq(static_cast<size_t>(D)),
      dinit(static_cast<size_t>(D * S)), zeros(static_cast<size_t>(D * S), 0.0);
  for (int64_t n = 0; n < p.sequences; ++n) {
    const int64_t start = p.cu_seqlens[n], len = p.cu_seqlens[n + 1] - start;
    require(len >= 0, "cu_seqlens must not decrease");
    const int64_t slot = p.state_indices ? p.state_indices[n] : n;
    // The gradient of the row this sequence writes back: none without a row.
    const double* dfs = dfinal_states && slot >= 0 ? dfinal_states + slot * D * S : zeros.data();
    if (len > 0) {
      RefProblem one;
      one.shape = ConvShape{1, D, len, p.width};
      one.layout = Layout::channel_last;
      one.x = p.x + start * D;
      one.weight = p.weight;
      one.bias = p.bias;
      one.initial_states = p.states && slot >= 0 ? p.states + slot * D * S : nullptr;
      one.silu = p.silu;
      RefGrads rg;
      rg.dx = g.dx ? g.dx + start * D : nullptr;
      rg.dweight = g.dweight ? dw.data() : nullptr;
      rg.dbias = g.dbias ? db.data() : nullptr;
      rg.dinitial_states = dinit.data();
      rg.dweight_sq = g.dweight_sq ? dw_sq.data() : nullptr;
      rg.dbias_sq = g.dbias_sq ? db_sq.data() : nullptr;
      reference_backward(one, dout + start * D, rg, dfs);
      auto add = [](double* total, const std::vector<double>& part) {
        if (total)
          for (size_t i = 0; i < part.size(); ++i) total[i] += part[i];
      };
      add(g.dweight, dw);
      add(g.dbias, db);
      add(g.dweight_sq, dw_sq);
      add(g.dbias_sq, db_sq);
    } else {  // the state passed straight through
      std::copy(dfs, dfs + D * S, dinit.begin());
    }
    if (g.dstates && slot >= 0) std::copy(dinit.begin(), dinit.end(), g.dstates + slot * D * S);
  }
}

}  // namespace conv1d
