// .npy writer and reader: round trips, the exact header format, and malformed files.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/npy.h"

namespace conv1d {
namespace {

namespace fs = std::filesystem;

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A .npy file assembled by hand: `dict` is padded like NumPy does it.
std::string make_npy(int major, const std::string& dict, const std::string& data) {
  const size_t len_bytes = major == 1 ? 2 : 4;
  std::string header = dict;
  while ((6 + 2 + len_bytes + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string f = "\x93NUMPY";
  f += static_cast<char>(major);
  f += '\0';
  for (size_t i = 0; i < len_bytes; ++i) f += static_cast<char>((header.size() >> (8 * i)) & 0xFF);
  return f + header + data;
}

template <class T>
std::string as_bytes(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

// Each test gets its own directory under the system temp directory, removed afterwards.
class Npy : public ::testing::Test {
 protected:
  void SetUp() override {
    static std::atomic<int> counter{0};
    std::random_device rd;
    const auto stamp = std::chrono::steady_clock::now().time_since_epoch().count();
    dir_ = fs::temp_directory_path() / ("conv1d_test_npy_" + std::to_string(rd()) + "_" +
                                        std::to_string(stamp) + "_" + std::to_string(counter++));
    ASSERT_TRUE(fs::create_directories(dir_));
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // Expects read_npy(p) to throw a runtime_error that names the file and contains `what`.
  void expect_read_error(const std::string& p, const std::string& what) {
    try {
      read_npy(p);
      ADD_FAILURE() << "read_npy('" << p << "') did not throw (expected: " << what << ")";
    } catch (const std::runtime_error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(p), std::string::npos) << "message does not name the file: " << msg;
      EXPECT_NE(msg.find(what), std::string::npos)
          << "message does not say '" << what << "': " << msg;
    }
  }

  fs::path dir_;
};

// ---- round trips ----------------------------------------------------------------------------------

TEST_F(Npy, RoundTripF4TwoD) {
  const std::vector<float> v = {-1.0f, -0.5f, 0.0f, 0.5f, 1.0f, 1.5f};
  write_npy(path("a.npy"), v.data(), "<f4", {2, 3});
  const NpyArray a = read_npy(path("a.npy"));
  EXPECT_EQ(a.descr, "<f4");
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_FALSE(a.fortran_order);
  EXPECT_EQ(a.count(), 6);
  ASSERT_EQ(a.data.size(), 24u);
  EXPECT_EQ(std::memcmp(a.data.data(), v.data(), 24), 0);
}

TEST_F(Npy, RoundTripF2OneDFromHostArray) {
  HostArray h(Dtype::fp16, 5);
  const double vals[] = {1.0, -2.5, 65504.0, std::ldexp(1.0, -24), 0.1};
  for (size_t i = 0; i < 5; ++i) h.set(i, vals[i]);
  write_npy(path("h.npy"), h, {5});
  const NpyArray a = read_npy(path("h.npy"));
  EXPECT_EQ(a.descr, "<f2");
  EXPECT_EQ(a.shape, (std::vector<int64_t>{5}));
  ASSERT_EQ(a.data.size(), h.bytes());
  EXPECT_EQ(std::memcmp(a.data.data(), h.data(), h.bytes()), 0);
}

TEST_F(Npy, RoundTripF8ZeroD) {
  write_npy(path("s.npy"), std::vector<double>{3.25}, {});
  const NpyArray a = read_npy(path("s.npy"));
  EXPECT_EQ(a.descr, "<f8");
  EXPECT_TRUE(a.shape.empty());
  EXPECT_EQ(a.count(), 1);
  ASSERT_EQ(a.data.size(), 8u);
  double d;
  std::memcpy(&d, a.data.data(), 8);
  EXPECT_EQ(d, 3.25);
}

TEST_F(Npy, RoundTripI4ThreeD) {
  std::vector<int32_t> v(24);
  for (int i = 0; i < 24; ++i) v[i] = i * 1000003 - 7;
  v[5] = std::numeric_limits<int32_t>::min();
  write_npy(path("i.npy"), v.data(), "<i4", {2, 3, 4});
  const NpyArray a = read_npy(path("i.npy"));
  EXPECT_EQ(a.descr, "<i4");
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3, 4}));
  ASSERT_EQ(a.data.size(), 96u);
  EXPECT_EQ(std::memcmp(a.data.data(), v.data(), 96), 0);
}

TEST_F(Npy, RoundTripU2AndVectorDoubleThreeD) {
  const std::vector<uint16_t> u = {0, 1, 0xFFFF};
  write_npy(path("u.npy"), u.data(), "<u2", {3});
  EXPECT_EQ(read_npy(path("u.npy")).data.size(), 6u);

  std::vector<double> d(8);
  for (int i = 0; i < 8; ++i) d[i] = i * 0.1;
  write_npy(path("d.npy"), d, {2, 2, 2});
  const NpyArray a = read_npy(path("d.npy"));
  EXPECT_EQ(a.descr, "<f8");
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 2, 2}));
  EXPECT_EQ(a.data.size(), 64u);
  EXPECT_EQ(std::memcmp(a.data.data(), d.data(), 64), 0);
}

