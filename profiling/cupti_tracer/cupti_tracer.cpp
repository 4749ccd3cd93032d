// Our CUPTI tracer. Loaded into a CUDA program through the driver's injection hook,
//
//   CUDA_INJECTION64_PATH=<build>/profiling/cupti_tracer/libconv1d_cupti_tracer.so ./ch01_host_img2col
//
// it records every kernel, memory copy, memset, CUDA runtime call and NVTX range, and at exit writes
// them in rocprofv3's CSV format (rocprof_csv.h). Memsets are written as kernels named "[CUDA memset]":
// ROCm runs hipMemset as a fill kernel, so an AMD trace lists them among the kernels too. Settings,
// all optional:
//
//   CONV1D_TRACE_DIR       output folder (default ./cupti_trace)
//   CONV1D_TRACE_PREFIX    file-name prefix (default <hostname>/<pid>, rocprofv3's layout)
//   NVTX_INJECTION64_PATH  must name libcupti for NVTX ranges to reach CUPTI; the tracer sets it to the
//                          libcupti it was linked with when it is unset (this works when the program's
//                          first NVTX call comes after its first CUDA call, as in every chapter)
//
// Timestamps come from the steady clock the chapters use for their own phase records
// (common/timing.cu), so the tracer's records and the chapters' line up on one time axis.
#include <cupti.h>
#include <cxxabi.h>
#include <dlfcn.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>

#include "profiling/cupti_tracer/rocprof_csv.h"

// The newest record layouts this cupti.h declares (chosen by CMake): the library fills in the
// layout of the version it was built with, which is the header's.
#ifndef CONV1D_CUPTI_KERNEL_RECORD
#error \
    "CONV1D_CUPTI_KERNEL_RECORD must name the kernel record struct (set by profiling/cupti_tracer/CMakeLists.txt)"
#endif
#ifndef CONV1D_CUPTI_MEMCPY_RECORD
#error \
    "CONV1D_CUPTI_MEMCPY_RECORD must name the memcpy record struct (set by profiling/cupti_tracer/CMakeLists.txt)"
#endif
#ifndef CONV1D_CUPTI_MEMSET_RECORD
#error \
    "CONV1D_CUPTI_MEMSET_RECORD must name the memset record struct (set by profiling/cupti_tracer/CMakeLists.txt)"
#endif
using KernelActivity = CONV1D_CUPTI_KERNEL_RECORD;
using MemcpyActivity = CONV1D_CUPTI_MEMCPY_RECORD;
using MemsetActivity = CONV1D_CUPTI_MEMSET_RECORD;

namespace {

using conv1d_tracer::ApiRecord;
using conv1d_tracer::CopyDirection;
using conv1d_tracer::CopyRecord;
using conv1d_tracer::KernelRecord;

struct OpenRange {
  std::string name;
  uint64_t start;
  uint32_t process, thread;
};

struct State {
  std::mutex mu;
  conv1d_tracer::Trace trace;
  std::unordered_map<uint32_t, OpenRange> open_ranges;  // NVTX ranges by marker id, until their end
  size_t dropped = 0;
};

State& state() {
  static State* s = new State;  // never destroyed: CUPTI may deliver buffers during static teardown
  return *s;
}

void warn(const char* what, CUptiResult r) {
  const char* msg = nullptr;
  cuptiGetResultString(r, &msg);
  std::fprintf(stderr, "cupti tracer: %s failed: %s\n", what, msg ? msg : "unknown error");
}

bool check(CUptiResult r, const char* what) {
  if (r == CUPTI_SUCCESS) return true;
  warn(what, r);
  return false;
}

uint64_t CUPTIAPI steady_now_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

std::string demangle(const char* name) {
  if (!name) return "?";
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string out = (status == 0 && d) ? d : name;
  std::free(d);
  return out;
}

CopyDirection direction(uint8_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return CopyDirection::host_to_device;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return CopyDirection::device_to_host;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return CopyDirection::device_to_device;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return CopyDirection::host_to_host;
    default: return CopyDirection::unknown;
  }
}

// What kernel, memcpy and memset records have in common.
template <class Record, class Activity>
void take_common(Record& r, const Activity* a) {
  r.start = a->start;
  r.end = a->end;
  r.device = a->deviceId;
  r.stream = a->streamId;
  r.correlation = a->correlationId;
}

