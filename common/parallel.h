// Host-side parallel loops: the fp64 reference, the random inputs and the verification of a large
// run use every core of the host (OpenMP, when the build found it; a plain loop otherwise).
//
// parallel_for hands out items in any order to any thread, so a body must write only what its item
// owns, and anything summed across items must be summed afterwards in a fixed order: then results
// are the same bits for any number of threads (the tests run 1, 2 and 7).
#pragma once

#include <cstdint>
#include <functional>

namespace conv1d {

// Runs body(i) for every i in [0, n). An exception thrown by a body is rethrown here (the first
// one; the other items still run). With a `label`, a loop that runs longer than about two seconds
// prints a progress line to stderr every few seconds, and one at the end.
void parallel_for(int64_t n, const std::function<void(int64_t)>& body, const char* label = nullptr);

// parallel_for over the indices [0, n) in blocks of `block` (the last may be shorter): body(begin,
// end) for each block. For element-wise loops over a whole array.
constexpr int64_t kElementBlock = int64_t(1) << 16;
void parallel_for_blocks(int64_t n, const std::function<void(int64_t begin, int64_t end)>& body,
                         int64_t block = kElementBlock);

// Threads parallel_for uses (1 without OpenMP). set_host_threads(0) restores the default (all
// cores, or OMP_NUM_THREADS).
int host_threads();
void set_host_threads(int n);
bool host_parallel_available();

}  // namespace conv1d
