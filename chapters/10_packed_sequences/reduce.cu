// Chapter 10's backward sums dweight and dbias with chapter 09's reduce_partials (defined once here:
// a plain kernel may appear in only one translation unit of a program).
#include "chapters/09_direct_backward/reduce.cuh"
#include "chapters/10_packed_sequences/backward.cuh"

namespace conv1d::ch10 {

void run_reduce(const float* partials, const ch09::PartialLayout& l, int64_t dim, int width,
                float* dweight, float* dbias, cudaStream_t s) {
  ch09::launch_reduce_partials(partials, l, dim, width, dweight, dbias, s);
}

}  // namespace conv1d::ch10
