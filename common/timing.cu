#include "common/timing.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <stdexcept>

#include "common/device.h"

namespace conv1d {

int64_t host_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

EventPair::EventPair() {
  GPU_CHECK(cudaEventCreate(&start_));
  GPU_CHECK(cudaEventCreate(&stop_));
}
EventPair::~EventPair() {
  if (start_) cudaEventDestroy(start_);
  if (stop_) cudaEventDestroy(stop_);
}
EventPair::EventPair(EventPair&& o) noexcept : start_(o.start_), stop_(o.stop_) {
  o.start_ = o.stop_ = nullptr;
}
void EventPair::start(cudaStream_t s) { GPU_CHECK(cudaEventRecord(start_, s)); }
void EventPair::stop(cudaStream_t s) { GPU_CHECK(cudaEventRecord(stop_, s)); }
double EventPair::elapsed_ms() {
  GPU_CHECK(cudaEventSynchronize(stop_));
  float ms = 0;
  GPU_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
  return ms;
}
double EventPair::start_offset_ms(const EventPair& origin) {
  GPU_CHECK(cudaEventSynchronize(start_));
  float ms = 0;
  GPU_CHECK(cudaEventElapsedTime(&ms, origin.start_, start_));
  return ms;
}

namespace {

// A clock the waiting kernel can read, and its ticks per millisecond: the global nanosecond timer
// on NVIDIA, the clock64() counter on AMD (its rate is a device property).
__device__ inline unsigned long long gate_clock() {
#if defined(CONV1D_BACKEND_HIP)
  return static_cast<unsigned long long>(clock64());
#else
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
#endif
}

double gate_ticks_per_ms() {
#if defined(CONV1D_BACKEND_HIP)
  int dev = 0;
  GPU_CHECK(cudaGetDevice(&dev));
  cudaDeviceProp prop;
  GPU_CHECK(cudaGetDeviceProperties(&prop, dev));
  return static_cast<double>(prop.clockInstructionRate);  // kHz: ticks per millisecond
#else
  return 1e6;
#endif
}

// flags[0]: the last ticket the host released; flags[1]: how many holds ended by the timeout (one
// thread writes it at a time in practice; a lost count under two simultaneous timeouts is
// harmless).
__global__ void stream_gate_wait(volatile unsigned* flags, unsigned ticket,
                                 unsigned long long timeout_ticks) {
  const unsigned long long t0 = gate_clock();
  while (static_cast<int>(flags[0] - ticket) < 0) {
    if (gate_clock() - t0 > timeout_ticks) {
      flags[1] = flags[1] + 1;
      return;
    }
  }
}

std::atomic<bool> g_gate_off_by_tool{false};

bool gate_off_by_environment() {
  static const bool off = [] {
    const char* v = std::getenv("CONV1D_STREAM_GATE");
    return v &&
           (std::strcmp(v, "0") == 0 || std::strcmp(v, "off") == 0 || std::strcmp(v, "OFF") == 0);
  }();
  return off;
}

}  // namespace

bool StreamGate::enabled() {
#if defined(CONV1D_SYNC_CHECKS)
  return false;  // Debug builds synchronise after every launch, which would wait for every hold's timeout
#else
  return !gate_off_by_environment() && !g_gate_off_by_tool.load();
#endif
}

StreamGate::~StreamGate() {
  release();
  if (flags_) {
    cudaDeviceSynchronize();  // the waiting kernel reads flags_ until it sees the release
    cudaFreeHost(flags_);
  }
}

StreamGate::Hold StreamGate::hold(cudaStream_t s) {
  if (!enabled()) return Hold();
  if (held_) throw std::logic_error("StreamGate::hold: the gate is already holding a stream");
  if (!flags_) {
#if defined(CONV1D_BACKEND_HIP)
    GPU_CHECK(hipHostMalloc(reinterpret_cast<void**>(&flags_), 2 * sizeof(unsigned),
                            hipHostMallocMapped | hipHostMallocCoherent));
#else
    GPU_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&flags_), 2 * sizeof(unsigned),
                            cudaHostAllocMapped));
#endif
    flags_[0] = flags_[1] = 0;
    timeout_ticks_ = static_cast<unsigned long long>(timeout_ms_ * gate_ticks_per_ms());
  }
  ++ticket_;
  stream_gate_wait<<<1, 1, 0, s>>>(flags_, ticket_, timeout_ticks_);
  GPU_CHECK(
      cudaGetLastError());  // not GPU_CHECK_LAUNCH: a Debug build's synchronising check would wait here
  held_ = true;
  // Under a tool that finishes each kernel inside its launch call the kernel has already given up
  // waiting: no later hold could do better, so gating stops here.
  if (cudaStreamQuery(s) == cudaSuccess) {
    release();
    if (!g_gate_off_by_tool.exchange(true))
      std::fprintf(
          stderr,
          "note: kernel launches here finish before they return (a profiler or sanitizer?); kernel "
          "records include launch time from here on (StreamGate, common/timing.h)\n");
    return Hold();
  }
  return Hold(this);
}

void StreamGate::release() {
  if (!held_) return;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  *static_cast<volatile unsigned*>(flags_) = ticket_;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  held_ = false;
}

void StreamGate::Hold::release() {
  if (gate_) gate_->release();
  gate_ = nullptr;
}

int64_t StreamGate::timeouts() const {
  return flags_ ? static_cast<volatile const unsigned*>(flags_)[1] : 0;
}

L2Flusher::L2Flusher() {
  int dev = 0, l2 = 0;
  GPU_CHECK(cudaGetDevice(&dev));
  GPU_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
  scratch_ = DeviceBuffer(std::max<size_t>(size_t(2) * l2, size_t(1) << 20));
}
void L2Flusher::flush(cudaStream_t s) {
  GPU_CHECK(cudaMemsetAsync(scratch_.get(), 0x5A, scratch_.bytes(), s));
}

Summary summarize(std::vector<double> v) {
  Summary s;
  s.n = v.size();
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.min = v.front();
  s.max = v.back();
  s.median = v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
  s.mean = std::accumulate(v.begin(), v.end(), 0.0) / v.size();
  return s;
}

double measure_copy_ceiling_gbs(size_t bytes, int reps) {
  DeviceBuffer src(bytes), dst(bytes);
  GPU_CHECK(cudaMemset(src.get(), 1, bytes));
  GPU_CHECK(cudaMemcpy(dst.get(), src.get(), bytes, cudaMemcpyDeviceToDevice));  // warm-up
  L2Flusher flusher;
  std::vector<double> ms;
  EventPair ev;
  for (int i = 0; i < reps; ++i) {
    flusher.flush();
    ev.start();
    GPU_CHECK(cudaMemcpyAsync(dst.get(), src.get(), bytes, cudaMemcpyDeviceToDevice, 0));
    ev.stop();
    ms.push_back(ev.elapsed_ms());
  }
  const double med = summarize(ms).median;
  return 2.0 * static_cast<double>(bytes) / (med * 1e-3) / 1e9;
}

}  // namespace conv1d
