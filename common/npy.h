// NumPy .npy files (format version 1.0, little-endian, C order): --save-npy writes the inputs and
// outputs of a run so they can be inspected with numpy.load(). bf16 has no NumPy dtype: it is
// written as float32 (exactly representable).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/tensor.h"

namespace conv1d {

// descr: "<f4", "<f2", "<f8", "<i4", "<u2" (what NumPy writes for those types). Does not create
// directories; throws std::runtime_error naming the file if it cannot be written or the descr/shape
// is invalid.
void write_npy(const std::string& path, const void* data, const std::string& descr,
               const std::vector<int64_t>& shape);
void write_npy(const std::string& path, const HostArray& a, const std::vector<int64_t>& shape);
void write_npy(const std::string& path, const std::vector<double>& a,
               const std::vector<int64_t>& shape);

struct NpyArray {
  std::string descr;
  std::vector<int64_t> shape;
  bool fortran_order = false;
  std::vector<uint8_t> data;
  int64_t count() const;
};
// Reads format versions 1.0 and 2.0 with a little-endian (or one-byte) descr: f2/f4/f8, i1..i8,
// u1..u8, b1. Fortran-ordered files are refused (so `fortran_order` is always false in a returned
// array); save C-ordered data, e.g. numpy.save(path, numpy.ascontiguousarray(a)). The data must be
// exactly count() elements: a short or overlong file is an error.
// Throws std::runtime_error naming the file and what was wrong.
NpyArray read_npy(const std::string& path);

}  // namespace conv1d
