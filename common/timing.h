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

// Holds a stream until the host lets go of it, so that device events time kernels and not their
// launches. An event pair measures what the GPU did between reaching the start event and reaching
// the stop event. When the stream is idle as the start event is recorded, the GPU reaches it at
// once and then waits for a launch the host has not finished: the pair times the launch too
// (docs/profiling.md shows how much, gate on and off). hold() enqueues a one-thread kernel that waits until release(); what is
// enqueued in between (start event, launch, stop event) is all in the queue before the GPU reaches
// any of it.
//
//   StreamGate::Hold h = gate.hold(stream);   // nothing after this runs on `stream` ...
//   events.start(stream); launch(); events.stop(stream);
//   h.release();                              // ... until here (or when `h` goes out of scope)
//
// Whatever synchronises while a stream is held waits for the hold's timeout: launches must only
// enqueue, and the first launch of a kernel should come before any hold (CUDA loads a kernel at its
// first launch, and loading can wait for the device). A held stream is released after `timeout_ms`
// at the latest, so a mistake costs time, never a hang; timeouts() counts them. Tools that run every
// kernel to completion inside its launch call (Nsight Compute, for one) would make every hold wait
// for the timeout: the first hold that finds its kernel already finished when the launch returns
// turns gating off for the rest of the process, with one line on stderr. CONV1D_STREAM_GATE=0 in
// the environment turns it off from the start. Each hold costs the host one more launch (a few
// microseconds), which end-to-end times include.
class StreamGate {
 public:
  class Hold {
   public:
    Hold() = default;
    explicit Hold(StreamGate* g) : gate_(g) {}
    Hold(Hold&& o) noexcept : gate_(o.gate_) { o.gate_ = nullptr; }
    Hold& operator=(Hold&&) = delete;
    ~Hold() { release(); }
    void release();
    bool held() const { return gate_ != nullptr; }

   private:
    StreamGate* gate_ = nullptr;
  };

  explicit StreamGate(double timeout_ms = 50.0) : timeout_ms_(timeout_ms) {}
  ~StreamGate();
  StreamGate(const StreamGate&) = delete;
  StreamGate& operator=(const StreamGate&) = delete;

  // Enqueues the waiting kernel on `s` (allocating the flag on first use); an empty Hold when
  // gating is off. One hold at a time per gate.
  Hold hold(cudaStream_t s);
  // Holds that ended by the timeout rather than by release(), since this gate was made.
  int64_t timeouts() const;
  // Whether gating is on in this process (environment and tools, see above).
  static bool enabled();

 private:
  void release();
  unsigned* flags_ =
      nullptr;  // host-mapped: [0] last released ticket (the host writes it), [1] timeouts (the device)
  unsigned ticket_ = 0;
  bool held_ = false;
  double timeout_ms_;
  unsigned long long timeout_ticks_ =
      0;  // timeout_ms_ on the waiting kernel's clock, set with flags_
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
