// The tour: runs every chapter executable at the book's headline shape for the work it does (one
// shape for the forward, one for the backward, one for a decoding step), each with its output in a
// log file, and prints one table per kind of work: each chapter's headline variant, its device time,
// its share of the copy ceiling measured in its own run, its speed-up over the first chapter that
// did the same work at the same shape (device time against device time), and its end-to-end time
// apart. The same table goes to DIR/book.tsv (the GPU check's results/gpu-check/book.tsv: README's
// table and chart). Chapters that exit with 77 found no GPU: the tour says so and names them; it
// fails only when a chapter that did run failed. Each chapter also writes its phase records
// (--profile-csv), and the tour ends by drawing the profiling charts (python -m profiling plot)
// from its own run, or, when no GPU was found, from the committed results of the GPU machine.
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

// The book's headline shapes: every chapter runs the work it does at one shape per kind of work,
// so that its row compares like with like. The forward in fp16 (chapters 05 and 07 have no bf16),
// channel-first (chapters 01-07 are); the backward in bf16, channel-last (chapter 06 is); a decoding
// step of 64 sequences. Chapter 10 runs its packed rows (8 documents a row, initial states): the
// same tensors as the plain chapters, with the sequence policy on top.
constexpr const char* kForward = "--batch 8 --dim 4096 --seqlen 4096 --width 4 --dtype fp16";
constexpr const char* kBackward = "--batch 8 --dim 4096 --seqlen 4096 --width 4 --dtype bf16";
constexpr const char* kDecode = "--batch 64 --dim 4096 --seqlen 1 --width 4 --dtype bf16 --silu";

struct BookRun {
  const char* number;  // the chapter
  const char* shape;   // one of the three above
  const char* extra;   // what selects its headline variant
};
constexpr BookRun kBook[] = {
    {"01", kForward, ""},
    {"02", kForward, ""},
    {"03", kForward, ""},
    {"04", kForward, "--epilogue fused"},
    {"05", kForward, "--variant sparse"},
    {"06", kBackward, "--reduction deterministic"},
    {"07", kForward, "--variant pipelined"},
    {"08", kForward, "--layout channel-first --variant staged"},
    {"09", kBackward, "--layout channel-last --variant staged --reduction deterministic"},
    {"10", kForward,
     "--form rows --direction forward --layout channel-first --seq-lens random:8 "
     "--initial-states"},
    {"10", kBackward,
     "--form rows --direction backward --layout channel-last --seq-lens random:8 "
     "--initial-states"},
    {"11", kDecode, "--buffer linear --launch graph"},
};

// One variant's row of a chapter's --summary file, with what its kernel rows add.
struct Row {
  std::string number, name, variant, device, shape;
  double e2e_ms = 0, device_ms = 0;
  bool verified = false;
  double ceiling_gbs = 0;  // the copy ceiling measured in the chapter's own run
  double step_ms = 0;      // a decoding chapter's "per step" kernel row (0: none)
  double step_pct = 0;     // its share of the copy ceiling
};

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += (c == '\'') ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

int exit_code(int status) {
  if (status == -1 || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

int run(const std::string& exe, const std::string& args, const std::string& summary,
        const std::string& profile, const std::string& log) {
  const std::string cmd = shell_quote(exe) + " " + args + " --summary " + shell_quote(summary) +
                          " --profile-csv " + shell_quote(profile) + " > " + shell_quote(log) +
                          " 2>&1";
  return exit_code(std::system(cmd.c_str()));
}

struct Charts {
  std::string python;       // interpreter with numpy and matplotlib ("" = none)
  std::string skipped_why;  // why there is none
  std::string repo;         // the repository (profiling/ and results/gpu-check/)
};

// Draws the charts into OUT/charts; python prints their paths. Returns false when drawing failed.
bool draw_charts(const Charts& c, const std::string& out_dir, bool own_run, bool no_gpu) {
  std::printf("\nCharts:\n");
  if (c.python.empty()) {
    std::printf("  skipped: %s\n", c.skipped_why.empty() ? "no Python with numpy and matplotlib"
                                                         : c.skipped_why.c_str());
    return true;
  }
  std::string input = out_dir, extra;
  if (own_run) {
    char date[32];
    const std::time_t now = std::time(nullptr);
    std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
    extra = " --date " + shell_quote(date);
  } else if (no_gpu) {
    input = c.repo + "/results/gpu-check";
    std::printf(
        "  no GPU here: drawn from the committed reference results in %s\n"
        "  (measured on the GPU machine; each chart names its device and date)\n",
        input.c_str());
  } else {
    std::printf("  skipped: no chapter produced results\n");
    return true;
  }
  const char* old = std::getenv("PYTHONPATH");
  const std::string path = c.repo + (old && *old ? ":" + std::string(old) : "");
  setenv("PYTHONPATH", path.c_str(), 1);
  const std::string cmd = shell_quote(c.python) + " -m profiling plot " + shell_quote(input) +
                          " --out " + shell_quote(out_dir + "/charts") + extra;
  std::fflush(stdout);
  const int rc = exit_code(std::system(cmd.c_str()));
  if (rc != 0) std::printf("FAILED: drawing the charts (exit %d): %s\n", rc, cmd.c_str());
  return rc == 0;
}

std::vector<std::vector<std::string>> read_tsv(const std::string& path) {
  std::vector<std::vector<std::string>> rows;
  std::ifstream f(path);
  std::string line;
  while (std::getline(f, line)) {
    std::vector<std::string> c;
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, '\t')) c.push_back(cell);
    if (!c.empty() && c[0] != "chapter") rows.push_back(c);  // (not the header)
  }
  return rows;
}

