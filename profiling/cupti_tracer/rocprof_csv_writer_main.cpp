// Test helper: writes a small known trace with the CUPTI tracer's CSV writer, so the Python tests can
// check that profiling/ reads the tracer's files (tests/python/profiling/test_cupti_csv.py).
//   rocprof_csv_writer DIR PREFIX
#include <cstdio>

#include "profiling/cupti_tracer/rocprof_csv.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: rocprof_csv_writer DIR PREFIX\n");
    return 2;
  }
  using namespace conv1d_tracer;
  Trace t;
  const uint64_t t0 = 1700000000000000000ull;  // absolute nanoseconds, beyond a double's 53 bits
  KernelRecord k;
  k.name =
      "void conv1d::ch01::naive_gemm<float>(float const*, float const*, float*, long, long, long)";
  k.device = 0, k.context = 1, k.stream = 7, k.registers = 40, k.shared_bytes = 2048;
  k.grid[0] = 64, k.grid[1] = 32, k.grid[2] = 1, k.block[0] = 16, k.block[1] = 16, k.block[2] = 1;
  for (int i = 0; i < 3; ++i) {
    k.start = t0 + 10000 * i + 1;
    k.end = k.start + 1000 + 500 * i;  // 1000, 1500, 2000 ns
    k.correlation = 10 + i;
    t.kernels.push_back(k);
  }
  KernelRecord q = k;
  q.name = "say \"hi\", kernel";  // quotes and commas survive
  q.start = t0 + 50000, q.end = t0 + 50100;
  t.kernels.push_back(q);
  t.copies.push_back({CopyDirection::host_to_device, t0 + 100, t0 + 900, 4096, 0, 7, 3});
  t.copies.push_back({CopyDirection::device_to_host, t0 + 40000, t0 + 40600, 4096, 0, 7, 20});
  t.copies.push_back({CopyDirection::device_to_device, t0 + 60000, t0 + 60200, 1 << 20, 0, 0, 30});
  t.api.push_back({strip_api_version("cudaMalloc_v3020"), t0 + 10, t0 + 90, 42, 43, 1});
  t.api.push_back({strip_api_version("cudaLaunchKernel_v7000"), t0 - 50, t0 - 5, 42, 43, 10});
  t.api.push_back({strip_api_version("cudaFree"), t0 + 45000, t0 + 45400, 42, 43, 25});
  t.ranges.push_back({"img2col into A", t0 + 20000, t0 + 29000, 42, 43, 0});
  const std::string err = write_rocprof_csv(t, argv[1], argv[2]);
  if (!err.empty()) {
    std::fprintf(stderr, "rocprof_csv_writer: %s\n", err.c_str());
    return 1;
  }
  return 0;
}
