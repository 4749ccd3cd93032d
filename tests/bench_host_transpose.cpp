// The host-transpose anomaly: in the results measured before common/preprocess.h's transpose got its
// present loop, chapters 02 and 03 spent about twice as long in their two host transposes as
// chapters 01 and 04, in every run, although all four call the same conv1d::transpose_batched on the
// same data. This benchmark times that transpose at a chapter's
// shape under each condition that could make the difference, one section per hypothesis:
//
//   malloc  the chapters' own allocation sequences through std::vector, each in a fresh process:
//           glibc's dynamic mmap threshold decides whether a buffer is fresh mmapped memory (page
//           faults on first touch) or heap memory an earlier run already touched
//   code    the machine code: the library's loop (each tile's bounds computed once, which stays in
//           registers wherever it is inlined), and the earlier loop (bounds tested twice per
//           element) with its running pointer, stride and bound kept on the stack, as the compiler
//           made it where it inlined that loop into chapters 02 and 03 (chapter 04 called an
//           out-of-line copy, chapter 01 kept it in registers)
//   align   the destination's offset modulo 4096 (4K aliasing between the loads and the stores)
//   pages   2 MiB transparent huge pages asked for or refused with madvise (TLB reach)
//
// Host only: no GPU is needed. Each row gives the median, min and max of --iters runs after
// --warmup runs, the minor page faults per run and the most in one run (getrusage), and where the
// buffers lie: the heap (brk) or an mmap, the offset of the data modulo 4096, and the kB of that
// mapping in huge pages.
//
// What it showed (alike on a 2-core development VM and on the H200 machine's 16-core host): the
// code section alone makes the difference. With its running destination pointer on the
// stack the loop takes about twice as long in both directions; the other spilled values, the
// destination's offset modulo 4096 and huge pages change little; the allocation sequences explain
// chapter 01's slower "host buffer for C" (a cold, sometimes freshly faulted buffer, where chapters
// 02-04 reuse the memory xt has just left warm) but not the transposes.
//
//   conv1d_bench_host_transpose [--batch B] [--dim D] [--seqlen L] [--width W] [--iters N]
//                               [--warmup N] [--section malloc|code|align|pages|all]
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <malloc.h>  // mallopt (glibc)

#include "common/preprocess.h"
#include "common/timing.h"

namespace {

using conv1d::host_now_ns;

struct Settings {
  int64_t batch = 4, dim = 512, seqlen = 2048;  // the chapters' default shape
  int width = 4;
  int iters = 10, warmup = 2;  // as the chapters time their runs
  std::string section = "all";
  int64_t elements() const { return batch * dim * seqlen; }
};

// One of the chapters' two transposes, [B, rows, cols] -> [B, cols, rows].
struct Direction {
  const char* name;
  int64_t rows, cols;
};
std::vector<Direction> directions(const Settings& s) {
  return {{"x to [B,L,D]", s.dim, s.seqlen}, {"C to [B,D,L]", s.seqlen, s.dim}};
}

// ---------------------------------------------------------------------------------------------
// Machine codes of the same transpose.

using TransposeFn = void (*)(const float* in, float* out, int64_t batch, int64_t rows,
                             int64_t cols);

// The library's transpose through its one out-of-line copy, as chapter 04 calls it. The pointer is
// hidden from the optimizer (the empty asm may change it), so no call here is inlined and compiled
// anew in another context.
void transpose_library(const float* in, float* out, int64_t batch, int64_t rows, int64_t cols) {
  static TransposeFn out_of_line = [] {
    TransposeFn fn = conv1d::transpose_batched<float>;
    asm volatile("" : "+r"(fn));
    return fn;
  }();
  out_of_line(in, out, batch, rows, cols);
}

// An empty asm statement that may read and write `v`: the compiler must store `v` to memory before
// it and load it again after it. (A GCC/Clang extension; it emits no instruction of its own.)
template <class V>
inline void keep_in_memory(V& v) {
  asm volatile("" : "+m"(v));
}

// The earlier loop, element for element, with values of its innermost loop kept on the stack as
// chapters 02 and 03 got it from the compiler: there the loop is inlined into the upload and
// download lambdas, and the register allocator spills the running destination pointer (kPointer)
// and the source row, the stride and the loop bound (kOthers). The pointer costs a store and a load
// per element, and each element's store address waits for that load; the others cost a load each.
template <bool kPointer, bool kOthers>
[[gnu::noinline]] void transpose_spilled(const float* in, float* out, int64_t batch, int64_t rows,
                                         int64_t cols) {
  constexpr int64_t kTile = 32;
  for (int64_t b = 0; b < batch; ++b) {
    const float* src = in + b * rows * cols;
    float* dst = out + b * rows * cols;
    for (int64_t r0 = 0; r0 < rows; r0 += kTile)
      for (int64_t c0 = 0; c0 < cols; c0 += kTile)
        for (int64_t r = r0; r < r0 + kTile && r < rows; ++r) {
          const float* row = src + r * cols;
          float* d = dst + c0 * rows + r;  // dst[c * rows + r], c from c0
          int64_t stride = rows, end = std::min(c0 + kTile, cols);
          for (int64_t c = c0; c < end; ++c) {
            *d = row[c];
            d += stride;
            if (kPointer) keep_in_memory(d);
            if (kOthers) {
              keep_in_memory(row);
              keep_in_memory(stride);
              keep_in_memory(end);
            }
          }
        }
  }
}

// ---------------------------------------------------------------------------------------------
// Measuring: wall time and minor page faults per run.

int64_t minor_faults() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_minflt;
}

