#include "common/parallel.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <exception>
#include <mutex>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include "common/util.h"

namespace conv1d {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The progress line of one loop. Only one thread prints at a time (whichever finds the line due);
// on a terminal the line is rewritten in place, in a log file each report is a line of its own.
class Progress {
 public:
  Progress(const char* label, int64_t total)
      : label_(label),
        total_(total),
        start_(std::chrono::steady_clock::now()),
        tty_(isatty(2) == 1) {}

  void item_done() {
    const int64_t done = ++done_;
    if (!label_) return;
    const double t = seconds_since(start_);
    // Cheap test first: nothing before two seconds, then at most one report every few seconds.
    if (t < kFirstReportS || t < next_report_.load(std::memory_order_relaxed)) return;
    std::unique_lock<std::mutex> lock(print_, std::try_to_lock);
    if (!lock.owns_lock() || t < next_report_.load(std::memory_order_relaxed)) return;
    next_report_.store(t + (tty_ ? kTtyEveryS : kLogEveryS), std::memory_order_relaxed);
    std::fprintf(stderr, "%s%s: %.0f%% (%.1f s)%s", tty_ ? "\r" : "", label_, 100.0 * done / total_,
                 t, tty_ ? "" : "\n");
    std::fflush(stderr);
    printed_ = true;
  }

  ~Progress() {
    if (!printed_) return;
    std::fprintf(stderr, "%s%s: done in %.1f s\n", tty_ ? "\r" : "", label_, seconds_since(start_));
  }

 private:
  static constexpr double kFirstReportS = 2.0, kTtyEveryS = 0.5, kLogEveryS = 5.0;
  const char* label_;
  int64_t total_;
  std::chrono::steady_clock::time_point start_;
  bool tty_;
  std::atomic<int64_t> done_{0};
  std::atomic<double> next_report_{0.0};
  std::mutex print_;
  bool printed_ = false;
};

}  // namespace

void parallel_for(int64_t n, const std::function<void(int64_t)>& body, const char* label) {
  if (n <= 0) return;
  Progress progress(label, n);
  std::exception_ptr first_error;
  std::mutex error_lock;
  // dynamic: items can differ in cost (rows of different lengths, the tail of a tensor), and an
  // item is large enough (a row or a block of rows) that handing it out costs nothing noticeable.
#if defined(_OPENMP)
#pragma omp parallel for schedule(dynamic, 1)
#endif
  for (int64_t i = 0; i < n; ++i) {
    try {
      body(i);
    } catch (...) {
      std::lock_guard<std::mutex> g(error_lock);
      if (!first_error) first_error = std::current_exception();
    }
    progress.item_done();
  }
  if (first_error) std::rethrow_exception(first_error);
}

void parallel_for_blocks(int64_t n, const std::function<void(int64_t, int64_t)>& body,
                         int64_t block) {
  parallel_for(ceil_div(n, block),
               [&](int64_t i) { body(i * block, std::min(n, (i + 1) * block)); });
}

int host_threads() {
#if defined(_OPENMP)
  return omp_get_max_threads();
#else
  return 1;
#endif
}

void set_host_threads(int n) {
#if defined(_OPENMP)
  static const int default_threads = omp_get_max_threads();
  omp_set_num_threads(n > 0 ? n : default_threads);
#else
  (void)n;
#endif
}

bool host_parallel_available() {
#if defined(_OPENMP)
  return true;
#else
  return false;
#endif
}

}  // namespace conv1d