// Every variant's row of a summary file, with the copy ceiling and the per-step row of its
// kernel rows (SUMMARY_kernels.tsv beside it).
std::vector<Row> read_summary(const std::string& path) {
  std::vector<Row> rows;
  for (const auto& c : read_tsv(path)) {
    if (c.size() < 8) continue;
    rows.push_back({c[0], c[1], c[2], c[6], c[7], std::atof(c[3].c_str()), std::atof(c[4].c_str()),
                    c[5] == "yes"});
  }
  const std::string stem = path.size() > 4 && path.substr(path.size() - 4) == ".tsv"
                               ? path.substr(0, path.size() - 4)
                               : path;
  // chapter name variant kernel ms tflops gbs ceiling_pct copy_ceiling_gbs device shape
  for (const auto& k : read_tsv(stem + "_kernels.tsv")) {
    if (k.size() < 11) continue;
    for (Row& r : rows)
      if (r.number == k[0] && r.variant == k[2] && r.shape == k[10]) {
        r.ceiling_gbs = std::atof(k[8].c_str());
        if (k[3] == "per step") {
          r.step_ms = std::atof(k[4].c_str());
          r.step_pct = std::atof(k[7].c_str());
        }
      }
  }
  return rows;
}

// The kind of work a row did: chapter 11 decodes, chapters 06 and 09 and chapter 10's "_bwd"
// variants run the backward, the rest the forward.
std::string work_of(const Row& r) {
  if (r.number == "11") return "decode";
  const bool bwd = r.number == "06" || r.number == "09" ||
                   (r.variant.size() > 4 && r.variant.substr(r.variant.size() - 4) == "_bwd");
  return bwd ? "backward" : "forward";
}

// Elements and bytes per element of a shape column ("B=8 D=4096 L=4096 W=4 fp16 ...").
bool shape_elements(const std::string& shape, double* n, double* e) {
  long long b = 0, d = 0, l = 0;
  int w = 0;
  char dtype[16] = {};
  if (std::sscanf(shape.c_str(), "B=%lld D=%lld L=%lld W=%d %15s", &b, &d, &l, &w, dtype) != 5)
    return false;
  *n = double(b) * double(d) * double(l);
  *e = std::string(dtype) == "fp32" ? 4 : 2;
  return true;
}

// One line of the book: a chapter's headline variant for one kind of work.
struct BookLine {
  std::string work, number, name, variant, shape, device;
  double device_ms = 0, e2e_ms = 0, ceiling_pct = 0, speedup = 0;
  std::string over;  // the chapter the speed-up is over
  bool verified = false;
};

