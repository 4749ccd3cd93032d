// GPU tests skip (not pass) on a machine without a GPU; under CONV1D_REQUIRE_GPU=1 they fail
// instead, so the GPU check cannot go green by skipping.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "common/device.h"

#define CONV1D_REQUIRE_GPU_OR_SKIP()                                             \
  do {                                                                           \
    std::string why_;                                                            \
    if (!::conv1d::gpu_available(&why_)) {                                       \
      if (::conv1d::gpu_required_by_environment()) FAIL() << "no GPU: " << why_; \
      GTEST_SKIP() << "no GPU: " << why_;                                        \
    }                                                                            \
  } while (0)
