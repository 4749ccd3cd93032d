#include "profiling/cupti_tracer/rocprof_csv.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>

namespace conv1d_tracer {

namespace {

std::string quoted(const std::string& s) {
  std::string q = "\"";
  for (char c : s) q += (c == '"') ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

const char* direction_name(CopyDirection d) {
  switch (d) {
    case CopyDirection::host_to_device: return "MEMORY_COPY_HOST_TO_DEVICE";
    case CopyDirection::device_to_host: return "MEMORY_COPY_DEVICE_TO_HOST";
    case CopyDirection::device_to_device: return "MEMORY_COPY_DEVICE_TO_DEVICE";
    case CopyDirection::host_to_host: return "MEMORY_COPY_HOST_TO_HOST";
    case CopyDirection::unknown: break;
  }
  return "MEMORY_COPY_NONE";
}

std::string agent(uint32_t device) { return quoted("CUDA " + std::to_string(device)); }

class CsvFile {
 public:
  CsvFile(const std::string& path, const char* header) : path_(path), f_(path) {
    if (f_) f_ << header << "\n";
  }
  std::ofstream& out() { return f_; }
  std::string close() {
    f_.close();
    return f_ ? std::string() : "cannot write " + path_;
  }

 private:
  std::string path_;
  std::ofstream f_;
};

// One --stats file: calls, total, average, share, min, max and standard deviation per name, sorted
// by total time like rocprofv3's.
struct Durations {
  std::vector<double> ns;
};

std::string write_stats(const std::string& path, const std::map<std::string, Durations>& groups) {
  struct Row {
    std::string name;
    size_t calls;
    double total, avg, lo, hi, sd;
  };
  std::vector<Row> rows;
  double grand = 0;
  for (const auto& [name, d] : groups) {
    Row r{name, d.ns.size(), 0, 0, d.ns.front(), d.ns.front(), 0};
    for (double v : d.ns) {
      r.total += v;
      r.lo = std::min(r.lo, v);
      r.hi = std::max(r.hi, v);
    }
    r.avg = r.total / r.calls;
    double var = 0;
    for (double v : d.ns) var += (v - r.avg) * (v - r.avg);
    r.sd = r.calls > 1 ? std::sqrt(var / (r.calls - 1)) : 0.0;
    grand += r.total;
    rows.push_back(r);
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const Row& a, const Row& b) { return a.total > b.total; });
  CsvFile f(path,
            "\"Name\",\"Calls\",\"TotalDurationNs\",\"AverageNs\",\"Percentage\",\"MinNs\","
            "\"MaxNs\",\"StdDev\"");
  char buf[256];
  for (const Row& r : rows) {
    std::snprintf(buf, sizeof buf, ",%zu,%.0f,%.6f,%.6f,%.0f,%.0f,%.8e", r.calls, r.total, r.avg,
                  grand > 0 ? 100.0 * r.total / grand : 0.0, r.lo, r.hi, r.sd);
    f.out() << quoted(r.name) << buf << "\n";
  }
  return f.close();
}

template <class R>
std::map<std::string, Durations> group_by(const std::vector<R>& records,
                                          const std::function<std::string(const R&)>& key) {
  std::map<std::string, Durations> g;
  for (const R& r : records) g[key(r)].ns.push_back(static_cast<double>(r.end - r.start));
  return g;
}

}  // namespace

std::string strip_api_version(const std::string& name) {
  const size_t pos = name.rfind("_v");
  if (pos == std::string::npos || pos + 2 == name.size()) return name;
  for (size_t i = pos + 2; i < name.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(name[i]))) return name;
  return name.substr(0, pos);
}