struct Row {
  std::string condition, step;
  std::vector<double> ms;
  std::vector<int64_t> faults;
  std::string where;  // where the buffers lie
};

void print_header() {
  std::printf("  %-34s %-22s %9s %9s %9s %11s %7s  %s\n", "condition", "step", "median ms",
              "min ms", "max ms", "faults/run", "(max)", "buffers (src -> dst)");
}

void print_row(const Row& r) {
  std::vector<double> ms = r.ms;
  std::sort(ms.begin(), ms.end());
  const size_t n = ms.size();
  const double median = n == 0 ? 0 : (n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]));
  double faults = 0;  // the mean, and the most in one run
  int64_t most = 0;
  for (int64_t f : r.faults) {
    faults += double(f);
    most = std::max(most, f);
  }
  if (!r.faults.empty()) faults /= double(r.faults.size());
  std::printf("  %-34s %-22s %9.3f %9.3f %9.3f %11.0f %7lld  %s\n", r.condition.c_str(),
              r.step.c_str(), median, n ? ms.front() : 0.0, n ? ms.back() : 0.0, faults,
              static_cast<long long>(most), r.where.c_str());
  std::fflush(stdout);
}

// Runs `step` --warmup times, then --iters times into `row`.
template <class Step>
void measure(const Settings& s, Row& row, Step&& step) {
  for (int i = 0; i < s.warmup; ++i) step();
  for (int i = 0; i < s.iters; ++i) {
    const int64_t f0 = minor_faults(), t0 = host_now_ns();
    step();
    const int64_t t1 = host_now_ns(), f1 = minor_faults();
    row.ms.push_back((t1 - t0) * 1e-6);
    row.faults.push_back(f1 - f0);
  }
}

// ---------------------------------------------------------------------------------------------
// Where a buffer lies, from /proc/self/smaps: the mapping that holds it ("heap" is the brk area
// malloc grows; "mmap" any other anonymous mapping), its offset modulo 4096 and the kB of the
// mapping backed by transparent huge pages.

