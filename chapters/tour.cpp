// The tour: runs every chapter executable at its default shape, each with its output in a log file,
// and prints one table (chapter, end-to-end time, device time, speed-up over chapter 01, verified).
// Chapters that exit with 77 found no GPU: the tour says so and names them; it fails only when a
// chapter that did run failed. Each chapter also writes its phase records (--profile-csv), and the
// tour ends by drawing the profiling charts (python -m profiling plot) from its own run, or, when
// no GPU was found, from the committed reference results measured on the GPU machine.
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

struct Row {
  std::string number, name, variant, device;
  double e2e_ms = 0, device_ms = 0;
  bool verified = false;
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

int run(const std::string& exe, const std::string& summary, const std::string& profile,
        const std::string& log) {
  const std::string cmd = shell_quote(exe) + " --summary " + shell_quote(summary) +
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

std::vector<Row> read_summary(const std::string& path) {
  std::vector<Row> rows;
  std::ifstream f(path);
  std::string line;
  while (std::getline(f, line)) {
    std::vector<std::string> c;
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, '\t')) c.push_back(cell);
    if (c.size() < 7 || c[0] == "chapter") continue;  // short lines and the header
    bool seen = false;                                // a chapter's first variant is its headline
    for (const Row& r : rows) seen |= (r.number == c[0]);
    if (seen) continue;
    rows.push_back(
        {c[0], c[1], c[2], c[6], std::atof(c[3].c_str()), std::atof(c[4].c_str()), c[5] == "yes"});
  }
  return rows;
}

// The summary table: one row per chapter (its headline variant), speed-ups over chapter 01.
void print_table(const std::vector<Row>& rows) {
  {
    double base = 0;
    for (const Row& r : rows)
      if (r.number == "01") base = r.e2e_ms;
    std::printf("\nThe tour on %s (default shape of each chapter, medians):\n\n",
                rows.front().device.c_str());
    // Columns as wide as their longest entry, so the table lines up whatever the names.
    int name_w = 7, variant_w = 7;
    for (const Row& r : rows) {
      name_w = std::max(name_w, static_cast<int>(r.number.size() + 1 + r.name.size()));
      variant_w = std::max(variant_w, static_cast<int>(r.variant.size()));
    }
    std::printf("  %-*s  %-*s %14s %14s %9s %9s\n", name_w, "chapter", variant_w, "variant",
                "end-to-end", "device", "speed-up", "verified");
    for (const Row& r : rows) {
      char speed[32] = "-";
      // The backward chapter computes something else: its time is not comparable with chapter 01's.
      const bool forward = r.name.find("backward") == std::string::npos;
      if (forward && base > 0 && r.e2e_ms > 0)
        std::snprintf(speed, sizeof speed, "%.2fx", base / r.e2e_ms);
      std::printf("  %-*s  %-*s %11.3f ms %11.3f ms %9s %9s\n", name_w,
                  (r.number + "_" + r.name).c_str(), variant_w, r.variant.c_str(), r.e2e_ms,
                  r.device_ms, speed, r.verified ? "yes" : "NO");
    }
    std::printf(
        "\n  speed-up: chapter 01's end-to-end time over the chapter's (forward chapters only)\n");
  }
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
          "Runs each chapter at its default shape, prints one summary table and draws the\n"
          "profiling charts into DIR/charts with PATH -m profiling (profiling/ in the repository "
          "DIR).\n"
          "--table prints the table of an earlier run's summary file and exits.\n");
      return 0;
    }
    if (a == "--table" && i + 1 < argc) {
      const std::vector<Row> rows = read_summary(argv[i + 1]);
      if (rows.empty()) {
        std::fprintf(stderr, "conv1d_tour: no chapter rows in %s\n", argv[i + 1]);
        return 2;
      }
      print_table(rows);
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
    const std::string log = out_dir + "/" + name + ".log";
    std::printf("tour: running %s (log: %s) ...\n", name.c_str(), log.c_str());
    std::fflush(stdout);
    const int rc = run(exe, summary, out_dir + "/" + name, log);
    if (rc == 77) {
      no_gpu.push_back(name);
    } else if (rc != 0) {
      failed.push_back(name + " (exit " + std::to_string(rc) + ", see " + log + ")");
    }
  }

  const std::vector<Row> rows = read_summary(summary);
  if (!rows.empty()) print_table(rows);
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
