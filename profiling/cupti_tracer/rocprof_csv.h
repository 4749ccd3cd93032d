// The records our CUPTI tracer keeps, and how they are written: rocprofv3's CSV layout (ROCm 7.0
// columns), so profiling/ reads an NVIDIA run exactly like an AMD one. No CUPTI in here: the writer is
// also built into a small test helper that runs without a GPU.
//
// Files, for a prefix P in folder D (P may contain '/', like rocprofv3's default host/pid layout):
//   D/P_kernel_trace.csv       one row per kernel/memset   D/P_kernel_stats.csv
//   D/P_memory_copy_trace.csv  one row per memory copy     D/P_memory_copy_stats.csv
//   D/P_cuda_api_trace.csv     one row per runtime call    D/P_cuda_api_stats.csv   (hip_api in rocprofv3)
//   D/P_marker_api_trace.csv   one row per NVTX range      D/P_marker_api_stats.csv
//   D/P_domain_stats.csv       one row per kind of record
// Where CUDA has no equivalent of a rocprofv3 column, the nearest one is used: Agent_Id is
// "CUDA <device>", Queue_Id the context, Grid_Size the total number of threads (rocprofv3 counts
// work-items), LDS_Block_Size the shared memory, VGPR_Count the registers per thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace conv1d_tracer {

// A memset is kept as a kernel of this name (ROCm's memsets are fill kernels).
inline constexpr const char* kMemsetName = "[CUDA memset]";

struct KernelRecord {
  std::string name;  // demangled
  uint64_t start = 0, end = 0;
  uint32_t device = 0, context = 0, stream = 0, correlation = 0;
  int32_t grid[3] = {0, 0, 0}, block[3] = {0, 0, 0};
  int32_t shared_bytes = 0;
  uint32_t local_bytes = 0;
  uint32_t registers = 0;
};

enum class CopyDirection {
  host_to_device,
  device_to_host,
  device_to_device,
  host_to_host,
  unknown
};

struct CopyRecord {
  CopyDirection direction = CopyDirection::unknown;
  uint64_t start = 0, end = 0, bytes = 0;
  uint32_t device = 0, stream = 0, correlation = 0;
};

struct ApiRecord {  // runtime API calls and NVTX ranges
  std::string name;
  uint64_t start = 0, end = 0;
  uint32_t process = 0, thread = 0, correlation = 0;
};

struct Trace {
  std::vector<KernelRecord> kernels;
  std::vector<CopyRecord> copies;
  std::vector<ApiRecord> api;
  std::vector<ApiRecord> ranges;
};

// Writes every file listed above; returns an empty string or what went wrong.
std::string write_rocprof_csv(const Trace& trace, const std::string& dir,
                              const std::string& prefix);

// "cudaMemcpy_v3020" -> "cudaMemcpy" (CUPTI's callback names carry the API version).
std::string strip_api_version(const std::string& name);

}  // namespace conv1d_tracer
