// Chapter 09: the deterministic sums' second step (reduce.cuh). Defined once, in the chapter's
// kernel library: a kernel that is not a template may appear in only one translation unit of a
// program.
#include "chapters/09_direct_backward/reduce.cuh"

namespace conv1d::ch09 {

// [docs:ch09_reduce]
// A block is 32 (channel, k) columns by kReduceGroups groups of them (a warp each): group y adds
// units y, y + kReduceGroups, ...
// of its column (a1 outer, a2 inner, in that order), then group 0 adds the groups' totals 0, 1, ...
// in order. Consecutive threads read consecutive columns, and each column's units are split 8 ways,
// so the few thousand columns still give the GPU enough loads in flight.
constexpr int kReduceColumns = 32, kReduceGroups = 8;

__global__ void __launch_bounds__(kReduceColumns* kReduceGroups)
    reduce_partials(const float* __restrict__ partials, PartialLayout l, int64_t dim, int width,
                    float* __restrict__ dweight, float* __restrict__ dbias) {
  __shared__ float group_total[kReduceGroups][kReduceColumns];
  const int x = threadIdx.x % kReduceColumns, y = threadIdx.x / kReduceColumns;  // a warp per group
  const int64_t j = blockIdx.x * int64_t(kReduceColumns) + x;  // j = d * (W+1) + k
  const bool column = j < dim * (width + 1);
  const int64_t d = j / (width + 1), k = j - d * (width + 1);
  float total = 0.0f;
  if (column) {
    const float* p = partials + d * l.stride_d + k;
    for (int64_t u = y; u < l.count1 * l.count2; u += kReduceGroups) {
      const int64_t a1 = u / l.count2, a2 = u - a1 * l.count2;
      total += p[a1 * l.stride1 + a2 * l.stride2];
    }
  }
  group_total[y][x] = total;
  __syncthreads();
  if (y != 0 || !column) return;
  total = 0.0f;
#pragma unroll
  for (int g = 0; g < kReduceGroups; ++g) total += group_total[g][x];
  if (k < width)
    dweight[d * width + k] = total;
  else
    dbias[d] = total;
}
// [/docs:ch09_reduce]

void launch_reduce_partials(const float* partials, const PartialLayout& l, int64_t dim, int width,
                            float* dweight, float* dbias, cudaStream_t s, KernelFacts* facts) {
  launch_or_describe(
      "reduce_partials", reduce_partials, ceil_div(dim * (width + 1), int64_t(kReduceColumns)),
      kReduceColumns * kReduceGroups, s, facts, partials, l, dim, width, dweight, dbias);
}

}  // namespace conv1d::ch09
