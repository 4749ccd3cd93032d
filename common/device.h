// The GPU this run uses, and whether there is one at all.
#pragma once

#include <cstdint>
#include <string>

namespace conv1d {

struct DeviceInfo {
  int index = 0;
  std::string name;
  int sm_count = 0;
  int major = 0, minor = 0;
  int64_t total_memory = 0, free_memory = 0;
  int64_t l2_bytes = 0;
  std::string describe() const;  // one line for the report
};

// True when a usable GPU exists. Never throws: a missing driver counts as "no GPU".
bool gpu_available(std::string* why_not = nullptr);
DeviceInfo query_device();  // throws GpuError when there is none

// Exit code of a chapter (and of CTest's SKIP_RETURN_CODE) when no GPU exists.
constexpr int kExitNoGpu = 77;
// Set CONV1D_REQUIRE_GPU=1 (the GPU check does) to turn "no GPU, skipped" into a failure.
bool gpu_required_by_environment();

// Free host memory (bytes) as the OS reports it; 0 if unknown.
int64_t host_available_memory();

}  // namespace conv1d
