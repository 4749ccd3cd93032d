// Timing: device events for GPU work, a steady host clock for everything, and an L2 flush so a
// timed iteration never starts with its inputs already in cache.
#pragma once

#include <cstdint>
#include <vector>

#include "common/buffers.h"
#include "common/check.h"

namespace conv1d {

// Nanoseconds on a steady host clock (the time base of phase records and traces).
int64_t host_now_ns();

class EventPair {
 public:
  EventPair();
  ~EventPair();
  EventPair(const EventPair&) = delete;
  EventPair& operator=(const EventPair&) = delete;
  EventPair(EventPair&& o) noexcept;
  void start(cudaStream_t s = 0);
  void stop(cudaStream_t s = 0);
  double elapsed_ms();  // waits for the stop event
  // The events themselves, for cross-stream ordering (cudaStreamWaitEvent).
  cudaEvent_t start_event() const { return start_; }
  cudaEvent_t stop_event() const { return stop_; }
  // Milliseconds from `origin`'s start event to this pair's start event (waits for both; both must
  // have been recorded on the same device, on any streams).
  double start_offset_ms(const EventPair& origin);

 private:
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

// Overwrites a buffer twice the size of the L2 cache.
class L2Flusher {
 public:
  L2Flusher();
  void flush(cudaStream_t s = 0);

 private:
  DeviceBuffer scratch_;
};

struct Summary {
  double median = 0, min = 0, max = 0, mean = 0;
  size_t n = 0;
};
Summary summarize(std::vector<double> v);

// The bandwidth ceiling of this device: a large device-to-device copy, bytes read + written per
// second (GB/s = 1e9 B/s), median of `reps` copies. Measured in the same run as what it judges.
double measure_copy_ceiling_gbs(size_t bytes = size_t(256) << 20, int reps = 10);

}  // namespace conv1d
