// The tour: runs every chapter executable at its default shape, each with its output in a log file,
// and prints one table (chapter, end-to-end time, device time, speed-up over chapter 01, verified).
// Chapters that exit with 77 found no GPU: the tour says so and names them; it fails only when a
// chapter that did run failed.
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
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

int run(const std::string& exe, const std::string& summary, const std::string& log) {
  const std::string cmd = shell_quote(exe) + " --summary " + shell_quote(summary) + " > " + shell_quote(log) + " 2>&1";
  const int status = std::system(cmd.c_str());
  if (status == -1 || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
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
    bool seen = false;  // a chapter's first variant is its headline
    for (const Row& r : rows) seen |= (r.number == c[0]);
    if (seen) continue;
    rows.push_back({c[0], c[1], c[2], c[6], std::atof(c[3].c_str()), std::atof(c[4].c_str()), c[5] == "yes"});
  }
  return rows;
}

}  // namespace

int main(int argc, char** argv) {
  std::string out_dir = "tour";
  std::vector<std::string> exes;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help") {
      std::printf("usage: conv1d_tour [--out DIR] CHAPTER_EXE...\n"
                  "Runs each chapter at its default shape and prints one summary table.\n");
      return 0;
    }
    if (a == "--out" && i + 1 < argc) {
      out_dir = argv[++i];
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

  std::vector<std::string> no_gpu, failed;
  for (const std::string& exe : exes) {
    const std::string name = std::filesystem::path(exe).filename().string();
    const std::string log = out_dir + "/" + name + ".log";
    std::printf("tour: running %s (log: %s) ...\n", name.c_str(), log.c_str());
    std::fflush(stdout);
    const int rc = run(exe, summary, log);
    if (rc == 77) {
      no_gpu.push_back(name);
    } else if (rc != 0) {
      failed.push_back(name + " (exit " + std::to_string(rc) + ", see " + log + ")");
    }
  }

  const std::vector<Row> rows = read_summary(summary);
  if (!rows.empty()) {
    double base = 0;
    for (const Row& r : rows)
      if (r.number == "01") base = r.e2e_ms;
    std::printf("\nThe tour on %s (default shape of each chapter, medians):\n\n", rows.front().device.c_str());
    std::printf("  %-28s %-10s %14s %14s %9s %9s\n", "chapter", "variant", "end-to-end", "device", "speed-up", "verified");
    for (const Row& r : rows) {
      char speed[32] = "-";
      if (base > 0 && r.e2e_ms > 0) std::snprintf(speed, sizeof speed, "%.2fx", base / r.e2e_ms);
      std::printf("  %-28s %-10s %11.3f ms %11.3f ms %9s %9s\n", (r.number + "_" + r.name).c_str(), r.variant.c_str(),
                  r.e2e_ms, r.device_ms, speed, r.verified ? "yes" : "NO");
    }
    std::printf("\n  speed-up: chapter 01's end-to-end time over the chapter's\n");
  }
  if (!no_gpu.empty()) {
    std::printf("\nNo GPU was found, so these chapters could not run:");
    for (const std::string& n : no_gpu) std::printf(" %s", n.c_str());
    std::printf("\nThey were built; run the tour again on a machine with a GPU.\n");
  }
  for (const std::string& f : failed) std::printf("FAILED: %s\n", f.c_str());
  return failed.empty() ? 0 : 1;
}