std::string placement(const void* p) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  std::ifstream smaps("/proc/self/smaps");
  std::string line, region = "?";
  bool inside = false;
  long huge_kb = -1;
  while (std::getline(smaps, line)) {
    unsigned long lo = 0, hi = 0;
    // A mapping's first line: "lo-hi perms offset dev inode [path]"; then "Key: value kB" lines.
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 && line.find(':') > line.find(' ')) {
      if (inside) break;  // past the mapping that holds p
      inside = a >= lo && a < hi;
      if (inside) region = line.find("[heap]") != std::string::npos ? "heap" : "mmap";
    } else if (inside && line.rfind("AnonHugePages:", 0) == 0) {
      huge_kb = std::atol(line.c_str() + std::strlen("AnonHugePages:"));
    }
  }
  char buf[96];
  std::snprintf(buf, sizeof buf, "%s+%lu, THP %ld kB", region.c_str(),
                static_cast<unsigned long>(a % 4096), huge_kb);
  return buf;
}

std::string placement(const void* src, const void* dst) {
  return placement(src) + " -> " + placement(dst);
}

// ---------------------------------------------------------------------------------------------
// Buffers of our own for the sections after malloc: mmapped directly, so that they leave glibc's
// malloc as it was; 2 MiB aligned plus `offset` bytes; huge pages asked for, refused, or left to
// the system's setting; touched once here, so that no timed run takes a page fault.

enum class Thp { system, on, off };

class MappedBuffer {
 public:
  MappedBuffer(int64_t elements, size_t offset, Thp thp) {
    const size_t huge = size_t(2) << 20, bytes = size_t(elements) * sizeof(float) + offset;
    len_ = bytes + huge;
    base_ = mmap(nullptr, len_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base_ == MAP_FAILED) {
      std::perror("mmap");
      std::exit(1);
    }
    char* aligned =
        reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(base_) + huge - 1) & ~(huge - 1));
    if (thp != Thp::system)
      madvise(aligned, bytes, thp == Thp::on ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
    data_ = reinterpret_cast<float*>(aligned + offset);
    for (int64_t i = 0; i < elements; ++i) data_[i] = float(i % 1000);
  }
  ~MappedBuffer() { munmap(base_, len_); }
  MappedBuffer(const MappedBuffer&) = delete;
  MappedBuffer& operator=(const MappedBuffer&) = delete;
  float* data() { return data_; }

 private:
  void* base_ = nullptr;
  size_t len_ = 0;
  float* data_ = nullptr;
};

void time_transpose(const Settings& s, const std::string& condition, TransposeFn fn,
                    MappedBuffer& src, MappedBuffer& dst, const Direction& d) {
  Row row{condition, d.name, {}, {}, placement(src.data(), dst.data())};
  measure(s, row, [&] { fn(src.data(), dst.data(), s.batch, d.rows, d.cols); });
  print_row(row);
}

// ---------------------------------------------------------------------------------------------
// Section malloc: the host side of one variant's runs, as common/runner.cu drives them (a
// verification run, the warm-up runs, the timed runs), with each chapter's std::vector buffers
// created inside the run. The phases carry the chapters' names; the transposes call the same
// out-of-line function in every sequence, so that only the memory differs.

struct PhaseLog {
  bool timed = false;     // record the phases of this run
  bool describe = false;  // and say where its buffers lie (the last run)
  std::map<std::string, Row> rows;
  std::vector<std::string> order;

  template <class Step>
  void phase(const std::string& name, Step&& step) {
    const int64_t f0 = minor_faults(), t0 = host_now_ns();
    step();
    const int64_t t1 = host_now_ns(), f1 = minor_faults();
    if (!timed) return;
    if (!rows.count(name)) order.push_back(name);
    Row& r = rows[name];
    r.step = name;
    r.ms.push_back((t1 - t0) * 1e-6);
    r.faults.push_back(f1 - f0);
  }
};

// The problem's and the frame's big host arrays, allocated before any variant runs: x and its fp64
// copy for the reference (freed again), the fp64 reference, and the variant's output array.
struct ProblemArrays {
  std::vector<uint32_t> x, out;
  std::vector<double> ref;
  explicit ProblemArrays(int64_t n) : x(n, 0x3f800000u) {
    { std::vector<double> x_fp64(n, 1.0); }
    ref.assign(n, 0.0);
    out.assign(n, 0u);
  }
  const float* xf() const { return reinterpret_cast<const float*>(x.data()); }
  float* outf() { return reinterpret_cast<float*>(out.data()); }
};