std::string write_rocprof_csv(const Trace& t, const std::string& dir, const std::string& prefix) {
  const std::string base = dir + "/" + prefix;
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(base).parent_path(), ec);
  if (ec) return "cannot create the folder of " + base + ": " + ec.message();
  std::vector<std::string> errors;
  char buf[512];

  {
    CsvFile f(
        base + "_kernel_trace.csv",
        "\"Kind\",\"Agent_Id\",\"Queue_Id\",\"Stream_Id\",\"Thread_Id\",\"Dispatch_Id\",\"Kernel_"
        "Id\","
        "\"Kernel_Name\",\"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\",\"LDS_Block_"
        "Size\","
        "\"Scratch_Size\",\"VGPR_Count\",\"Accum_VGPR_Count\",\"SGPR_Count\",\"Workgroup_Size_X\","
        "\"Workgroup_Size_Y\",\"Workgroup_Size_Z\",\"Grid_Size_X\",\"Grid_Size_Y\",\"Grid_Size_"
        "Z\"");
    std::map<std::string, size_t> kernel_ids;
    size_t dispatch = 0;
    for (const KernelRecord& k : t.kernels) {
      const size_t id = kernel_ids.emplace(k.name, kernel_ids.size() + 1).first->second;
      f.out() << "\"KERNEL_DISPATCH\"," << agent(k.device) << "," << k.context << "," << k.stream
              << ",0," << ++dispatch << "," << id << "," << quoted(k.name) << "," << k.correlation
              << "," << k.start << "," << k.end;
      std::snprintf(buf, sizeof buf, ",%d,%u,%u,0,0,%d,%d,%d,%lld,%lld,%lld\n", k.shared_bytes,
                    k.local_bytes, k.registers, k.block[0], k.block[1], k.block[2],
                    static_cast<long long>(k.grid[0]) * k.block[0],
                    static_cast<long long>(k.grid[1]) * k.block[1],
                    static_cast<long long>(k.grid[2]) * k.block[2]);
      f.out() << buf;
    }
    errors.push_back(f.close());
  }
  {
    CsvFile f(base + "_memory_copy_trace.csv",
              "\"Kind\",\"Direction\",\"Stream_Id\",\"Source_Agent_Id\",\"Destination_Agent_Id\","
              "\"Correlation_Id\","
              "\"Start_Timestamp\",\"End_Timestamp\"");
    for (const CopyRecord& c : t.copies) {
      const bool from_host = c.direction == CopyDirection::host_to_device ||
                             c.direction == CopyDirection::host_to_host;
      const bool to_host = c.direction == CopyDirection::device_to_host ||
                           c.direction == CopyDirection::host_to_host;
      f.out() << "\"MEMORY_COPY\"," << quoted(direction_name(c.direction)) << "," << c.stream << ","
              << (from_host ? quoted("CPU") : agent(c.device)) << ","
              << (to_host ? quoted("CPU") : agent(c.device)) << "," << c.correlation << ","
              << c.start << "," << c.end << "\n";
    }
    errors.push_back(f.close());
  }
  const auto write_calls = [&](const std::string& path, const char* domain,
                               const std::vector<ApiRecord>& calls) {
    CsvFile f(path,
              "\"Domain\",\"Function\",\"Process_Id\",\"Thread_Id\",\"Correlation_Id\",\"Start_"
              "Timestamp\","
              "\"End_Timestamp\"");
    for (const ApiRecord& a : calls)
      f.out() << quoted(domain) << "," << quoted(a.name) << "," << a.process << "," << a.thread
              << "," << a.correlation << "," << a.start << "," << a.end << "\n";
    errors.push_back(f.close());
  };
  write_calls(base + "_cuda_api_trace.csv", "CUDA_RUNTIME_API", t.api);
  write_calls(base + "_marker_api_trace.csv", "NVTX", t.ranges);

  const std::function<std::string(const KernelRecord&)> by_kernel = [](const KernelRecord& k) {
    return k.name;
  };
  const std::function<std::string(const CopyRecord&)> by_direction = [](const CopyRecord& c) {
    return std::string(direction_name(c.direction));
  };
  const std::function<std::string(const ApiRecord&)> by_name = [](const ApiRecord& a) {
    return a.name;
  };
  if (!t.kernels.empty())
    errors.push_back(write_stats(base + "_kernel_stats.csv", group_by(t.kernels, by_kernel)));
  if (!t.copies.empty())
    errors.push_back(
        write_stats(base + "_memory_copy_stats.csv", group_by(t.copies, by_direction)));
  if (!t.api.empty())
    errors.push_back(write_stats(base + "_cuda_api_stats.csv", group_by(t.api, by_name)));
  if (!t.ranges.empty())
    errors.push_back(write_stats(base + "_marker_api_stats.csv", group_by(t.ranges, by_name)));

  std::map<std::string, Durations> domains;
  for (const KernelRecord& k : t.kernels)
    domains["KERNEL_DISPATCH"].ns.push_back(static_cast<double>(k.end - k.start));
  for (const CopyRecord& c : t.copies)
    domains["MEMORY_COPY"].ns.push_back(static_cast<double>(c.end - c.start));
  for (const ApiRecord& a : t.api)
    domains["CUDA_RUNTIME_API"].ns.push_back(static_cast<double>(a.end - a.start));
  for (const ApiRecord& r : t.ranges)
    domains["NVTX"].ns.push_back(static_cast<double>(r.end - r.start));
  if (!domains.empty()) errors.push_back(write_stats(base + "_domain_stats.csv", domains));

  std::string all;
  for (const std::string& e : errors)
    if (!e.empty()) all += (all.empty() ? "" : "; ") + e;
  return all;
}

}  // namespace conv1d_tracer