TEST_F(Npy, EmptyArrays) {
  write_npy(path("e.npy"), nullptr, "<f4", {0});
  NpyArray a = read_npy(path("e.npy"));
  EXPECT_EQ(a.shape, (std::vector<int64_t>{0}));
  EXPECT_EQ(a.count(), 0);
  EXPECT_TRUE(a.data.empty());
  write_npy(path("e2.npy"), std::vector<double>{}, {3, 0});
  a = read_npy(path("e2.npy"));
  EXPECT_EQ(a.shape, (std::vector<int64_t>{3, 0}));
  EXPECT_TRUE(a.data.empty());
}

TEST_F(Npy, Bf16IsWrittenAsExactFloat32) {
  HostArray b(Dtype::bf16, 4);
  const double vals[] = {1.0, -0.1, 3.14159, 1e30};
  for (size_t i = 0; i < 4; ++i) b.set(i, vals[i]);
  write_npy(path("b.npy"), b, {2, 2});
  const NpyArray a = read_npy(path("b.npy"));
  EXPECT_EQ(a.descr, "<f4");
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 2}));
  ASSERT_EQ(a.data.size(), 16u);
  for (size_t i = 0; i < 4; ++i) {
    float f;
    std::memcpy(&f, a.data.data() + 4 * i, 4);
    EXPECT_EQ(static_cast<double>(f), b.get(i));
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    EXPECT_EQ(bits & 0xFFFFu, 0u) << "a bf16 value has zero low bits as a float";
  }
}

// ---- the exact header format ----------------------------------------------------------------------

TEST_F(Npy, HeaderFormat) {
  struct Case {
    std::vector<int64_t> shape;
    const char* shape_text;
  };
  const Case cases[] = {{{}, "()"},
                        {{5}, "(5,)"},
                        {{2, 3}, "(2, 3)"},
                        {{2, 3, 4}, "(2, 3, 4)"},
                        {std::vector<int64_t>(40, 1), nullptr}};
  for (const Case& c : cases) {
    int64_t n = 1;
    for (int64_t d : c.shape) n *= d;
    const std::vector<float> v(static_cast<size_t>(n), 2.0f);
    const std::string p = path("h.npy");
    write_npy(p, v.data(), "<f4", c.shape);
    const std::string f = read_bytes(p);
    ASSERT_GE(f.size(), 10u);
    EXPECT_EQ(f.substr(0, 6), std::string("\x93NUMPY"));
    EXPECT_EQ(f[6], '\x01');
    EXPECT_EQ(f[7], '\x00');
    const size_t hl = static_cast<unsigned char>(f[8]) |
                      (static_cast<size_t>(static_cast<unsigned char>(f[9])) << 8);
    EXPECT_EQ((10 + hl) % 64, 0u) << "header length " << hl;
    ASSERT_EQ(f.size(), 10 + hl + 4 * v.size());
    const std::string header = f.substr(10, hl);
    EXPECT_EQ(header.back(), '\n');
    if (c.shape_text) {
      const std::string dict =
          std::string("{'descr': '<f4', 'fortran_order': False, 'shape': ") + c.shape_text + ", }";
      EXPECT_EQ(header.substr(0, dict.size()), dict);
      EXPECT_EQ(header.find_first_not_of(' ', dict.size()), hl - 1) << "spaces up to the newline";
    }
    // The dict alone is about 60 characters, so the data starts at byte 128, as in NumPy's files;
    // the 40-dimensional shape needs one more 64-byte block.
    EXPECT_EQ(10 + hl, c.shape.size() > 10 ? 192u : 128u);
  }
}