// chapters/02_gpu_preprocess/pipeline.cuh, upload<T> and download<T> (chapters 03 and 04 reuse
// them).
void run_ch02(const Settings& s, ProblemArrays& p, PhaseLog& log, std::string* where) {
  const int64_t B = s.batch, D = s.dim, L = s.seqlen;
  {
    std::vector<float> xt;
    log.phase("transpose x to [B,L,D]", [&] {
      xt.resize(B * L * D);
      transpose_library(p.xf(), xt.data(), B, D, L);
    });
    if (log.describe) *where = "xt " + placement(xt.data());
  }  // upload returns: xt is freed (the copy to the device is done)
  std::vector<float> c;
  log.phase("host buffer for C", [&] { c.resize(B * L * D); });
  log.phase("transpose C to [B,D,L]", [&] { transpose_library(c.data(), p.outf(), B, L, D); });
  if (log.describe) *where += "; C " + placement(c.data());
}

// chapters/01_host_img2col/pipeline.cuh, run_pipeline<T>: every buffer lives until the run ends.
void run_ch01(const Settings& s, ProblemArrays& p, const std::vector<float>& weight, PhaseLog& log,
              std::string* where) {
  const int64_t B = s.batch, D = s.dim, L = s.seqlen;
  const int W = s.width;
  std::vector<float> xt, xp, a, bw, c;
  log.phase("transpose x to [B,L,D]", [&] {
    xt.resize(B * L * D);
    transpose_library(p.xf(), xt.data(), B, D, L);
  });
  log.phase("pad W-1 zeros", [&] {
    xp.resize(B * (L + W - 1) * D);
    conv1d::pad_time(xt.data(), xp.data(), B, L, D, W);
  });
  log.phase("img2col into A", [&] {
    a.resize(B * L * W * D);
    conv1d::img2col(xp.data(), a.data(), B, L, D, W);
  });
  log.phase("expand weights into Bw", [&] {
    bw.resize(int64_t(W) * D * D);
    conv1d::expand_weights(weight.data(), bw.data(), D, W);
  });
  log.phase("host buffer for C", [&] { c.resize(B * L * D); });
  log.phase("transpose C to [B,D,L]", [&] { transpose_library(c.data(), p.outf(), B, L, D); });
  if (log.describe) *where = "xt " + placement(xt.data()) + "; C " + placement(c.data());
}

// One sequence in a child process of its own, so that glibc's malloc starts as in a freshly started
// chapter and no sequence inherits another's heap.
template <class Setup, class Run>
void in_fresh_process(const std::string& condition, Setup&& setup, Run&& run) {
  std::fflush(stdout);
  const pid_t pid = fork();
  if (pid < 0) {
    std::perror("fork");
    std::exit(1);
  }
  if (pid == 0) {
    setup();
    run(condition);
    std::fflush(stdout);
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "conv1d_bench_host_transpose: the %s sequence failed\n",
                 condition.c_str());
    std::exit(1);
  }
}

void section_malloc(const Settings& s) {
  std::printf(
      "\n[malloc] the chapters' allocation sequences (std::vector per run, glibc malloc), the "
      "library's transpose in registers\n");
  print_header();
  auto sequence = [&](const std::string& condition, bool chapter01) {
    ProblemArrays p(s.elements());
    const std::vector<float> weight(s.dim * s.width, 0.5f);
    PhaseLog log;
    std::string where;
    auto one_run = [&] {
      if (chapter01)
        run_ch01(s, p, weight, log, &where);
      else
        run_ch02(s, p, log, &where);
    };
    one_run();  // the verification run
    for (int i = 0; i < s.warmup; ++i) one_run();
    log.timed = true;
    for (int i = 0; i < s.iters; ++i) {
      log.describe = i == s.iters - 1;
      one_run();
    }
    for (const std::string& name : log.order) {
      Row& r = log.rows[name];
      r.condition = condition;
      print_row(r);
    }
    std::printf("  %-34s buffers of the last run: %s\n", "", where.c_str());
  };
  auto no_setup = [] {};
  in_fresh_process("ch01 sequence", no_setup, [&](const std::string& c) { sequence(c, true); });
  in_fresh_process("ch02/03/04 sequence", no_setup,
                   [&](const std::string& c) { sequence(c, false); });
  // A fixed threshold turns the dynamic one off: every 16 MiB buffer is then a fresh mmap each run.
  in_fresh_process(
      "ch02/03/04, mmap threshold fixed", [] { mallopt(M_MMAP_THRESHOLD, 128 * 1024); },
      [&](const std::string& c) { sequence(c, false); });
}