// Called with the lock held.
void take(State& s, const CUpti_Activity* rec) {
  switch (rec->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const auto* k = reinterpret_cast<const KernelActivity*>(rec);
      KernelRecord r;
      take_common(r, k);
      r.name = demangle(k->name);
      r.context = k->contextId;
      r.grid[0] = k->gridX, r.grid[1] = k->gridY, r.grid[2] = k->gridZ;
      r.block[0] = k->blockX, r.block[1] = k->blockY, r.block[2] = k->blockZ;
      r.shared_bytes = k->staticSharedMemory + k->dynamicSharedMemory;
      r.local_bytes = k->localMemoryPerThread;
      r.registers = k->registersPerThread;
      s.trace.kernels.push_back(std::move(r));
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto* m = reinterpret_cast<const MemsetActivity*>(rec);
      KernelRecord r;
      take_common(r, m);
      r.name = conv1d_tracer::kMemsetName;
      r.context = m->contextId;
      s.trace.kernels.push_back(std::move(r));
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto* m = reinterpret_cast<const MemcpyActivity*>(rec);
      CopyRecord r;
      take_common(r, m);
      r.direction = direction(m->copyKind);
      r.bytes = m->bytes;
      s.trace.copies.push_back(r);
      break;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME: {
      const auto* a = reinterpret_cast<const CUpti_ActivityAPI*>(rec);
      const char* name = nullptr;
      if (cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, a->cbid, &name) != CUPTI_SUCCESS ||
          !name)
        name = "?";
      s.trace.api.push_back({conv1d_tracer::strip_api_version(name), a->start, a->end, a->processId,
                             a->threadId, a->correlationId});
      break;
    }
    case CUPTI_ACTIVITY_KIND_MARKER: {
      // NVTX push/pop arrive as a start record (with the name) and an end record with the same id.
      const auto* m = reinterpret_cast<const CUpti_ActivityMarker2*>(rec);
      const uint32_t process =
          m->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD ? m->objectId.pt.processId : 0;
      const uint32_t thread =
          m->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD ? m->objectId.pt.threadId : 0;
      if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_START) {
        s.open_ranges[m->id] = {m->name ? m->name : "", m->timestamp, process, thread};
      } else if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_END) {
        auto it = s.open_ranges.find(m->id);
        if (it != s.open_ranges.end()) {
          s.trace.ranges.push_back({it->second.name, it->second.start, m->timestamp,
                                    it->second.process, it->second.thread, 0});
          s.open_ranges.erase(it);
        }
      } else if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS) {
        s.trace.ranges.push_back(
            {m->name ? m->name : "", m->timestamp, m->timestamp, process, thread, 0});
      }
      break;
    }
    default: break;
  }
}

constexpr size_t kBufferBytes = size_t(8) << 20;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;  // as many as fit
}

void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t,
                               size_t valid) {
  State& s = state();
  {
    std::lock_guard<std::mutex> lock(s.mu);
    CUpti_Activity* rec = nullptr;
    while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) take(s, rec);
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS)
      s.dropped += dropped;
  }
  std::free(buffer);
}

std::string default_prefix() {
  char host[256] = "localhost";
  gethostname(host, sizeof host - 1);
  return std::string(host) + "/" + std::to_string(getpid());
}

void write_at_exit() {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  const char* dir = std::getenv("CONV1D_TRACE_DIR");
  const char* prefix = std::getenv("CONV1D_TRACE_PREFIX");
  const std::string d = dir && *dir ? dir : "cupti_trace";
  const std::string p = prefix && *prefix ? prefix : default_prefix();
  const std::string err = conv1d_tracer::write_rocprof_csv(s.trace, d, p);
  if (!err.empty()) {
    std::fprintf(stderr, "cupti tracer: %s\n", err.c_str());
    return;
  }
  std::fprintf(stderr,
               "cupti tracer: %zu kernels and memsets, %zu copies, %zu runtime calls, %zu NVTX "
               "ranges -> %s/%s_*.csv\n",
               s.trace.kernels.size(), s.trace.copies.size(), s.trace.api.size(),
               s.trace.ranges.size(), d.c_str(), p.c_str());
  if (s.dropped)
    std::fprintf(stderr, "cupti tracer: WARNING: CUPTI dropped %zu records\n", s.dropped);
  if (s.trace.ranges.empty())
    std::fprintf(
        stderr,
        "cupti tracer: no NVTX ranges (set NVTX_INJECTION64_PATH to libcupti to record them)\n");
}

void point_nvtx_at_cupti() {
  if (std::getenv("NVTX_INJECTION64_PATH")) return;
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&cuptiActivityEnable), &info) && info.dli_fname)
    setenv("NVTX_INJECTION64_PATH", info.dli_fname, 0);
}

}  // namespace

// The driver calls this once, when the program initialises CUDA.
extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  static std::once_flag once;
  static int result = 0;
  std::call_once(once, [] {
    point_nvtx_at_cupti();
#if defined(CONV1D_CUPTI_TIMESTAMP_CALLBACK)
    // Must precede enabling any activity kind.
    check(cuptiActivityRegisterTimestampCallback(steady_now_ns),
          "cuptiActivityRegisterTimestampCallback");
#endif
    if (!check(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed),
               "cuptiActivityRegisterCallbacks"))
      return;
    bool ok = check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL),
                    "enabling kernel records");
    ok &= check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY), "enabling memcpy records");
    ok &= check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET), "enabling memset records");
    ok &= check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME), "enabling runtime API records");
    check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MARKER), "enabling NVTX records");  // optional
    std::atexit(write_at_exit);
    result = ok ? 1 : 0;
  });
  return result;
}