// ---- writer errors --------------------------------------------------------------------------------

TEST_F(Npy, WriterErrorsNameThePath) {
  const float x = 1.0f;
  const std::string missing_dir = path("no_such_dir") + "/x.npy";
  try {
    write_npy(missing_dir, &x, "<f4", {1});
    ADD_FAILURE() << "expected an exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(missing_dir), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(path("no_such_dir"))) << "the writer must not create directories";

  EXPECT_THROW(write_npy(path("x.npy"), &x, "<f3", {1}), std::runtime_error);
  EXPECT_THROW(write_npy(path("x.npy"), &x, ">f4", {1}), std::runtime_error);
  EXPECT_THROW(write_npy(path("x.npy"), &x, "<f4", {-1}), std::runtime_error);
  HostArray h(Dtype::fp32, 6);
  EXPECT_THROW(write_npy(path("x.npy"), h, {2, 2}), std::runtime_error);
  EXPECT_THROW(write_npy(path("x.npy"), std::vector<double>(3), {2}), std::runtime_error);
  EXPECT_THROW(write_npy(dir_.string(), &x, "<f4", {1}), std::runtime_error)
      << "a directory is not a file";
}

// ---- malformed files ------------------------------------------------------------------------------

TEST_F(Npy, MissingFile) { expect_read_error(path("missing.npy"), "cannot open"); }

TEST_F(Npy, EmptyFileAndBadMagic) {
  write_bytes(path("empty.npy"), "");
  expect_read_error(path("empty.npy"), "bad magic");
  write_bytes(path("text.npy"), "hello world, this is not an npy file at all\n");
  expect_read_error(path("text.npy"), "bad magic");
  std::string f = make_npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }",
                           std::string(4, '\0'));
  f[1] = 'M';
  write_bytes(path("magic.npy"), f);
  expect_read_error(path("magic.npy"), "bad magic");
}

TEST_F(Npy, UnsupportedVersion) {
  for (int major : {0, 3, 4}) {
    std::string f = make_npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }",
                             std::string(4, '\0'));
    f[6] = static_cast<char>(major);
    write_bytes(path("v.npy"), f);
    expect_read_error(path("v.npy"), "unsupported format version");
  }
  std::string f = make_npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }",
                           std::string(4, '\0'));
  f[7] = 1;  // 1.1
  write_bytes(path("v.npy"), f);
  expect_read_error(path("v.npy"), "unsupported format version");
}

TEST_F(Npy, Version2HeaderIsRead) {
  const std::vector<double> v = {1.5, -2.0, 4.0};
  write_bytes(
      path("v2.npy"),
      make_npy(2, "{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }", as_bytes(v)));
  const NpyArray a = read_npy(path("v2.npy"));
  EXPECT_EQ(a.descr, "<f8");
  EXPECT_EQ(a.shape, (std::vector<int64_t>{3}));
  ASSERT_EQ(a.data.size(), 24u);
  EXPECT_EQ(std::memcmp(a.data.data(), v.data(), 24), 0);
}

TEST_F(Npy, TruncatedData) {
  const std::vector<float> v(6, 1.0f);
  write_npy(path("t.npy"), v.data(), "<f4", {2, 3});
  std::string f = read_bytes(path("t.npy"));
  f.resize(f.size() - 1);
  write_bytes(path("t.npy"), f);
  expect_read_error(path("t.npy"), "truncated data");
}

