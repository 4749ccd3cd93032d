// Chapter 08, channel-last step 2 (`vector`): one vector of N neighbouring channels of one time step
// per thread. In channel-last memory a time step's D channels are contiguous, so neighbouring
// threads take neighbouring 16-byte pieces of a row and every access is coalesced without any
// exchange between threads: the halo is simply the same channels W-1 rows back, which the thread
// loads itself (W loads per output vector; the rows before are read by the threads of earlier time
// steps too, so they mostly come from the L2).
//
// N is the widest access D allows: 16 bytes when D is a multiple of 8 (fp16/bf16) or 4 (fp32), and
// narrower otherwise (the launcher picks it), so any D works.
#pragma once

#include "chapters/08_direct_forward/direct_common.cuh"
#include "common/launch.cuh"

namespace conv1d::ch08 {

// The filters of channels d0 .. d0+N-1.
template <int W, int N, class T>
__device__ __forceinline__ void load_filters(const DirectArgs<T>& a, int64_t d0,
                                             Filter<W> (&f)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) f[i] = load_filter<W>(a, d0 + i);
}

// Outputs of channels d0 .. d0+N-1 at one time step from the W input rows in[k] (k - (W-1) steps
// back), `valid` saying which of them lie at or after t = 0 (kAllInside: the caller knows all of
// them do). The rows stay in their storage type (fewer registers than fp32 copies) and are
// converted where they are used.
template <class T, int W, int N, bool kAllInside = false>
__device__ __forceinline__ Vec<T, N> cl_outputs(const Filter<W> (&f)[N], const Vec<T, N> (&in)[W],
                                                unsigned valid, bool silu) {
  float y[N], taps[N][W];
#pragma unroll
  for (int i = 0; i < N; ++i)
#pragma unroll
    for (int k = 0; k < W; ++k) taps[i][k] = to_float(in[k].v[i]);
  if (kAllInside || valid == kAllTaps<W>) {  // every row but the first W-1 of a sequence
#pragma unroll
    for (int i = 0; i < N; ++i) y[i] = conv_output<W, false>(f[i], taps[i], valid, silu);
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) y[i] = conv_output<W>(f[i], taps[i], valid, silu);
  }
  return from_floats<T, N>(y);
}

// [docs:ch08_cl_vector]
template <class T, int W, int N>
__global__ void conv_fwd_cl_vector(DirectArgs<T> a, FastDivmod by_cols, FastDivmod by_len) {
  const int64_t item = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;  // (b*L + t) * D/N + column
  const int64_t bt = by_cols.div(item);
  if (bt >= a.batch * a.seqlen) return;
  const int64_t d0 = (item - bt * by_cols.divisor()) * N;
  const int64_t t = bt - by_len.div(bt) * a.seqlen;
  Vec<T, N> rows[W];
#pragma unroll
  for (int k = 0; k < W; ++k) {
    const int64_t back = W - 1 - k;  // tap k: the row `back` steps earlier, if it exists
    rows[k] = t >= back ? *reinterpret_cast<const Vec<T, N>*>(a.x + (bt - back) * a.dim + d0)
                        : zero_vec<T, N>();
  }
  Filter<W> f[N];
  load_filters<W, N>(a, d0, f);
  *reinterpret_cast<Vec<T, N>*>(a.out + bt * a.dim + d0) =
      cl_outputs<T, W, N>(f, rows, taps_inside<W>(t), a.silu);
}
// [/docs:ch08_cl_vector]

// The widest access (elements of T, at most max_bytes) that D and the pointers allow: N divides D,
// and rows of D elements keep every access aligned. 16 bytes is the widest load; the chapter's
// --access-bytes asks for narrower ones (fewer registers per thread, more accesses).
template <class T>
int cl_access_elements(const DirectArgs<T>& a, int max_bytes = 16) {
  for (int n = kPer16<T>; n > 1; n /= 2)
    if (n * static_cast<int>(sizeof(T)) <= max_bytes && a.dim % n == 0 &&
        aligned_to(a.x, n * sizeof(T)) && aligned_to(a.out, n * sizeof(T)))
      return n;
  return 1;
}

// Calls f(std::integral_constant<int, N>) for the access width N of cl_access_elements.
template <class T, class F>
void dispatch_access(const DirectArgs<T>& a, int max_bytes, F&& f) {
  switch (cl_access_elements(a, max_bytes)) {
    case 8:
      if constexpr (kPer16<T> >= 8) f(std::integral_constant<int, 8>{});
      break;
    case 4: f(std::integral_constant<int, 4>{}); break;
    case 2: f(std::integral_constant<int, 2>{}); break;
    default: f(std::integral_constant<int, 1>{}); break;
  }
}

constexpr int kClThreads = 128;

template <class T>
void launch_cl_vector(const DirectArgs<T>& a, int width, int max_access_bytes = 16,
                      cudaStream_t s = 0, KernelFacts* facts = nullptr) {
  dispatch_access(a, max_access_bytes, [&](auto access) {
    constexpr int N = decltype(access)::value;
    const FastDivmod by_cols(a.dim / N), by_len(a.seqlen);
    const int64_t blocks = ceil_div(a.elements() / N, kClThreads);  // a thread per vector
    dispatch_width(width, [&](auto w) {
      launch_or_describe("conv_fwd_cl_vector", conv_fwd_cl_vector<T, decltype(w)::value, N>, blocks,
                         kClThreads, s, facts, a, by_cols, by_len);
    });
  });
}

}  // namespace conv1d::ch08
