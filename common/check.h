// Error checking for every runtime call and every kernel launch.
#pragma once

#include <stdexcept>
#include <string>

#include "common/gpu.h"

namespace conv1d {

// Thrown by GPU_CHECK: carries the call text, where it was made, and the runtime's own message.
struct GpuError : std::runtime_error {
  GpuError(cudaError_t code, const std::string& what) : std::runtime_error(what), code(code) {}
  cudaError_t code;
};

[[noreturn]] void throw_gpu_error(cudaError_t code, const char* call, const char* file, int line);

inline void check_gpu(cudaError_t code, const char* call, const char* file, int line) {
  if (code != cudaSuccess) throw_gpu_error(code, call, file, line);
}

// After a launch: configuration errors surface at once (cudaGetLastError is cheap). With
// CONV1D_SYNC_CHECKS (Debug builds, sanitizer runs) we also wait, so an illegal address inside the
// kernel is reported against the launch that caused it instead of some later call.
void check_launch(const char* what, const char* file, int line);

}  // namespace conv1d

#define GPU_CHECK(call) ::conv1d::check_gpu((call), #call, __FILE__, __LINE__)
#define GPU_CHECK_LAUNCH(name) ::conv1d::check_launch((name), __FILE__, __LINE__)