TEST_F(Npy, HeaderClaimsMoreData) {
  const std::vector<float> v(6, 1.0f);
  write_npy(path("m.npy"), v.data(), "<f4", {2, 3});
  std::string f = read_bytes(path("m.npy"));
  const size_t at = f.find("(2, 3)");
  ASSERT_NE(at, std::string::npos);
  f.replace(at, 6, "(9, 3)");
  write_bytes(path("m.npy"), f);
  expect_read_error(path("m.npy"), "needs 108 bytes");
  // A huge claimed shape must fail cleanly too (no giant allocation).
  write_bytes(
      path("huge.npy"),
      make_npy(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (4611686018427387904, 4), }",
               ""));
  expect_read_error(path("huge.npy"), "too large");
  write_bytes(
      path("big.npy"),
      make_npy(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (100000000000,), }", ""));
  expect_read_error(path("big.npy"), "truncated data");
}

TEST_F(Npy, TrailingBytesAfterData) {
  write_bytes(path("tr.npy"),
              make_npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }",
                       std::string(5, '\0')));
  expect_read_error(path("tr.npy"), "unexpected bytes after the data");
}

TEST_F(Npy, TruncatedHeader) {
  std::string f = make_npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }",
                           std::string(4, '\0'));
  write_bytes(path("th.npy"), f.substr(0, 40));
  expect_read_error(path("th.npy"), "truncated header");
  write_bytes(path("th2.npy"), f.substr(0, 9));
  expect_read_error(path("th2.npy"), "truncated header");
}

TEST_F(Npy, MalformedHeaders) {
  const char* bad[] = {
      "",
      "not a dict",
      "{'descr': '<f4', 'fortran_order': False, }",                           // no shape
      "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'extra': 1}",  // unknown key
      "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,)}",
      "{'descr': '<f4', 'fortran_order': false, 'shape': (1,), }",  // not Python's False
      "{'descr': '<f4', 'fortran_order': False, 'shape': (1), }",   // an int, not a tuple
      "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (1,, 2), }",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (1,) 'x'}",
      "{'descr': '<f4 , 'fortran_order': False, 'shape': (1,), }",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), } trailing",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }",
  };
  for (const char* dict : bad) {
    write_bytes(path("bad.npy"), make_npy(1, dict, std::string(4, '\0')));
    SCOPED_TRACE(dict);
    expect_read_error(path("bad.npy"), "malformed header");
  }
  // A header length beyond the file.
  std::string f = make_npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }",
                           std::string(4, '\0'));
  f[8] = '\xFF';
  f[9] = '\xFF';
  write_bytes(path("hl.npy"), f);
  expect_read_error(path("hl.npy"), "truncated header");
}

TEST_F(Npy, AcceptedHeaderVariants) {
  // Double quotes, no trailing comma, extra spaces, NumPy's growth padding, Python 2 long suffix.
  const char* good[] = {
      "{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (2,)}",
      "{'shape': (2,), 'fortran_order': False, 'descr': '<f4'}",
      "{ 'descr' : '<f4' , 'fortran_order' : False , 'shape' : ( 2 , ) , }",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2L,), }",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }                                  "
      " ",
  };
  for (const char* dict : good) {
    SCOPED_TRACE(dict);
    write_bytes(path("ok.npy"), make_npy(1, dict, std::string(8, '\0')));
    const NpyArray a = read_npy(path("ok.npy"));
    EXPECT_EQ(a.descr, "<f4");
    EXPECT_EQ(a.shape, (std::vector<int64_t>{2}));
  }
}

TEST_F(Npy, UnsupportedDescrAndFortranOrder) {
  write_bytes(path("be.npy"),
              make_npy(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }",
                       std::string(4, '\0')));
  expect_read_error(path("be.npy"), "unsupported descr");
  write_bytes(path("c.npy"),
              make_npy(1, "{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }",
                       std::string(8, '\0')));
  expect_read_error(path("c.npy"), "unsupported descr");
  write_bytes(path("st.npy"),
              make_npy(1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }",
                       std::string(4, '\0')));
  expect_read_error(path("st.npy"), "unsupported descr");
  write_bytes(path("f.npy"),
              make_npy(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }",
                       std::string(24, '\0')));
  expect_read_error(path("f.npy"), "fortran_order");
  write_bytes(path("u1.npy"),
              make_npy(1, "{'descr': '|u1', 'fortran_order': False, 'shape': (3,), }", "abc"));
  EXPECT_EQ(read_npy(path("u1.npy")).data.size(), 3u);
}

}  // namespace
}  // namespace conv1d
