#include "common/verify.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "common/parallel.h"
#include "common/util.h"

namespace conv1d {

bool within_tolerance(double got, double want, Tolerance tol) {
  if (!std::isfinite(got)) return false;  // NaN and Inf never pass, whatever the reference says
  return std::fabs(got - want) <= tol.atol + tol.rtol * std::fabs(want);
}

namespace {

// Elements are compared in blocks on every host thread; the blocks' counts, maxima and first
// mismatches are merged in block order, so the report is the same for any number of threads.
template <class Get>
VerifyReport verify_impl(const std::string& name, size_t n_got, Get get,
                         const std::vector<double>& want, Tolerance tol,
                         const std::vector<int64_t>& dims, size_t max_report) {
  VerifyReport r;
  r.name = name;
  r.tol = tol;
  r.dims = dims;
  r.count = want.size();
  if (n_got != want.size()) {
    // A size mismatch is a failure of every element, reported as such.
    r.bad = want.size() ? want.size() : 1;
    return r;
  }
  const int64_t n = static_cast<int64_t>(want.size());
  std::vector<VerifyReport> part(ceil_div(n, kElementBlock));
  parallel_for_blocks(n, [&](int64_t begin, int64_t end) {
    VerifyReport& p = part[begin / kElementBlock];
    for (int64_t i = begin; i < end; ++i) {
      const double g = get(i), w = want[i];
      if (std::isfinite(g)) {
        const double abs_err = std::fabs(g - w);
        p.max_abs = std::max(p.max_abs, abs_err);
        if (w != 0.0) p.max_rel = std::max(p.max_rel, abs_err / std::fabs(w));
      } else {
        ++p.non_finite;
      }
      if (!within_tolerance(g, w, tol)) {
        ++p.bad;
        if (p.first_bad.size() < max_report) p.first_bad.push_back({static_cast<size_t>(i), g, w});
      }
    }
  });
  for (const VerifyReport& p : part) {
    r.bad += p.bad;
    r.non_finite += p.non_finite;
    r.max_abs = std::max(r.max_abs, p.max_abs);
    r.max_rel = std::max(r.max_rel, p.max_rel);
    for (const Mismatch& m : p.first_bad)
      if (r.first_bad.size() < max_report) r.first_bad.push_back(m);
  }
  return r;
}

std::string index_string(size_t flat, const std::vector<int64_t>& dims) {
  if (dims.empty()) return "[" + std::to_string(flat) + "]";
  std::vector<int64_t> idx(dims.size());
  size_t rest = flat;
  for (size_t k = dims.size(); k-- > 0;) {
    idx[k] = static_cast<int64_t>(rest % static_cast<size_t>(dims[k]));
    rest /= static_cast<size_t>(dims[k]);
  }
  std::string s = "[";
  for (size_t k = 0; k < idx.size(); ++k) s += (k ? ", " : "") + std::to_string(idx[k]);
  return s + "]";
}

}  // namespace

VerifyReport verify(const std::string& name, const HostArray& got, const std::vector<double>& want,
                    Tolerance tol, const std::vector<int64_t>& dims, size_t max_report) {
  return verify_impl(
      name, got.size(), [&](size_t i) { return got.get(i); }, want, tol, dims, max_report);
}

VerifyReport verify(const std::string& name, const std::vector<double>& got,
                    const std::vector<double>& want, Tolerance tol,
                    const std::vector<int64_t>& dims, size_t max_report) {
  return verify_impl(
      name, got.size(), [&](size_t i) { return got[i]; }, want, tol, dims, max_report);
}

std::string VerifyReport::summary() const {
  char buf[320];
  std::snprintf(
      buf, sizeof buf,
      "%s %s: %zu elements, max abs err %.3e, max rel err %.3e, %zu outside atol %.0e + rtol %.0e "
      "(%zu NaN/Inf)",
      ok() ? "PASS" : "FAIL", name.c_str(), count, max_abs, max_rel, bad, tol.atol, tol.rtol,
      non_finite);
  return buf;
}

std::string VerifyReport::details() const {
  std::ostringstream o;
  for (const Mismatch& m : first_bad) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "    %s%s: got %.8g, want %.8g\n", name.c_str(),
                  index_string(m.index, dims).c_str(), m.got, m.want);
    o << buf;
  }
  if (bad > first_bad.size()) o << "    ... and " << (bad - first_bad.size()) << " more\n";
  return o.str();
}

std::vector<double> rounded_to(const std::vector<double>& v, Dtype t) {
  std::vector<double> r(v.size());
  parallel_for_blocks(static_cast<int64_t>(v.size()), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) r[i] = round_to_dtype(v[i], t);
  });
  return r;
}

}  // namespace conv1d
