// Helper for tests/python/test_npy_numpy.py: checks write_npy and read_npy against NumPy itself.
//
//   npy_writer <dir>           writes a few known arrays into <dir> (which must exist)
//   npy_writer --read <file>   reads <file> with read_npy and prints
//                                descr <descr>
//                                shape <shape as a Python tuple>
//                                sum <sum of the elements as a double, %.17g>
//
// Exit status: 0 on success, 2 on any error (the message goes to stderr).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/npy.h"

namespace {

using conv1d::Dtype;
using conv1d::HostArray;

void write_all(const std::string& dir) {
  // f4 [2, 3]: i * 0.5 - 1
  std::vector<float> f4(6);
  for (int i = 0; i < 6; ++i) f4[i] = static_cast<float>(i * 0.5 - 1.0);
  conv1d::write_npy(dir + "/f4_2x3.npy", f4.data(), "<f4", {2, 3});

  // f2 [5]: float -> half conversions of known values (NumPy's float32 -> float16 must agree).
  const float f2_values[] = {1.0f, -2.5f, 0.1f, 1.0f / 3.0f, 65520.0f};
  std::vector<uint16_t> f2;
  for (float v : f2_values) f2.push_back(conv1d::float_to_half_bits(v));
  conv1d::write_npy(dir + "/f2_5.npy", f2.data(), "<f2", {5});

  // bf16 [4] through HostArray: written as float32.
  HostArray bf(Dtype::bf16, 4);
  const double bf_values[] = {1.0, -0.1, 3.14159, 1e30};
  for (size_t i = 0; i < 4; ++i) bf.set(i, bf_values[i]);
  conv1d::write_npy(dir + "/bf16_4.npy", bf, {4});

  // f8 [2, 2, 2]: i * 0.1
  std::vector<double> f8(8);
  for (int i = 0; i < 8; ++i) f8[i] = i * 0.1;
  conv1d::write_npy(dir + "/f8_2x2x2.npy", f8, {2, 2, 2});

  // i4 [3]
  const int32_t i4[] = {-7, 0, 2147483647};
  conv1d::write_npy(dir + "/i4_3.npy", i4, "<i4", {3});

  // f8 [] (0-D)
  conv1d::write_npy(dir + "/f8_scalar.npy", std::vector<double>{42.5}, {});
}

template <class T>
double sum_as(const std::vector<uint8_t>& data) {
  double s = 0;
  for (size_t off = 0; off + sizeof(T) <= data.size(); off += sizeof(T)) {
    T v;
    std::memcpy(&v, data.data() + off, sizeof(T));
    s += static_cast<double>(v);
  }
  return s;
}

double sum_elements(const conv1d::NpyArray& a) {
  const std::string kind = a.descr.substr(1);
  if (kind == "f2") {
    double s = 0;
    for (size_t off = 0; off + 2 <= a.data.size(); off += 2) {
      uint16_t h;
      std::memcpy(&h, a.data.data() + off, 2);
      s += conv1d::half_bits_to_float(h);
    }
    return s;
  }
  if (kind == "f4") return sum_as<float>(a.data);
  if (kind == "f8") return sum_as<double>(a.data);
  if (kind == "i1") return sum_as<int8_t>(a.data);
  if (kind == "i2") return sum_as<int16_t>(a.data);
  if (kind == "i4") return sum_as<int32_t>(a.data);
  if (kind == "i8") return sum_as<int64_t>(a.data);
  if (kind == "u1" || kind == "b1") return sum_as<uint8_t>(a.data);
  if (kind == "u2") return sum_as<uint16_t>(a.data);
  if (kind == "u4") return sum_as<uint32_t>(a.data);
  if (kind == "u8") return sum_as<uint64_t>(a.data);
  throw std::runtime_error("npy_writer: no summation for descr '" + a.descr + "'");
}

std::string shape_tuple(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc == 3 && std::string(argv[1]) == "--read") {
      const conv1d::NpyArray a = conv1d::read_npy(argv[2]);
      std::printf("descr %s\nshape %s\nsum %.17g\n", a.descr.c_str(), shape_tuple(a.shape).c_str(),
                  sum_elements(a));
      return 0;
    }
    if (argc == 2 && argv[1][0] != '-') {
      write_all(argv[1]);
      return 0;
    }
    std::fprintf(stderr, "usage: %s <dir> | --read <file.npy>\n", argv[0]);
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "npy_writer: %s\n", e.what());
    return 2;
  }
}