// ---------------------------------------------------------------------------------------------
// Sections code, align and pages: the transpose alone between two touched buffers of our own. The
// source starts 16 bytes into a page, where malloc puts the data of an mmapped chunk.

constexpr size_t kMallocOffset = 16;

void section_code(const Settings& s) {
  std::printf(
      "\n[code] the same loop, several machine codes (buffers touched once, offset 16, THP as the "
      "system has it)\n");
  print_header();
  MappedBuffer a(s.elements(), kMallocOffset, Thp::system),
      b(s.elements(), kMallocOffset, Thp::system);
  for (const Direction& d : directions(s)) {
    time_transpose(s, "library (in registers)", transpose_library, a, b, d);
    time_transpose(s, "earlier, all on stack (ch02, ch03)", transpose_spilled<true, true>, a, b, d);
    time_transpose(s, "earlier, the pointer on the stack", transpose_spilled<true, false>, a, b, d);
    time_transpose(s, "earlier, row/stride/bound on stack", transpose_spilled<false, true>, a, b,
                   d);
  }
}

void section_align(const Settings& s) {
  std::printf(
      "\n[align] destination offset modulo 4096 (source at +16), the library's transpose in "
      "registers\n");
  print_header();
  MappedBuffer src(s.elements(), kMallocOffset, Thp::system);
  for (size_t offset : {size_t(0), size_t(16), size_t(64), size_t(1024), size_t(2048), size_t(2064),
                        size_t(4080)}) {
    MappedBuffer dst(s.elements(), offset, Thp::system);
    for (const Direction& d : directions(s))
      time_transpose(s, "dst at +" + std::to_string(offset), transpose_library, src, dst, d);
  }
}

void section_pages(const Settings& s) {
  std::printf(
      "\n[pages] transparent huge pages on both buffers, asked for or refused with madvise\n");
  print_header();
  for (Thp thp : {Thp::off, Thp::on}) {
    MappedBuffer a(s.elements(), kMallocOffset, thp), b(s.elements(), kMallocOffset, thp);
    const std::string huge = thp == Thp::on ? "MADV_HUGEPAGE" : "MADV_NOHUGEPAGE";
    for (const Direction& d : directions(s)) {
      time_transpose(s, huge + ", in registers", transpose_library, a, b, d);
      time_transpose(s, huge + ", on the stack", transpose_spilled<true, true>, a, b, d);
    }
  }
}

// ---------------------------------------------------------------------------------------------

// Both codes must transpose: checked at the run's shape before anything is timed.
bool codes_agree(const Settings& s) {
  const int64_t n = s.elements();
  std::vector<float> x(n), want(n), got(n);
  for (int64_t i = 0; i < n; ++i) x[i] = float(i);
  for (const Direction& d : directions(s)) {
    transpose_library(x.data(), want.data(), s.batch, d.rows, d.cols);
    for (TransposeFn fn : {transpose_spilled<true, true>, transpose_spilled<true, false>,
                           transpose_spilled<false, true>}) {
      std::fill(got.begin(), got.end(), -1.0f);
      fn(x.data(), got.data(), s.batch, d.rows, d.cols);
      if (want != got) return false;
    }
    for (int64_t b = 0; b < s.batch; ++b)  // and the library against the definition
      for (int64_t r = 0; r < d.rows; ++r)
        for (int64_t c = 0; c < d.cols; ++c)
          if (want[(b * d.cols + c) * d.rows + r] != x[(b * d.rows + r) * d.cols + c]) return false;
  }
  return true;
}

