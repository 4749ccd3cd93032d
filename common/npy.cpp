// NumPy .npy files: a writer of format version 1.0 and a reader of versions 1.0 and 2.0.
//
// Layout of a file (numpy/lib/format.py, "NPY format"):
//   "\x93NUMPY"  major  minor  HEADER_LEN  header  data
// HEADER_LEN is a little-endian uint16 in version 1.0 and uint32 in 2.0. The header is the repr of
// a Python dict with the keys 'descr', 'fortran_order' and 'shape', padded with spaces and ended by
// '\n' so that magic + version + HEADER_LEN + header is a multiple of 64 bytes (the data then starts
// aligned). The data follows as raw bytes in the byte order named by the descr.
#include "common/npy.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <stdexcept>

namespace conv1d {

namespace {

const char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
constexpr size_t kAlign = 64;
constexpr uint32_t kMaxHeaderLen = 1u
                                   << 20;  // far above anything NumPy writes; guards corrupt files

bool host_is_little_endian() {
  const uint16_t one = 1;
  unsigned char b;
  std::memcpy(&b, &one, 1);
  return b == 1;
}

[[noreturn]] void fail(const char* who, const std::string& path, const std::string& what) {
  throw std::runtime_error(std::string(who) + ": '" + path + "': " + what);
}

// The element size of a descr we understand ("<f4", "|u1", ...), or 0 if it is not one of them:
// little-endian (or byte-order-free for one byte) floats, signed and unsigned integers, booleans.
size_t descr_itemsize(const std::string& d) {
  if (d.size() < 3) return 0;
  const char order = d[0], kind = d[1];
  const std::string digits = d.substr(2);
  if (digits != "1" && digits != "2" && digits != "4" && digits != "8") return 0;
  const size_t size = static_cast<size_t>(digits[0] - '0');
  if (order != '<' && !(order == '|' && size == 1)) return 0;
  switch (kind) {
    case 'f': return size >= 2 ? size : 0;
    case 'i':
    case 'u': return size;
    case 'b': return size == 1 ? 1 : 0;
    default: return 0;
  }
}

std::string shape_repr(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ",";  // a one-element Python tuple
  return s + ")";
}

// Number of elements of `shape`, or -1 if a dimension is negative or the product overflows.
int64_t shape_count(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return -1;
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d) return -1;
    n *= d;
  }
  return n;
}

// ---- Reading the header dict --------------------------------------------------------------------

// A tiny parser for the Python literals NumPy writes in the header: a dict of string keys whose
// values are a string, True/False, or a tuple of non-negative integers.
class HeaderParser {
 public:
  HeaderParser(const std::string& text, const std::string& path) : s_(text), path_(path) {}

  void parse(NpyArray* out) {
    bool have_descr = false, have_order = false, have_shape = false;
    skip_ws();
    expect('{');
    skip_ws();
    while (peek() != '}') {
      const std::string key = parse_string();
      skip_ws();
      expect(':');
      skip_ws();
      if (key == "descr") {
        if (have_descr) bad("duplicate key 'descr'");
        if (peek() != '\'' && peek() != '"') {
          fail("read_npy", path_,
               "unsupported descr (structured dtypes are not supported): expected a string such as "
               "'<f4'");
        }
        out->descr = parse_string();
        have_descr = true;
      } else if (key == "fortran_order") {
        if (have_order) bad("duplicate key 'fortran_order'");
        out->fortran_order = parse_bool();
        have_order = true;
      } else if (key == "shape") {
        if (have_shape) bad("duplicate key 'shape'");
        out->shape = parse_shape();
        have_shape = true;
      } else {
        bad("unexpected key '" + key + "'");
      }
      skip_ws();
      if (peek() == ',') {
        ++pos_;
        skip_ws();
      } else if (peek() != '}') {
        bad("expected ',' or '}'");
      }
    }
    ++pos_;  // '}'
    skip_ws();
    if (pos_ != s_.size()) bad("unexpected text after the closing '}'");
    if (!have_descr || !have_order || !have_shape) {
      bad("expected the keys 'descr', 'fortran_order' and 'shape'");
    }
  }

