// Chapter 09: the deterministic sums' second step. Each unit of work wrote its W+1 sums (dweight
// for k < W, dbias for k = W) of one channel to a row of the partial-sum buffer; here every
// (channel, k) adds its units in one fixed order, so the result depends on the shape and the unit's
// size only, never on which unit finished first.
#pragma once

#include "chapters/09_direct_backward/bwd_common.cuh"
#include "common/launch.cuh"
#include "common/util.h"

namespace conv1d::ch09 {

// The units' sums into dweight and dbias (the kernel: reduce.cu, in the chapter's kernel library).
void launch_reduce_partials(const float* partials, const PartialLayout& l, int64_t dim, int width,
                            float* dweight, float* dbias, cudaStream_t s = 0,
                            KernelFacts* facts = nullptr);

}  // namespace conv1d::ch09