std::string read_first_line(const char* path) {
  std::ifstream f(path);
  std::string line;
  std::getline(f, line);
  return line.empty() ? "(not readable)" : line;
}

const char* kUsage =
    "usage: conv1d_bench_host_transpose [--batch B] [--dim D] [--seqlen L] [--width W] [--iters "
    "N]\n"
    "                                   [--warmup N] [--section malloc|code|align|pages|all]\n"
    "Times conv1d::transpose_batched<float> (common/preprocess.h) on the host at a chapter's "
    "shape\n"
    "(default B=4 D=512 L=2048 W=4, 2 warm-up + 10 timed runs) under the conditions of the "
    "chapters'\n"
    "host-transpose anomaly:\n"
    "  malloc  chapter 01's and chapters 02-04's allocation sequences (glibc's dynamic mmap "
    "threshold)\n"
    "  code    the library's loop, and the earlier loop with values on the stack as chapters 02 "
    "and\n"
    "          03 had it\n"
    "  align   the destination's offset modulo 4096\n"
    "  pages   transparent huge pages asked for or refused (madvise)\n"
    "Each row: median/min/max ms, minor page faults per run, and where the buffers lie (heap or "
    "mmap,\n"
    "offset modulo 4096, kB in huge pages). Host only; no GPU needed.\n";

}  // namespace

int main(int argc, char** argv) {
  Settings s;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "conv1d_bench_host_transpose: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (a == "--batch")
      s.batch = std::atoll(value().c_str());
    else if (a == "--dim")
      s.dim = std::atoll(value().c_str());
    else if (a == "--seqlen")
      s.seqlen = std::atoll(value().c_str());
    else if (a == "--width")
      s.width = std::atoi(value().c_str());
    else if (a == "--iters")
      s.iters = std::atoi(value().c_str());
    else if (a == "--warmup")
      s.warmup = std::atoi(value().c_str());
    else if (a == "--section")
      s.section = value();
    else {
      std::fprintf(stderr, "conv1d_bench_host_transpose: unknown argument '%s' (see --help)\n",
                   a.c_str());
      return 2;
    }
  }
  const std::vector<std::string> sections{"malloc", "code", "align", "pages"};
  if (s.section != "all" &&
      std::find(sections.begin(), sections.end(), s.section) == sections.end()) {
    std::fprintf(
        stderr,
        "conv1d_bench_host_transpose: --section must be one of malloc, code, align, pages, all\n");
    return 2;
  }
  if (s.batch < 1 || s.dim < 1 || s.seqlen < 1 || s.width < 1 || s.iters < 1 || s.warmup < 0) {
    std::fprintf(stderr,
                 "conv1d_bench_host_transpose: sizes and --iters must be >= 1, --warmup >= 0\n");
    return 2;
  }

  std::printf(
      "host transpose: B=%lld D=%lld L=%lld W=%d fp32 (%.1f MiB per tensor); %d warm-up + %d timed "
      "runs\n",
      static_cast<long long>(s.batch), static_cast<long long>(s.dim),
      static_cast<long long>(s.seqlen), s.width, s.elements() * 4.0 / (1 << 20), s.warmup, s.iters);
  std::printf("transparent huge pages: enabled %s, defrag %s\n",
              read_first_line("/sys/kernel/mm/transparent_hugepage/enabled").c_str(),
              read_first_line("/sys/kernel/mm/transparent_hugepage/defrag").c_str());
  // malloc first, before this process frees any large buffer (which would move glibc's threshold
  // for the children it forks); the other sections leave glibc's malloc untouched.
  if (s.section == "all" || s.section == "malloc") section_malloc(s);
  if (!codes_agree(s)) {
    std::fprintf(stderr, "conv1d_bench_host_transpose: the two transpose codes disagree\n");
    return 1;
  }
  if (s.section == "all" || s.section == "code") section_code(s);
  if (s.section == "all" || s.section == "align") section_align(s);
  if (s.section == "all" || s.section == "pages") section_pages(s);
  return 0;
}
