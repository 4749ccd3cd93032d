#include "common/device.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <sstream>
#include <tuple>

#include "common/check.h"
#include "common/launch.cuh"

namespace conv1d {

bool gpu_available(std::string* why_not) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    cudaGetLastError();  // not sticky, but leave no trace for later checks
    if (why_not) *why_not = std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err);
    return false;
  }
  if (count == 0) {
    if (why_not) *why_not = "the runtime reports 0 devices";
    return false;
  }
  return true;
}

bool gpu_required_by_environment() {
  const char* v = std::getenv("CONV1D_REQUIRE_GPU");
  return v && *v && std::string(v) != "0";
}

DeviceInfo query_device() {
  DeviceInfo info;
  GPU_CHECK(cudaGetDevice(&info.index));
  cudaDeviceProp prop{};
  GPU_CHECK(cudaGetDeviceProperties(&prop, info.index));
  info.name = prop.name;
  info.sm_count = prop.multiProcessorCount;
  info.major = prop.major;
  info.minor = prop.minor;
  int l2 = 0;
  GPU_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, info.index));
  info.l2_bytes = l2;
  size_t free_b = 0, total_b = 0;
  GPU_CHECK(cudaMemGetInfo(&free_b, &total_b));
  info.free_memory = static_cast<int64_t>(free_b);
  info.total_memory = static_cast<int64_t>(total_b);
  return info;
}

std::string DeviceInfo::describe() const {
  std::ostringstream s;
  s << name << " (cc " << major << "." << minor << ", " << sm_count << " SMs, "
    << (total_memory >> 20) << " MiB, " << (free_memory >> 20) << " MiB free, L2 "
    << (l2_bytes >> 20) << " MiB)";
  return s.str();
}

bool takes_early_launch(const void* kernel) {
#if defined(CONV1D_BACKEND_HIP)
  (void)kernel;
  return false;
#else
  static std::mutex m;
  static std::map<const void*, bool> known;
  const std::lock_guard<std::mutex> lock(m);
  const auto it = known.find(kernel);
  if (it != known.end()) return it->second;
  cudaFuncAttributes attr{};
  GPU_CHECK(cudaFuncGetAttributes(&attr, kernel));
  return known[kernel] = attr.ptxVersion >= 90;
#endif
}

int64_t resident_blocks(const void* kernel, int threads, size_t smem) {
  static std::mutex m;
  static std::map<std::tuple<const void*, int, int, size_t>, int64_t> known;
  int device = 0;
  GPU_CHECK(cudaGetDevice(&device));
  const auto key = std::make_tuple(kernel, device, threads, smem);
  const std::lock_guard<std::mutex> lock(m);
  const auto it = known.find(key);
  if (it != known.end()) return it->second;
  int per_sm = 0, sms = 0;
  // (Past the 48 KB a kernel gets without asking, the occupancy counts only what it asked for.)
  if (smem > 48 * 1024)
    GPU_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   static_cast<int>(smem)));
  GPU_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem));
  GPU_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return known[key] = int64_t(std::max(per_sm, 1)) * sms;
}

int64_t host_available_memory() {
  const long pages = sysconf(_SC_AVPHYS_PAGES);
  const long page = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return 0;
  return static_cast<int64_t>(pages) * page;
}

}  // namespace conv1d
