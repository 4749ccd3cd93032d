// The stream gate (common/timing.h): a kernel record's device events must time the kernel, not a
// slow launch into an idle stream. Each test first shows what happens without the gate, so a gate
// that did nothing would fail here. GPU tests; they skip without a GPU or with gating off.
#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>
#include <thread>

#include "common/phases.h"
#include "common/timing.h"
#include "tests/gpu_test_util.h"

using namespace conv1d;

namespace {

__global__ void nothing() {}

void launch_nothing(cudaStream_t s) {
  nothing<<<1, 1, 0, s>>>();
  GPU_CHECK_LAUNCH("nothing");
}

// A launch that keeps the host busy first: the stream is idle, so an ungated start event fires
// at once and the pair waits for the host.
void slow_launch(cudaStream_t s, int host_ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(host_ms));
  launch_nothing(s);
}

#define SKIP_WITHOUT_GATE()                                                    \
  do {                                                                         \
    CONV1D_REQUIRE_GPU_OR_SKIP();                                              \
    if (!StreamGate::enabled())                                                \
      GTEST_SKIP() << "stream gate off (Debug build or CONV1D_STREAM_GATE=0)"; \
  } while (0)

}  // namespace

TEST(StreamGate, EventsTimeTheKernelNotASlowLaunch) {
  SKIP_WITHOUT_GATE();
  constexpr int kHostMs = 20;
  GPU_CHECK(cudaDeviceSynchronize());
  EventPair plain;
  plain.start();
  slow_launch(0, kHostMs);
  plain.stop();
  const double ungated = plain.elapsed_ms();
  EXPECT_GT(ungated, 0.8 * kHostMs)
      << "without the gate the events should include the host's delay";

  StreamGate gate;
  EventPair gated_ev;
  {
    StreamGate::Hold h = gate.hold(0);
    ASSERT_TRUE(h.held());
    gated_ev.start();
    slow_launch(0, kHostMs);
    gated_ev.stop();
  }  // released here
  const double gated = gated_ev.elapsed_ms();
  EXPECT_LT(gated, 1.0) << "an empty kernel, gated: " << gated << " ms (ungated " << ungated
                        << " ms)";
  EXPECT_EQ(gate.timeouts(), 0);
}

TEST(StreamGate, PhaseRecorderKernelRecordsAreGated) {
  SKIP_WITHOUT_GATE();
  // Both kernels launch once before any hold, as a verification run does: a kernel's first launch
  // loads it, and loading may wait for the device, which a hold would make time out.
  slow_launch(0, 0);
  launch_nothing(0);
  PhaseRecorder rec;
  GPU_CHECK(cudaDeviceSynchronize());
  rec.begin_iteration(1);
  rec.kernel("slow launch", [] { slow_launch(0, 20); });
  rec.kernel("back to back", [] { launch_nothing(0); });
  rec.end_iteration();
  ASSERT_EQ(rec.records().size(), 2u);
  for (const PhaseRecord& r : rec.records())
    EXPECT_LT(r.duration_ns(), 1000000) << r.name << ": " << r.duration_ns() << " ns";

  // Iteration 0 (the verification run, where kernels launch for the first time) is not gated.
  rec.begin_iteration(0);
  rec.kernel("slow launch, not gated", [] { slow_launch(0, 20); });
  rec.end_iteration();
  ASSERT_EQ(rec.records().size(), 3u);
  EXPECT_GT(rec.records()[2].duration_ns(), 15000000)
      << "iteration 0 should time the launch as well";
}

TEST(StreamGate, TimeoutLetsGoWithoutRelease) {
  SKIP_WITHOUT_GATE();
  StreamGate gate(5.0);  // 5 ms
  {
    StreamGate::Hold h = gate.hold(0);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    GPU_CHECK(cudaStreamSynchronize(0));  // returns: the kernel gave up waiting
  }
  EXPECT_EQ(gate.timeouts(), 1);
  { StreamGate::Hold h = gate.hold(0); }  // released at once
  GPU_CHECK(cudaDeviceSynchronize());
  EXPECT_EQ(gate.timeouts(), 1) << "a released hold is not a timeout";
}

TEST(StreamGate, OneHoldAtATime) {
  SKIP_WITHOUT_GATE();
  StreamGate gate;
  StreamGate::Hold h = gate.hold(0);
  EXPECT_THROW(gate.hold(0), std::logic_error);
  h.release();
  EXPECT_FALSE(h.held());
  StreamGate::Hold again = gate.hold(0);
  EXPECT_TRUE(again.held());
}