 private:
  [[noreturn]] void bad(const std::string& what) const {
    fail("read_npy", path_,
         "malformed header (" + what + " at offset " + std::to_string(pos_) + "): '" + s_ + "'");
  }
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  void skip_ws() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r'))
      ++pos_;
  }
  void expect(char c) {
    if (peek() != c) bad(std::string("expected '") + c + "'");
    ++pos_;
  }
  bool match_word(const char* w) {
    const size_t n = std::strlen(w);
    if (s_.compare(pos_, n, w) != 0) return false;
    pos_ += n;
    return true;
  }
  std::string parse_string() {
    const char q = peek();
    if (q != '\'' && q != '"') bad("expected a quoted string");
    const size_t start = ++pos_;
    while (pos_ < s_.size() && s_[pos_] != q) {
      if (s_[pos_] == '\\') bad("escape sequences are not supported");
      ++pos_;
    }
    if (pos_ >= s_.size()) bad("unterminated string");
    return s_.substr(start, pos_++ - start);
  }
  bool parse_bool() {
    if (match_word("True")) return true;
    if (match_word("False")) return false;
    bad("expected True or False");
  }
  int64_t parse_int() {
    if (peek() < '0' || peek() > '9') bad("expected a non-negative integer");
    int64_t v = 0;
    while (peek() >= '0' && peek() <= '9') {
      const int digit = peek() - '0';
      if (v > (std::numeric_limits<int64_t>::max() - digit) / 10) bad("dimension too large");
      v = v * 10 + digit;
      ++pos_;
    }
    if (peek() == 'L') ++pos_;  // Python 2 long suffix, found in old files
    return v;
  }
  std::vector<int64_t> parse_shape() {
    std::vector<int64_t> shape;
    expect('(');
    skip_ws();
    bool trailing_comma = false;
    while (peek() != ')') {
      shape.push_back(parse_int());
      skip_ws();
      trailing_comma = false;
      if (peek() == ',') {
        ++pos_;
        skip_ws();
        trailing_comma = true;
      } else if (peek() != ')') {
        bad("expected ',' or ')' in the shape");
      }
    }
    ++pos_;  // ')'
    if (shape.size() == 1 && !trailing_comma)
      bad("a one-element shape needs a trailing comma, as in (5,)");
    return shape;
  }

  const std::string& s_;
  const std::string& path_;
  size_t pos_ = 0;
};

}  // namespace

int64_t NpyArray::count() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// ---- Writing -------------------------------------------------------------------------------------

void write_npy(const std::string& path, const void* data, const std::string& descr,
               const std::vector<int64_t>& shape) {
  const size_t itemsize = descr_itemsize(descr);
  if (itemsize == 0)
    fail("write_npy", path,
         "unsupported descr '" + descr + "' (expected e.g. '<f4', '<f2', '<f8', '<i4', '<u2')");
  if (!host_is_little_endian()) fail("write_npy", path, "only little-endian hosts are supported");
  const int64_t count = shape_count(shape);
  if (count < 0) fail("write_npy", path, "invalid shape " + shape_repr(shape));
  if (static_cast<uint64_t>(count) > std::numeric_limits<size_t>::max() / itemsize) {
    fail("write_npy", path, "array too large");
  }
  const size_t nbytes = static_cast<size_t>(count) * itemsize;
  if (nbytes > 0 && data == nullptr) fail("write_npy", path, "no data for a non-empty array");

  std::string header =
      "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape_repr(shape) + ", }";
  // Pad with spaces so that, with the final '\n', the preamble (10 bytes) plus header is aligned.
  const size_t preamble = kMagicLen + 2 + 2;
  const size_t unpadded = preamble + header.size() + 1;
  header.append((kAlign - unpadded % kAlign) % kAlign, ' ');
  header += '\n';
  if (header.size() > 0xFFFF) fail("write_npy", path, "header too long for format version 1.0");

  std::string preamble_bytes(kMagic, kMagicLen);
  preamble_bytes += '\x01';  // major version
  preamble_bytes += '\x00';  // minor version
  preamble_bytes += static_cast<char>(header.size() & 0xFF);
  preamble_bytes += static_cast<char>((header.size() >> 8) & 0xFF);

  errno = 0;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f)
    fail("write_npy", path, std::string("cannot open for writing (") + std::strerror(errno) + ")");
  errno = 0;
  bool ok =
      std::fwrite(preamble_bytes.data(), 1, preamble_bytes.size(), f) == preamble_bytes.size() &&
      std::fwrite(header.data(), 1, header.size(), f) == header.size() &&
      (nbytes == 0 || std::fwrite(data, 1, nbytes, f) == nbytes);
  const int saved_errno = errno;
  ok = (std::fclose(f) == 0) && ok;
  if (!ok) {
    std::remove(path.c_str());  // leave no half-written file behind
    fail("write_npy", path,
         std::string("write failed (") + std::strerror(saved_errno ? saved_errno : errno) + ")");
  }
}

void write_npy(const std::string& path, const HostArray& a, const std::vector<int64_t>& shape) {
  const int64_t count = shape_count(shape);
  if (count < 0 || static_cast<uint64_t>(count) != a.size()) {
    fail("write_npy", path,
         "shape " + shape_repr(shape) + " does not match the array's " + std::to_string(a.size()) +
             " elements");
  }
  switch (a.dtype()) {
    case Dtype::fp32: write_npy(path, a.data(), "<f4", shape); return;
    case Dtype::fp16: write_npy(path, a.data(), "<f2", shape); return;
    case Dtype::bf16: {
      // NumPy has no bfloat16: widen to float32, which holds every bf16 value exactly.
      std::vector<float> wide(a.size());
      for (size_t i = 0; i < a.size(); ++i) wide[i] = static_cast<float>(a.get(i));
      write_npy(path, wide.data(), "<f4", shape);
      return;
    }
  }
}

