#include "common/phases.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

namespace conv1d {

const char* category_name(Category c) {
  switch (c) {
    case Category::host: return "host";
    case Category::alloc: return "alloc";
    case Category::h2d: return "h2d";
    case Category::kernel: return "kernel";
    case Category::d2h: return "d2h";
    case Category::free: return "free";
  }
  return "?";
}

PhaseRecorder::PhaseRecorder() = default;
PhaseRecorder::~PhaseRecorder() = default;

void PhaseRecorder::begin_iteration(int iteration) {
  if (!pending_.empty()) end_iteration();
  iteration_ = iteration;
}

size_t PhaseRecorder::add(const char* name, Category c, int64_t t0, int64_t t1, int stream_id) {
  if (iteration_ < 0) return SIZE_MAX;
  records_.push_back({name, c, iteration_, stream_id, t0, t1});
  return records_.size() - 1;
}

EventPair& PhaseRecorder::next_events() {
  if (pool_used_ == pool_.size()) pool_.push_back(std::make_unique<EventPair>());
  return *pool_[pool_used_++];
}

void PhaseRecorder::end_iteration() {
  GPU_CHECK(cudaDeviceSynchronize());
  for (const Pending& p : pending_) {
    const double ms = p.events->elapsed_ms();
    if (p.record == SIZE_MAX) continue;
    PhaseRecord& r = records_[p.record];
    if (p.from_origin) r.start_ns += std::llround(p.events->start_offset_ms(*origin_) * 1e6);
    r.end_ns = r.start_ns + std::llround(ms * 1e6);
  }
  pending_.clear();
  pool_used_ = 0;
  const int64_t timeouts = gate_.timeouts();
  if (timeouts > gate_timeouts_reported_) {
    std::fprintf(
        stderr,
        "note: %lld kernel record(s) so far waited for the stream gate's time limit (a launch that "
        "synchronised?); their times include the launch\n",
        static_cast<long long>(timeouts));
    gate_timeouts_reported_ = timeouts;
  }
  origin_recorded_ = false;
}

double PhaseRecorder::kernel_ms(int iteration) const {
  int64_t ns = 0;
  for (const PhaseRecord& r : records_)
    if (r.iteration == iteration && r.category == Category::kernel) ns += r.duration_ns();
  return ns * 1e-6;
}

std::vector<PhaseStat> phase_stats(const std::vector<PhaseRecord>& records, int first_iteration) {
  std::map<std::pair<std::string, Category>, std::vector<double>> groups;
  std::vector<std::pair<std::string, Category>> order;  // first appearance, for stable ties
  for (const PhaseRecord& r : records) {
    if (r.iteration < first_iteration) continue;
    auto key = std::make_pair(r.name, r.category);
    auto& g = groups[key];
    if (g.empty()) order.push_back(key);
    g.push_back(static_cast<double>(r.duration_ns()));
  }
  double grand = 0;
  for (auto& kv : groups)
    for (double d : kv.second) grand += d;
  std::vector<PhaseStat> stats;
  for (const auto& key : order) {
    const auto& d = groups[key];
    PhaseStat s;
    s.name = key.first;
    s.category = key.second;
    s.calls = static_cast<int64_t>(d.size());
    s.min_ns = *std::min_element(d.begin(), d.end());
    s.max_ns = *std::max_element(d.begin(), d.end());
    for (double v : d) s.total_ns += v;
    s.avg_ns = s.total_ns / s.calls;
    double var = 0;
    for (double v : d) var += (v - s.avg_ns) * (v - s.avg_ns);
    s.stddev_ns = d.size() > 1 ? std::sqrt(var / (d.size() - 1)) : 0.0;
    s.percentage = grand > 0 ? 100.0 * s.total_ns / grand : 0.0;
    stats.push_back(s);
  }
  std::stable_sort(stats.begin(), stats.end(),
                   [](const PhaseStat& a, const PhaseStat& b) { return a.total_ns > b.total_ns; });
  return stats;
}

std::vector<double> category_totals(const std::vector<PhaseStat>& stats) {
  std::vector<double> t(kCategoryCount, 0.0);
  for (const PhaseStat& s : stats) t[static_cast<int>(s.category)] += s.total_ns;
  return t;
}

std::string phase_table(const std::vector<PhaseStat>& stats, int iterations) {
  std::ostringstream o;
  char line[256];
  std::snprintf(line, sizeof line, "  %-28s %-7s %7s %12s %12s %7s\n", "phase", "kind", "calls",
                "per run ms", "avg us", "share");
  o << line;
  for (const PhaseStat& s : stats) {
    std::snprintf(line, sizeof line, "  %-28s %-7s %7lld %12.3f %12.1f %6.1f%%\n", s.name.c_str(),
                  category_name(s.category), static_cast<long long>(s.calls),
                  s.total_ns * 1e-6 / std::max(iterations, 1), s.avg_ns * 1e-3, s.percentage);
    o << line;
  }
  const std::vector<double> t = category_totals(stats);
  double grand = 0;
  for (double v : t) grand += v;
  o << "  by kind:";
  for (int c = 0; c < kCategoryCount; ++c) {
    std::snprintf(line, sizeof line, " %s %.1f%%", category_name(static_cast<Category>(c)),
                  grand > 0 ? 100.0 * t[c] / grand : 0.0);
    o << line;
  }
  o << "\n";
  return o.str();
}

namespace {
std::ofstream open_for_writing(const std::string& path) {
  std::ofstream f(path);
  if (!f) throw std::runtime_error("cannot write " + path);
  return f;
}
std::string quoted(const std::string& s) {
  std::string q = "\"";
  for (char c : s) q += (c == '"') ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}
}  // namespace

void write_stats_csv(const std::string& path, const std::vector<PhaseStat>& stats) {
  std::ofstream f = open_for_writing(path);
  f << "\"Name\",\"Calls\",\"TotalDurationNs\",\"AverageNs\",\"Percentage\",\"MinNs\",\"MaxNs\","
       "\"StdDev\","
       "\"Category\"\n";
  char buf[256];
  for (const PhaseStat& s : stats) {
    std::snprintf(buf, sizeof buf, ",%lld,%.0f,%.3f,%.6f,%.0f,%.0f,%.3f,",
                  static_cast<long long>(s.calls), s.total_ns, s.avg_ns, s.percentage, s.min_ns,
                  s.max_ns, s.stddev_ns);
    f << quoted(s.name) << buf << quoted(category_name(s.category)) << "\n";
  }
  if (!f) throw std::runtime_error("error while writing " + path);
}

void write_trace_csv(const std::string& path, const std::vector<PhaseRecord>& records) {
  std::ofstream f = open_for_writing(path);
  f << "\"Category\",\"Name\",\"Iteration\",\"Stream_Id\",\"Start_Timestamp\",\"End_Timestamp\"\n";
  for (const PhaseRecord& r : records)
    f << quoted(category_name(r.category)) << "," << quoted(r.name) << "," << r.iteration << ","
      << r.stream << "," << r.start_ns << "," << r.end_ns << "\n";
  if (!f) throw std::runtime_error("error while writing " + path);
}

}  // namespace conv1d
