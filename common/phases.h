// Phase records: every host step, allocation, copy, kernel and free of a run, with its category and
// start/end on one clock. Printed as a table with shares (the seed notes' "where does the time go"
// analysis, done by the program itself) and written as CSV for profiling/.
//
// Clocks: host steps, allocations, frees and synchronous copies are timed on the steady host clock
// around the call. Kernels are timed with device events around the launch, the stream held until
// the launch is queued (StreamGate, outside the verification run), so the events time the kernel and
// not the launch; a kernel's record starts at the host time of its launch and lasts its event
// duration. Each record also opens an NVTX range
// (roctx on AMD), so external profilers show the same phases.
//
// CSV schema (--profile-csv PREFIX writes two files; strings quoted, numbers not):
//   PREFIX_stats.csv  "Name","Calls","TotalDurationNs","AverageNs","Percentage","MinNs","MaxNs","StdDev","Category"
//                     rocprofv3's --stats columns plus the category; one row per (name, category),
//                     timed iterations only, sorted by total time; Percentage of the sum of all rows.
//   PREFIX_trace.csv  "Category","Name","Iteration","Stream_Id","Start_Timestamp","End_Timestamp"
//                     one row per record, timestamps in ns of the steady host clock; iteration 0 is
//                     the verification run, warm-up runs are not kept, timed runs are 1..N.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/check.h"
#include "common/nvtx.h"
#include "common/timing.h"

namespace conv1d {

enum class Category { host, alloc, h2d, kernel, d2h, free };
const char* category_name(Category c);
constexpr int kCategoryCount = 6;

struct PhaseRecord {
  std::string name;
  Category category;
  int iteration;
  int stream;
  int64_t start_ns, end_ns;
  int64_t duration_ns() const { return end_ns - start_ns; }
};

struct PhaseStat {
  std::string name;
  Category category;
  int64_t calls = 0;
  double total_ns = 0, avg_ns = 0, min_ns = 0, max_ns = 0, stddev_ns = 0, percentage = 0;
};

class PhaseRecorder {
 public:
  PhaseRecorder();
  ~PhaseRecorder();

  // Records made until the next begin_iteration() belong to `iteration`; a negative one (warm-up)
  // is timed but not kept.
  void begin_iteration(int iteration);
  // Waits for the device and resolves the kernel timings of the current iteration.
  void end_iteration();

  // A synchronous step timed on the host clock.
  template <class F>
  void step(Category c, const char* name, F&& f) {
    NvtxRange r(name);
    const int64_t t0 = host_now_ns();
    f();
    add(name, c, t0, host_now_ns());
  }
  template <class F>
  void host(const char* name, F&& f) {
    step(Category::host, name, f);
  }
  template <class F>
  void alloc(const char* name, F&& f) {
    step(Category::alloc, name, f);
  }
  template <class F>
  void free(const char* name, F&& f) {
    step(Category::free, name, f);
  }
  template <class F>
  void h2d(const char* name, F&& f) {
    step(Category::h2d, name, f);
  }
  template <class F>
  void d2h(const char* name, F&& f) {
    step(Category::d2h, name, f);
  }

  // A kernel launch, timed by device events on `stream`; `launch` must only enqueue work (no
  // synchronisation). Outside iteration 0 the stream is held by a StreamGate until the launch is in
  // its queue, so the events time the kernel and not the launch (common/timing.h). Iteration 0, the
  // verification run, is not gated: it is the first launch of every kernel, and CUDA loads a kernel
  // at its first launch (lazy loading), which can wait for the device, and so for the gate.
  // [docs:kernel_record]
  template <class F>
  void kernel(const char* name, F&& launch, cudaStream_t stream = 0, int stream_id = 0) {
    // Outside the NVTX range: the wait is not the kernel's.
    StreamGate::Hold held = iteration_ != 0 ? gate_.hold(stream) : StreamGate::Hold();
    NvtxRange r(name);
    EventPair& ev = next_events();
    const int64_t t0 = host_now_ns();
    ev.start(stream);  // the GPU reaches this only after release() ...
    launch();
    ev.stop(stream);
    held.release();  // ... when the kernel is already queued behind it
    pending_.push_back({add(name, Category::kernel, t0, t0, stream_id), &ev});
  }
  // [/docs:kernel_record]

  // Work enqueued asynchronously on `stream` (a copy, a kernel, several of them), timed by device
  // events and placed where it ran on the device: unlike kernel(), whose record starts at the host
  // time of the launch, the record starts when the stream reached the work, so steps that waited in
  // a queue behind others show up late, and steps on several streams line up as a timeline. Device
  // times are mapped onto the host clock through an origin event recorded (on `stream`) at the
  // first async() of the iteration, taken to have run at the host time of that call: true within
  // the launch latency when the device is idle then, as it is at the start of a measured run.
  // `enqueue` must only enqueue work (no synchronisation, no stream capture in progress).
  template <class F>
  void async(Category c, const char* name, cudaStream_t stream, int stream_id, F&& enqueue) {
    NvtxRange r(name);
    if (!origin_recorded_) {
      if (!origin_)
        origin_ = std::make_unique<EventPair>();  // made at first use: no GPU needed before
      origin_->start(stream);
      origin_ns_ = host_now_ns();
      origin_recorded_ = true;
    }
    EventPair& ev = next_events();
    ev.start(stream);
    enqueue();
    ev.stop(stream);
    pending_.push_back({add(name, c, origin_ns_, origin_ns_, stream_id), &ev, true});
  }

  const std::vector<PhaseRecord>& records() const { return records_; }
  // Sum of kernel durations (ms) of one kept iteration.
  double kernel_ms(int iteration) const;

 private:
  struct Pending {
    size_t record;  // index into records_ (SIZE_MAX when the iteration is not kept)
    EventPair* events;
    bool from_origin = false;  // async(): the start is placed by the origin event
  };
  size_t add(const char* name, Category c, int64_t t0, int64_t t1, int stream_id = 0);
  EventPair& next_events();

  int iteration_ = 0;
  std::vector<PhaseRecord> records_;
  std::vector<Pending> pending_;
  std::vector<std::unique_ptr<EventPair>> pool_;
  size_t pool_used_ = 0;
  std::unique_ptr<EventPair> origin_;  // async(): device time zero of the iteration ...
  int64_t origin_ns_ = 0;              // ... at this host time
  bool origin_recorded_ = false;
  StreamGate gate_;  // kernel(): holds the stream while the launch is enqueued
  int64_t gate_timeouts_reported_ = 0;
};

// Statistics over records with iteration >= first_iteration.
std::vector<PhaseStat> phase_stats(const std::vector<PhaseRecord>& records,
                                   int first_iteration = 1);
// Total time per category (ns) over the same records.
std::vector<double> category_totals(const std::vector<PhaseStat>& stats);
// The printed table, and the share of each category (host/alloc/h2d/kernel/d2h/free).
std::string phase_table(const std::vector<PhaseStat>& stats, int iterations);

void write_stats_csv(const std::string& path, const std::vector<PhaseStat>& stats);
void write_trace_csv(const std::string& path, const std::vector<PhaseRecord>& records);

}  // namespace conv1d
