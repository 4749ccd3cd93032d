#include "common/timing.h"

#include <algorithm>
#include <chrono>
#include <numeric>

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

L2Flusher::L2Flusher() {
  int dev = 0, l2 = 0;
  GPU_CHECK(cudaGetDevice(&dev));
  GPU_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
  scratch_ = DeviceBuffer(std::max<size_t>(size_t(2) * l2, size_t(1) << 20));
}
void L2Flusher::flush(cudaStream_t s) { GPU_CHECK(cudaMemsetAsync(scratch_.get(), 0x5A, scratch_.bytes(), s)); }

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