void write_npy(const std::string& path, const std::vector<double>& a,
               const std::vector<int64_t>& shape) {
  const int64_t count = shape_count(shape);
  if (count < 0 || static_cast<uint64_t>(count) != a.size()) {
    fail("write_npy", path,
         "shape " + shape_repr(shape) + " does not match the vector's " + std::to_string(a.size()) +
             " elements");
  }
  write_npy(path, a.data(), "<f8", shape);
}

// ---- Reading -------------------------------------------------------------------------------------

NpyArray read_npy(const std::string& path) {
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    fail("read_npy", path,
         std::string("cannot open for reading") +
             (errno ? std::string(" (") + std::strerror(errno) + ")" : std::string()));
  }
  in.seekg(0, std::ios::end);
  const std::streamoff file_size = in.tellg();
  in.seekg(0, std::ios::beg);
  if (file_size < 0) fail("read_npy", path, "cannot determine the file size");

  auto read_exact = [&](void* dst, size_t n) {
    return n == 0 ||
           static_cast<bool>(in.read(static_cast<char*>(dst), static_cast<std::streamsize>(n)));
  };

  unsigned char pre[kMagicLen + 2];
  if (!read_exact(pre, kMagicLen) || std::memcmp(pre, kMagic, kMagicLen) != 0) {
    fail("read_npy", path, "bad magic: expected a .npy file starting with \"\\x93NUMPY\"");
  }
  if (!read_exact(pre + kMagicLen, 2))
    fail("read_npy", path, "truncated header: the format version is missing");
  const int major = pre[kMagicLen], minor = pre[kMagicLen + 1];
  if ((major != 1 && major != 2) || minor != 0) {
    fail("read_npy", path,
         "unsupported format version " + std::to_string(major) + "." + std::to_string(minor) +
             " (expected 1.0 or 2.0)");
  }
  const size_t len_bytes = major == 1 ? 2 : 4;
  unsigned char len_le[4] = {0, 0, 0, 0};
  if (!read_exact(len_le, len_bytes))
    fail("read_npy", path, "truncated header: the header length is missing");
  uint32_t header_len = 0;
  for (size_t i = len_bytes; i-- > 0;) header_len = (header_len << 8) | len_le[i];
  if (header_len > kMaxHeaderLen) {
    fail("read_npy", path,
         "malformed header: length " + std::to_string(header_len) + " (expected at most " +
             std::to_string(kMaxHeaderLen) + ")");
  }
  std::string header(header_len, '\0');
  if (!read_exact(&header[0], header_len)) {
    fail("read_npy", path,
         "truncated header: expected " + std::to_string(header_len) + " header bytes");
  }

  NpyArray a;
  HeaderParser(header, path).parse(&a);

  const size_t itemsize = descr_itemsize(a.descr);
  if (itemsize == 0) {
    fail("read_npy", path,
         "unsupported descr '" + a.descr +
             "' (expected little-endian f2/f4/f8, i1..i8, u1..u8 or b1)");
  }
  if (a.fortran_order) {
    fail("read_npy", path,
         "fortran_order arrays are not supported: expected a C-ordered array "
         "(save numpy.ascontiguousarray(a))");
  }
  const int64_t count = shape_count(a.shape);
  const int64_t data_offset = static_cast<int64_t>(kMagicLen + 2 + len_bytes + header_len);
  const int64_t available = static_cast<int64_t>(file_size) - data_offset;
  if (count < 0 || count > std::numeric_limits<int64_t>::max() / static_cast<int64_t>(itemsize)) {
    fail("read_npy", path, "shape " + shape_repr(a.shape) + " is too large");
  }
  const int64_t expected = count * static_cast<int64_t>(itemsize);
  if (available < expected) {
    fail("read_npy", path,
         "truncated data: shape " + shape_repr(a.shape) + " of '" + a.descr + "' needs " +
             std::to_string(expected) + " bytes, the file has " + std::to_string(available));
  }
  if (available > expected) {
    fail("read_npy", path,
         std::to_string(available - expected) + " unexpected bytes after the data (shape " +
             shape_repr(a.shape) + " of '" + a.descr + "' needs " + std::to_string(expected) + ")");
  }
  if (!host_is_little_endian()) fail("read_npy", path, "only little-endian hosts are supported");
  a.data.resize(static_cast<size_t>(expected));
  if (!read_exact(a.data.data(), a.data.size())) {
    fail("read_npy", path, "read failed: expected " + std::to_string(expected) + " bytes of data");
  }
  return a;
}

}  // namespace conv1d
