// Phase statistics and the CSV schema, from hand-made records (no GPU needed).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "common/phases.h"

using namespace conv1d;

namespace {
std::vector<PhaseRecord> sample() {
  // iteration 0 (verification) must be ignored by the stats; iterations 1 and 2 are timed.
  return {
      {"img2col", Category::host, 0, 0, 0, 999},     {"img2col", Category::host, 1, 0, 0, 600},
      {"copy A", Category::h2d, 1, 0, 600, 900},     {"gemm", Category::kernel, 1, 0, 900, 1000},
      {"img2col", Category::host, 2, 0, 2000, 2400}, {"copy A", Category::h2d, 2, 0, 2400, 2700},
      {"gemm", Category::kernel, 2, 3, 2700, 2800},
  };
}
std::string read_all(const std::string& p) {
  std::ifstream f(p);
  return std::string(std::istreambuf_iterator<char>(f), {});
}
}  // namespace

TEST(Phases, StatsByHand) {
  const std::vector<PhaseStat> s = phase_stats(sample(), 1);
  ASSERT_EQ(s.size(), 3u);
  // Sorted by total: img2col 1000, copy A 600, gemm 200; grand total 1800.
  EXPECT_EQ(s[0].name, "img2col");
  EXPECT_EQ(s[0].calls, 2);
  EXPECT_DOUBLE_EQ(s[0].total_ns, 1000);
  EXPECT_DOUBLE_EQ(s[0].avg_ns, 500);
  EXPECT_DOUBLE_EQ(s[0].min_ns, 400);
  EXPECT_DOUBLE_EQ(s[0].max_ns, 600);
  EXPECT_NEAR(s[0].stddev_ns, 141.42135623730951, 1e-9);  // sample stddev of {600, 400}
  EXPECT_NEAR(s[0].percentage, 100.0 * 1000 / 1800, 1e-9);
  EXPECT_EQ(s[1].name, "copy A");
  EXPECT_EQ(s[1].category, Category::h2d);
  EXPECT_NEAR(s[2].percentage, 100.0 * 200 / 1800, 1e-9);
  const std::vector<double> t = category_totals(s);
  EXPECT_DOUBLE_EQ(t[static_cast<int>(Category::host)], 1000);
  EXPECT_DOUBLE_EQ(t[static_cast<int>(Category::kernel)], 200);
  EXPECT_DOUBLE_EQ(t[static_cast<int>(Category::alloc)], 0);
}

TEST(Phases, TableShowsSharesPerRunAndByKind) {
  const std::string table = phase_table(phase_stats(sample(), 1), 2);
  EXPECT_NE(table.find("img2col"), std::string::npos);
  EXPECT_NE(table.find("55.6%"), std::string::npos) << table;  // 1000 / 1800
  EXPECT_NE(table.find("kernel 11.1%"), std::string::npos) << table;
  EXPECT_NE(table.find("0.001"), std::string::npos)
      << table;  // 1000 ns over 2 runs = 0.0005 ms -> 0.001
}

TEST(Phases, CsvSchema) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("conv1d_phases_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string stats = (dir / "p_stats.csv").string(), trace = (dir / "p_trace.csv").string();
  write_stats_csv(stats, phase_stats(sample(), 1));
  write_trace_csv(trace, sample());
  const std::string s = read_all(stats), t = read_all(trace);
  EXPECT_EQ(s.substr(0, s.find('\n')),
            "\"Name\",\"Calls\",\"TotalDurationNs\",\"AverageNs\",\"Percentage\",\"MinNs\","
            "\"MaxNs\",\"StdDev\",\"Category\"");
  EXPECT_NE(s.find("\"img2col\",2,1000,500.000,55.555556,400,600,141.421,\"host\""),
            std::string::npos)
      << s;
  EXPECT_EQ(
      t.substr(0, t.find('\n')),
      "\"Category\",\"Name\",\"Iteration\",\"Stream_Id\",\"Start_Timestamp\",\"End_Timestamp\"");
  EXPECT_NE(t.find("\"kernel\",\"gemm\",2,3,2700,2800"), std::string::npos) << t;
  EXPECT_NE(t.find("\"host\",\"img2col\",0,0,0,999"), std::string::npos)
      << t;  // the trace keeps every record
  std::filesystem::remove_all(dir);
  EXPECT_THROW(write_stats_csv((dir / "missing" / "x.csv").string(), {}), std::runtime_error);
}
