// The fp64 CPU reference: plain loops over (b, d, t), written to be read, not to be fast.
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

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

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
  // The reference CUDA library rejects this combination too: with seq_idx, nothing before t = 0
  // belongs to a sequence, so initial states would silently be ignored.
  if (p.seq_idx != nullptr && p.initial_states != nullptr)
    throw std::invalid_argument("seq_idx and initial_states cannot be combined");
}

// One (b, d) row of the problem, in either layout.
class RowView {
 public:
  RowView(const RefProblem& p, int64_t b, int64_t d)
      : p_(p), b_(b), d_(d), W_(p.shape.width),
        w_(p.weight + d * p.shape.width),
        init_(p.initial_states ? p.initial_states + (b * p.shape.dim + d) * (p.shape.width - 1)
                               : nullptr),
        seq_(p.seq_idx ? p.seq_idx + b * p.shape.seqlen : nullptr) {}

  double weight(int k) const { return w_[k]; }
  double bias() const { return p_.bias ? p_.bias[d_] : 0.0; }

  // Flat offset of position t (0 <= t < L) of this row in x / out / dout / dx.
  int64_t at(int64_t t) const { return offset(p_.layout, p_.shape, b_, d_, t); }

  // Padding position: its output is exactly 0 and it receives no gradient.
  bool is_padding(int64_t t) const { return seq_ && seq_[t] < 0; }

  // Does input position s (possibly negative) contribute to output t?
  bool contributes(int64_t s, int64_t t) const {
    if (!seq_) return true;                 // no packing: everything in the window counts
    if (seq_[t] < 0) return false;          // padding output
    if (s < 0) return false;                // before t = 0 belongs to no sequence
    return seq_[s] == seq_[t];              // same packed sequence only
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

  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t d = 0; d < s.dim; ++d) {
      const RowView row(p, b, d);
      for (int64_t t = 0; t < s.seqlen; ++t) {
        if (row.is_padding(t)) {
          out[row.at(t)] = 0.0;
          continue;
        }
        const double z = row.z(t);
        out[row.at(t)] = p.silu ? silu(z) : z;
      }
      if (final_states) {
        // The last W-1 inputs, unmasked: what the next chunk of a stream needs as initial states.
        double* fs = final_states + (b * s.dim + d) * (W - 1);
        for (int j = 0; j < W - 1; ++j) fs[j] = row.xin(s.seqlen - (W - 1) + j);
      }
    }
  }
}

void reference_backward(const RefProblem& p, const double* dout, const RefGrads& g) {
  validate(p);
  require(dout != nullptr, "dout must not be null");
  const ConvShape& s = p.shape;
  const int W = s.width;
  const int64_t L = s.seqlen;

  // dweight and dbias are sums over the batch: clear them first (outputs are overwritten, never
  // accumulated into across calls).
  if (g.dweight)
    for (int64_t i = 0; i < s.dim * W; ++i) g.dweight[i] = 0.0;
  if (g.dbias)
    for (int64_t i = 0; i < s.dim; ++i) g.dbias[i] = 0.0;

  std::vector<double> dz(static_cast<size_t>(L));
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t d = 0; d < s.dim; ++d) {
      const RowView row(p, b, d);

      // dz = d(sum out*dout)/dz: dout through the activation; nothing flows out of padding.
      for (int64_t t = 0; t < L; ++t) {
        if (row.is_padding(t)) {
          dz[t] = 0.0;
          continue;
        }
        const double go = dout[row.at(t)];
        dz[t] = p.silu ? go * silu_grad(row.z(t)) : go;
      }

      // dx[s]: input s feeds output t = s + (W-1) - k through tap k (t >= s always; drop t >= L).
      if (g.dx) {
        for (int64_t si = 0; si < L; ++si) {
          double acc = 0.0;
          for (int k = 0; k < W; ++k) {
            const int64_t t = si + (W - 1) - k;
            if (t < L && row.contributes(si, t)) acc += row.weight(k) * dz[t];
          }
          g.dx[row.at(si)] = acc;
        }
      }

      // dinitial_states[j] is position s = j - (W-1) < 0, feeding outputs t = j - k >= 0.
      if (g.dinitial_states) {
        double* di = g.dinitial_states + (b * s.dim + d) * (W - 1);
        for (int j = 0; j < W - 1; ++j) {
          const int64_t si = j - (W - 1);
          double acc = 0.0;
          for (int k = 0; k < W; ++k) {
            const int64_t t = si + (W - 1) - k;
            if (t >= 0 && t < L && row.contributes(si, t)) acc += row.weight(k) * dz[t];
          }
          di[j] = acc;
        }
      }

      if (g.dweight) {
        double* dw = g.dweight + d * W;
        for (int k = 0; k < W; ++k) {
          double acc = 0.0;
          for (int64_t t = 0; t < L; ++t) acc += dz[t] * row.tap(t - (W - 1) + k, t);
          dw[k] += acc;
        }
      }

      if (g.dbias) {
        double acc = 0.0;
        for (int64_t t = 0; t < L; ++t) acc += dz[t];
        g.dbias[d] += acc;
      }
    }
  }
}

}  // namespace conv1d
