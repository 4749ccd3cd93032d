#include "common/verify.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace conv1d {

bool within_tolerance(double got, double want, Tolerance tol) {
  if (!std::isfinite(got)) return false;  // NaN and Inf never pass, whatever the reference says
  return std::fabs(got - want) <= tol.atol + tol.rtol * std::fabs(want);
}

namespace {

template <class Get>
VerifyReport verify_impl(const std::string& name, size_t n_got, Get get, const std::vector<double>& want,
                         Tolerance tol, const std::vector<int64_t>& dims, size_t max_report) {
  VerifyReport r;
  r.name = name;
  r.tol = tol;
  r.dims = dims;
  if (n_got != want.size()) {
    // A size mismatch is a failure of every element, reported as such.
    r.count = want.size();
    r.bad = want.size() ? want.size() : 1;
    return r;
  }
  r.count = want.size();
  for (size_t i = 0; i < want.size(); ++i) {
    const double g = get(i), w = want[i];
    if (std::isfinite(g)) {
      const double abs_err = std::fabs(g - w);
      r.max_abs = std::max(r.max_abs, abs_err);
      if (w != 0.0) r.max_rel = std::max(r.max_rel, abs_err / std::fabs(w));
    } else {
      ++r.non_finite;
    }
    if (!within_tolerance(g, w, tol)) {
      ++r.bad;
      if (r.first_bad.size() < max_report) r.first_bad.push_back({i, g, w});
    }
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

VerifyReport verify(const std::string& name, const HostArray& got, const std::vector<double>& want, Tolerance tol,
                    const std::vector<int64_t>& dims, size_t max_report) {
  return verify_impl(name, got.size(), [&](size_t i) { return got.get(i); }, want, tol, dims, max_report);
}

VerifyReport verify(const std::string& name, const std::vector<double>& got, const std::vector<double>& want,
                    Tolerance tol, const std::vector<int64_t>& dims, size_t max_report) {
  return verify_impl(name, got.size(), [&](size_t i) { return got[i]; }, want, tol, dims, max_report);
}

std::string VerifyReport::summary() const {
  char buf[320];
  std::snprintf(buf, sizeof buf,
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
  for (size_t i = 0; i < v.size(); ++i) r[i] = round_to_dtype(v[i], t);
  return r;
}

}  // namespace conv1d