// The book's table: for each kind of work and each chapter its first (headline) variant. Device
// time: the chapter's kernels (a decoding chapter's, per step). Share: the operator's bytes (x read
// and out written; for the backward x and dout read and dx written; for a decoding step the
// chapter's own count, which is the same minimum) over that time, against the copy ceiling of the
// chapter's own run. Speed-up: device time of the first chapter of the same work and shape over
// this one's.
std::vector<BookLine> book_lines(const std::vector<Row>& rows) {
  std::vector<BookLine> out;
  for (const char* work : {"forward", "backward", "decode"}) {
    std::vector<BookLine> group;
    for (const Row& r : rows) {
      if (work_of(r) != work) continue;
      bool seen = false;
      for (const BookLine& g : group) seen |= g.number == r.number;
      if (seen) continue;
      BookLine b;
      b.work = work;
      b.number = r.number;
      b.name = r.name;
      b.variant = r.variant;
      b.shape = r.shape;
      b.device = r.device;
      b.verified = r.verified;
      b.e2e_ms = r.e2e_ms;
      double n = 0, e = 0;
      if (std::string(work) == "decode") {
        if (r.step_ms <= 0) continue;  // (a decoding row without its per-step figure)
        b.device_ms = r.step_ms;
        b.ceiling_pct = r.step_pct;
        b.e2e_ms = r.device_ms > 0 ? r.e2e_ms * r.step_ms / r.device_ms : 0;
      } else {
        b.device_ms = r.device_ms;
        if (shape_elements(r.shape, &n, &e) && r.device_ms > 0 && r.ceiling_gbs > 0) {
          const double bytes = (std::string(work) == "forward" ? 2 : 3) * n * e;
          b.ceiling_pct = 100.0 * bytes / (r.device_ms * 1e6) / r.ceiling_gbs;
        }
      }
      group.push_back(b);
    }
    for (BookLine& b : group)
      for (const BookLine& first : group)
        if (first.shape == b.shape && first.device_ms > 0 && b.device_ms > 0) {
          b.speedup = first.device_ms / b.device_ms;
          b.over = first.number;
          break;
        }
    out.insert(out.end(), group.begin(), group.end());
  }
  return out;
}

// A share of the copy ceiling: one decimal from 1 % up, two significant digits below (chapters
// 01-04 reach hundredths of a per cent at the headline shape, which one decimal shows as 0.0).
std::string share_text(double pct) {
  char buf[32];
  std::snprintf(buf, sizeof buf, pct >= 1.0 || pct <= 0.0 ? "%.1f" : "%.2g", pct);
  return buf;
}

void write_book(const std::vector<BookLine>& lines, const std::string& path) {
  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  std::ofstream f(path);
  f << "work\tchapter\tname\tvariant\tshape\tdevice_ms\tceiling_pct\tspeedup\tover\tend_to_end_"
       "ms\tverified\tdevice\tdate\n";
  char buf[64];
  for (const BookLine& b : lines) {
    f << b.work << '\t' << b.number << '\t' << b.name << '\t' << b.variant << '\t' << b.shape
      << '\t';
    std::snprintf(buf, sizeof buf, "%.4f\t", b.device_ms);
    f << buf << share_text(b.ceiling_pct) << '\t';
    if (b.speedup > 0)
      std::snprintf(buf, sizeof buf, "%.2f\t%s\t", b.speedup, b.over.c_str());
    else
      std::snprintf(buf, sizeof buf, "-\t-\t");
    f << buf;
    std::snprintf(buf, sizeof buf, "%.4f", b.e2e_ms);
    f << buf << '\t' << (b.verified ? "yes" : "no") << '\t' << b.device << '\t' << date << '\n';
  }
}

// The table: one block per kind of work, like with like.
void print_table(const std::vector<BookLine>& lines) {
  if (lines.empty()) return;
  int name_w = 7, variant_w = 7;
  for (const BookLine& b : lines) {
    name_w = std::max(name_w, static_cast<int>(b.number.size() + 1 + b.name.size()));
    variant_w = std::max(variant_w, static_cast<int>(b.variant.size()));
  }
  std::printf("\nThe book on %s (medians):\n", lines.front().device.c_str());
  std::string work;
  for (const BookLine& b : lines) {
    if (b.work != work) {
      work = b.work;
      std::printf("\n%s, %s%s\n", work.c_str(), b.shape.c_str(),
                  work == "decode" ? " (times per step)" : "");
      std::printf("  %-*s  %-*s %13s %8s %9s %14s %9s\n", name_w, "chapter", variant_w, "variant",
                  "device", "share", "speed-up", "end-to-end", "verified");
    }
    char speed[32] = "-", device[32], e2e[32];
    if (b.speedup > 0) std::snprintf(speed, sizeof speed, "%.2fx", b.speedup);
    if (work == "decode") {
      std::snprintf(device, sizeof device, "%.2f us", 1000.0 * b.device_ms);
      std::snprintf(e2e, sizeof e2e, "%.2f us", 1000.0 * b.e2e_ms);
    } else {
      std::snprintf(device, sizeof device, "%.3f ms", b.device_ms);
      std::snprintf(e2e, sizeof e2e, "%.3f ms", b.e2e_ms);
    }
    std::printf("  %-*s  %-*s %13s %7s%% %9s %14s %9s\n", name_w, (b.number + "_" + b.name).c_str(),
                variant_w, b.variant.c_str(), device, share_text(b.ceiling_pct).c_str(), speed, e2e,
                b.verified ? "yes" : "NO");
  }
  std::printf(
      "\n  device: the chapter's kernels; share: the operator's bytes (x and out; x, dout and dx)\n"
      "  over that time, of the copy ceiling measured in the chapter's own run; speed-up: device\n"
      "  time over the first chapter's at the same work and shape; end-to-end: the whole run,\n"
      "  with the host's work and copies where a chapter has them (chapters 01-05 and 07)\n");
}

}  // namespace

