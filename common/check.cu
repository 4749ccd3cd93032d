#include "common/check.h"

#include <sstream>

namespace conv1d {

void throw_gpu_error(cudaError_t code, const char* call, const char* file, int line) {
  std::ostringstream msg;
  msg << file << ":" << line << ": " << call << " failed: " << cudaGetErrorName(code) << " ("
      << cudaGetErrorString(code) << ")";
  throw GpuError(code, msg.str());
}

void check_launch(const char* what, const char* file, int line) {
  cudaError_t err = cudaGetLastError();
  if (err == cudaSuccess) {
#if defined(CONV1D_SYNC_CHECKS)
    err = cudaDeviceSynchronize();
#endif
  }
  if (err != cudaSuccess) {
    const std::string call = std::string("launch of ") + what;
    throw_gpu_error(err, call.c_str(), file, line);
  }
}

}  // namespace conv1d
