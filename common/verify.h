// Comparing a result with the fp64 reference.
//
// An element passes when |got - want| <= atol + rtol * |want|. The comparison is written so that a
// NaN or infinity in `got` always fails (a plain `diff > tol` test is false for NaN and would pass
// it), and an output element the kernel never wrote keeps its NaN poison and fails too.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/dtype.h"
#include "common/tensor.h"

namespace conv1d {

struct Mismatch {
  size_t index;
  double got, want;
};

struct VerifyReport {
  std::string name;                     // what was compared ("out", "dx", ...)
  size_t count = 0;                     // elements compared
  size_t bad = 0;                       // elements outside the tolerance (non-finite included)
  size_t non_finite = 0;                // NaN or Inf among them
  double max_abs = 0.0, max_rel = 0.0;  // over the finite elements
  Tolerance tol{};
  std::vector<Mismatch> first_bad;  // the first few, in index order
  std::vector<int64_t> dims;        // for printing indices as [i, j, k]
  bool ok() const { return bad == 0 && count > 0; }
  std::string summary() const;  // one line: PASS/FAIL, errors, counts
  std::string details() const;  // the first mismatches with multi-dimensional indices
};

bool within_tolerance(double got, double want, Tolerance tol);

VerifyReport verify(const std::string& name, const HostArray& got, const std::vector<double>& want,
                    Tolerance tol, const std::vector<int64_t>& dims = {}, size_t max_report = 5);
VerifyReport verify(const std::string& name, const std::vector<double>& got,
                    const std::vector<double>& want, Tolerance tol,
                    const std::vector<int64_t>& dims = {}, size_t max_report = 5);

// The same values with every element rounded to the storage dtype (what an exact kernel returns).
std::vector<double> rounded_to(const std::vector<double>& v, Dtype t);

}  // namespace conv1d