int main(int argc, char** argv) {
  std::string out_dir = "tour";
  std::vector<std::string> exes;
  Charts charts;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help") {
      std::printf(
          "usage: conv1d_tour [--out DIR] [--python PATH | --charts-skipped WHY] [--repo DIR] "
          "CHAPTER_EXE...\n"
          "       conv1d_tour --table SUMMARY.tsv\n"
          "Runs each chapter at the book's headline shape for the work it does (forward: %s;\n"
          "backward: %s; decoding step: %s),\n"
          "prints one table per kind of work, writes it to DIR/book.tsv and draws the profiling\n"
          "charts into DIR/charts with PATH -m profiling (profiling/ in the repository DIR).\n"
          "--table prints the table of an earlier run's summary file (and the _kernels.tsv beside\n"
          "it) and exits.\n",
          kForward, kBackward, kDecode);
      return 0;
    }
    if (a == "--table" && i + 1 < argc) {
      const std::vector<BookLine> lines = book_lines(read_summary(argv[i + 1]));
      if (lines.empty()) {
        std::fprintf(stderr, "conv1d_tour: no chapter rows in %s\n", argv[i + 1]);
        return 2;
      }
      print_table(lines);
      return 0;
    }
    if (a == "--out" && i + 1 < argc) {
      out_dir = argv[++i];
    } else if (a == "--python" && i + 1 < argc) {
      charts.python = argv[++i];
    } else if (a == "--charts-skipped" && i + 1 < argc) {
      charts.skipped_why = argv[++i];
    } else if (a == "--repo" && i + 1 < argc) {
      charts.repo = argv[++i];
    } else if (a.rfind("--", 0) == 0) {
      std::fprintf(stderr, "conv1d_tour: unknown flag '%s' (see --help)\n", a.c_str());
      return 2;
    } else {
      exes.push_back(a);
    }
  }
  std::filesystem::create_directories(out_dir);
  const std::string summary = out_dir + "/summary.tsv";
  std::filesystem::remove(summary);
  std::filesystem::remove(
      out_dir + "/summary_kernels.tsv");  // appended to by every chapter, like summary.tsv

  std::vector<std::string> no_gpu, failed;
  for (const std::string& exe : exes) {
    const std::string name = std::filesystem::path(exe).filename().string();
    int runs = 0;
    for (const BookRun& b : kBook) {
      if (name.rfind(std::string("ch") + b.number + "_", 0) != 0) continue;
      const std::string tag = name + (++runs > 1 ? "_" + std::to_string(runs) : "");
      const std::string args = std::string(b.shape) + " " + b.extra;
      const std::string log = out_dir + "/" + tag + ".log";
      std::printf("tour: running %s %s (log: %s) ...\n", name.c_str(), args.c_str(), log.c_str());
      std::fflush(stdout);
      const int rc = run(exe, args, summary, out_dir + "/" + tag, log);
      if (rc == 77) {
        if (runs == 1) no_gpu.push_back(name);
      } else if (rc != 0) {
        failed.push_back(tag + " (exit " + std::to_string(rc) + ", see " + log + ")");
      }
    }
    if (runs == 0) std::printf("tour: %s is not a chapter of the book; skipped\n", name.c_str());
  }

  const std::vector<Row> rows = read_summary(summary);
  const std::vector<BookLine> lines = book_lines(rows);
  if (!lines.empty()) {
    print_table(lines);
    write_book(lines, out_dir + "/book.tsv");
    std::printf("\nwrote %s/book.tsv\n", out_dir.c_str());
  }
  if (!no_gpu.empty()) {
    std::printf("\nNo GPU was found, so these chapters could not run:");
    for (const std::string& n : no_gpu) std::printf(" %s", n.c_str());
    std::printf("\nThey were built; run the tour again on a machine with a GPU.\n");
  }
  for (const std::string& f : failed) std::printf("FAILED: %s\n", f.c_str());
  const bool charts_ok =
      charts.repo.empty() || draw_charts(charts, out_dir, !rows.empty(), !no_gpu.empty());
  return failed.empty() && charts_ok ? 0 : 1;
}
