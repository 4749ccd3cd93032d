// Prototype (not part of the project): channel-last forward kernels that keep more rows in flight
// per thread than chapter 08's `cl_tiled`, measured beside it and the copy ceiling in one run.
//
//   regpipe<SEG>: a thread walks SEG rows of its 16-byte column; the next batch of 8 rows is loaded
//                 before the current batch is computed and stored (x and out may alias, so the
//                 compiler cannot hoist those loads above the stores by itself).
//   cpasync<SEG, DEPTH>: the same walk, each batch copied into shared memory by cp.async DEPTH
//                 batches ahead; a thread reads only the bytes it copied itself, so no barrier.
//
// Every output is compared bit for bit with cl_tiled's (same arithmetic: cl_outputs).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

#include "chapters/08_direct_forward/cl_tiled.cuh"
#include "common/async_copy.cuh"
#include "common/dtype.h"
#include "common/timing.h"

using namespace conv1d;
using namespace conv1d::ch08;

constexpr int kB = 8;  // rows a batch

template <class T, int W, int N>
__device__ __forceinline__ void out_batch(const DirectArgs<T>& a, T* out, int64_t t0,
                                          const Filter<W> (&f)[N], Vec<T, N> (&win)[W],
                                          const Vec<T, N> (&rows)[kB]) {
#pragma unroll
  for (int r = 0; r < kB; ++r) {
#pragma unroll
    for (int k = 0; k < W - 1; ++k) win[k] = win[k + 1];
    win[W - 1] = rows[r];
    *reinterpret_cast<Vec<T, N>*>(out + (t0 + r) * a.dim) =
        cl_outputs<T, W, N, true, false>(f, win, kAllTaps<W>, a.silu);
  }
}

// Threads: (b, segment, column), column fastest. L a multiple of SEG (the prototype's shapes).
template <class T, int W, int N, int SEG, int THREADS, int MINB>
__global__ void __launch_bounds__(THREADS, MINB) regpipe(DirectArgs<T> a, FastDivmod by_cols) {
  const int64_t item = blockIdx.x * int64_t(THREADS) + threadIdx.x;
  const int64_t bs = by_cols.div(item);
  const int64_t segs = a.seqlen / SEG;
  if (bs >= a.batch * segs) return;
  const int64_t d0 = (item - bs * by_cols.divisor()) * N;
  const int64_t b = bs / segs, t0 = (bs - b * segs) * SEG;
  const T* x = a.x + b * a.seqlen * a.dim + d0;
  T* out = a.out + b * a.seqlen * a.dim + d0;
  Vec<T, N> win[W], cur[kB], nxt[kB];
#pragma unroll
  for (int r = 0; r < kB; ++r) cur[r] = *reinterpret_cast<const Vec<T, N>*>(x + (t0 + r) * a.dim);
#pragma unroll
  for (int k = 0; k < W - 1; ++k) {
    const int64_t t = t0 - (W - 1) + k;
    win[k + 1] = t >= 0 ? *reinterpret_cast<const Vec<T, N>*>(x + t * a.dim) : zero_vec<T, N>();
  }
  Filter<W> f[N];
  load_filters<W, N>(a, d0, f);
  const bool first = t0 == 0;
#pragma unroll 1
  for (int s = 0; s < SEG; s += kB) {
    if (s + kB < SEG) {
#pragma unroll
      for (int r = 0; r < kB; ++r)
        nxt[r] = *reinterpret_cast<const Vec<T, N>*>(x + (t0 + s + kB + r) * a.dim);
    }
    if (first && s == 0) {
#pragma unroll
      for (int r = 0; r < kB; ++r) {
#pragma unroll
        for (int k = 0; k < W - 1; ++k) win[k] = win[k + 1];
        win[W - 1] = cur[r];
        *reinterpret_cast<Vec<T, N>*>(out + (t0 + r) * a.dim) =
            cl_outputs<T, W, N>(f, win, taps_inside<W>(r), a.silu);
      }
    } else {
      out_batch<T, W, N>(a, out, t0 + s, f, win, cur);
    }
#pragma unroll
    for (int r = 0; r < kB; ++r) cur[r] = nxt[r];
  }
}

template <class T, int W, int N, int SEG, int DEPTH, int THREADS, int MINB, bool LAZY>
__global__ void __launch_bounds__(THREADS, MINB) cpasync(DirectArgs<T> a, FastDivmod by_cols) {
  extern __shared__ __align__(16) unsigned char smem[];  // [DEPTH][kB][THREADS] 16-byte vectors
  const int64_t item = blockIdx.x * int64_t(THREADS) + threadIdx.x;
  const int64_t bs = by_cols.div(item);
  const int64_t segs = a.seqlen / SEG;
  const bool live = bs < a.batch * segs;  // (no early return: keeps the code simple, no barrier)
  if (!live) return;
  const int64_t d0 = (item - bs * by_cols.divisor()) * N;
  const int64_t b = bs / segs, t0 = (bs - b * segs) * SEG;
  const T* x = a.x + b * a.seqlen * a.dim + d0;
  T* out = a.out + b * a.seqlen * a.dim + d0;
  auto slot = [&](int s, int r) {
    return smem + ((size_t(s) * kB + r) * THREADS + threadIdx.x) * 16;
  };
  constexpr int kBatches = SEG / kB;
#pragma unroll
  for (int i = 0; i < DEPTH; ++i) {
    if (i < kBatches) {
#pragma unroll
      for (int r = 0; r < kB; ++r) copy16_async(slot(i, r), x + (t0 + i * kB + r) * a.dim, 16);
    }
    async_commit();
  }
  Vec<T, N> win[W];
#pragma unroll
  for (int k = 0; k < W - 1; ++k) {
    const int64_t t = t0 - (W - 1) + k;
    win[k + 1] = t >= 0 ? *reinterpret_cast<const Vec<T, N>*>(x + t * a.dim) : zero_vec<T, N>();
  }
  Filter<W> f[N];
  load_filters<W, N>(a, d0, f);
  const bool first = t0 == 0;
#pragma unroll 1
  for (int i = 0; i < kBatches; ++i) {
    async_wait<DEPTH - 1>();
    const int s = i % DEPTH;
    if constexpr (LAZY) {  // each row read from shared memory when it is used; the slot refilled after
#pragma unroll
      for (int r = 0; r < kB; ++r) {
#pragma unroll
        for (int k = 0; k < W - 1; ++k) win[k] = win[k + 1];
        win[W - 1] = *reinterpret_cast<const Vec<T, N>*>(slot(s, r));
        const int64_t t = t0 + i * kB + r;
        *reinterpret_cast<Vec<T, N>*>(out + t * a.dim) =
            first && i == 0 ? cl_outputs<T, W, N>(f, win, taps_inside<W>(r), a.silu)
                            : cl_outputs<T, W, N, true, false>(f, win, kAllTaps<W>, a.silu);
      }
      if (i + DEPTH < kBatches) {
#pragma unroll
        for (int r = 0; r < kB; ++r)
          copy16_async(slot(s, r), x + (t0 + (i + DEPTH) * kB + r) * a.dim, 16);
      }
      async_commit();
      continue;
    }
    Vec<T, N> cur[kB];
#pragma unroll
    for (int r = 0; r < kB; ++r) cur[r] = *reinterpret_cast<const Vec<T, N>*>(slot(s, r));
    if (i + DEPTH < kBatches) {
#pragma unroll
      for (int r = 0; r < kB; ++r)
        copy16_async(slot(s, r), x + (t0 + (i + DEPTH) * kB + r) * a.dim, 16);
    }
    async_commit();
    if (first && i == 0) {
#pragma unroll
      for (int r = 0; r < kB; ++r) {
#pragma unroll
        for (int k = 0; k < W - 1; ++k) win[k] = win[k + 1];
        win[W - 1] = cur[r];
        *reinterpret_cast<Vec<T, N>*>(out + (t0 + r) * a.dim) =
            cl_outputs<T, W, N>(f, win, taps_inside<W>(r), a.silu);
      }
    } else {
      out_batch<T, W, N>(a, out, t0 + i * kB, f, win, cur);
    }
  }
}

// Chapter 08's kernel as it is, held to MINB blocks of 128 threads a multiprocessor.
template <class T, int W, int N, int kRows, int MINB>
__global__ void __launch_bounds__(kClTiledThreads, MINB)
    tiled_lb(DirectArgs<T> a, FastDivmod by_cols, FastDivmod by_tiles) {
  cl_tiled<T, W, N, kRows>(a, by_cols, by_tiles, OneSequencePerRow{});
}

template <class K>
void facts(K k, int threads, int smem, int* regs, int* blocks) {
  cudaFuncAttributes fa;
  GPU_CHECK(cudaFuncGetAttributes(&fa, k));
  *regs = fa.numRegs;
  GPU_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks, k, threads, smem));
  if (fa.localSizeBytes) std::printf("# local memory %zu bytes\n", fa.localSizeBytes);
}

// ---- harness ----
template <class T>
struct Run {
  DirectArgs<T> a;
  std::vector<T> ref;
  double ceiling;
  L2Flusher fl;
  int regs = 0, blocks = 0, threads = 128;
  double time(const char* name, const std::function<void()>& launch, bool check) {
    const size_t n = a.elements();
    GPU_CHECK(cudaMemset(a.out, 0xff, n * sizeof(T)));
    launch();
    GPU_CHECK(cudaGetLastError());
    GPU_CHECK(cudaDeviceSynchronize());
    bool ok = true;
    if (check) {
      std::vector<T> got(n);
      GPU_CHECK(cudaMemcpy(got.data(), a.out, n * sizeof(T), cudaMemcpyDeviceToHost));
      ok = std::memcmp(got.data(), ref.data(), n * sizeof(T)) == 0;
    } else {
      ref.resize(n);
      GPU_CHECK(cudaMemcpy(ref.data(), a.out, n * sizeof(T), cudaMemcpyDeviceToHost));
    }
    for (int i = 0; i < 3; ++i) launch();
    std::vector<double> ms;
    for (int i = 0; i < 20; ++i) {
      fl.flush();
      EventPair ev;
      ev.start();
      launch();
      ev.stop();
      ms.push_back(ev.elapsed_ms());
    }
    const double med = summarize(ms).median;
    const double gbs = 2.0 * n * sizeof(T) / (med * 1e-3) / 1e9;
    std::printf("%s\t%d\t%ld\t%ld\t%s\t%d\t%d\t%.4f\t%.1f\t%.1f\t%s\n",
                sizeof(T) == 2 ? "bf16" : "fp32", int(a.batch), long(a.dim), long(a.seqlen), name,
                regs, blocks * threads, med, gbs, 100 * gbs / ceiling,
                check ? (ok ? "bits-equal" : "MISMATCH") : "baseline");
    std::fflush(stdout);
    return med;
  }
};

template <class T, int N, int ROWS, int MINB>
void tiled_case(Run<T>& run) {
  const int64_t columns = run.a.dim / N, tiles = ceil_div(run.a.seqlen, ROWS);
  const FastDivmod by_cols(columns), by_tiles(tiles);
  const int64_t blocks = ceil_div(run.a.batch * tiles * columns, kClTiledThreads);
  auto k = tiled_lb<T, 4, N, ROWS, MINB>;
  run.threads = kClTiledThreads;
  facts(k, kClTiledThreads, 0, &run.regs, &run.blocks);
  const std::string nm = "tiled_" + std::to_string(ROWS) + "_minb" + std::to_string(MINB);
  run.time(nm.c_str(), [&] { k<<<blocks, kClTiledThreads>>>(run.a, by_cols, by_tiles); }, true);
}
template <class T, int N, int SEG, int THREADS, int MINB>
void regpipe_case(Run<T>& run) {
  const FastDivmod by_cols(run.a.dim / N);
  const int64_t items = run.a.batch * (run.a.seqlen / SEG) * (run.a.dim / N);
  auto k = regpipe<T, 4, N, SEG, THREADS, MINB>;
  run.threads = THREADS;
  facts(k, THREADS, 0, &run.regs, &run.blocks);
  const std::string nm = "regpipe_" + std::to_string(SEG) + "_minb" + std::to_string(MINB);
  run.time(nm.c_str(), [&] { k<<<ceil_div(items, THREADS), THREADS>>>(run.a, by_cols); }, true);
}
template <class T, int N, int SEG, int DEPTH, int THREADS, int MINB, bool LAZY = false>
void cpasync_case(Run<T>& run) {
  const FastDivmod by_cols(run.a.dim / N);
  const int64_t items = run.a.batch * (run.a.seqlen / SEG) * (run.a.dim / N);
  constexpr int smem = DEPTH * kB * THREADS * 16;
  auto k = cpasync<T, 4, N, SEG, DEPTH, THREADS, MINB, LAZY>;
  GPU_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  run.threads = THREADS;
  facts(k, THREADS, smem, &run.regs, &run.blocks);
  const std::string nm = "cpasync_" + std::to_string(SEG) + "_d" + std::to_string(DEPTH) + "_t" +
                         std::to_string(THREADS) + "_minb" + std::to_string(MINB) +
                         (LAZY ? "_lazy" : "");
  run.time(nm.c_str(), [&] { k<<<ceil_div(items, THREADS), THREADS, smem>>>(run.a, by_cols); },
           true);
}

template <class T>
void shape(int64_t B, int64_t D, int64_t L, double ceiling) {
  constexpr int N = 16 / sizeof(T);
  const size_t n = B * D * L;
  std::vector<T> hx(n), hw(D * 4);
  std::mt19937 g(1);
  std::uniform_real_distribution<float> u(-1, 1);
  auto host = [](float f) {
    T v;
    if constexpr (sizeof(T) == 4) {
      v = f;
    } else {
      const uint16_t bits = float_to_bf16_bits(f);
      std::memcpy(&v, &bits, 2);
    }
    return v;
  };
  for (auto& v : hx) v = host(u(g));
  for (auto& v : hw) v = host(u(g));
  DeviceBuffer x(n * sizeof(T)), out(n * sizeof(T)), w(hw.size() * sizeof(T));
  GPU_CHECK(cudaMemcpy(x.get(), hx.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  GPU_CHECK(cudaMemcpy(w.get(), hw.data(), hw.size() * sizeof(T), cudaMemcpyHostToDevice));
  Run<T> run{{static_cast<const T*>(x.get()), static_cast<const T*>(w.get()), nullptr,
              static_cast<T*>(out.get()), B, D, L, false},
             {}, ceiling, {}};
  run.regs = run.blocks = 0;
  run.time("cl_tiled_16 (chapter 08)", [&] { launch_cl_tiled(run.a, 4, 16); }, false);
  tiled_case<T, N, 16, 1>(run);
  tiled_case<T, N, 16, 4>(run);
  tiled_case<T, N, 16, 6>(run);
  tiled_case<T, N, 16, 8>(run);
  tiled_case<T, N, 32, 6>(run);
  regpipe_case<T, N, 32, 128, 4>(run);
  regpipe_case<T, N, 64, 128, 4>(run);
  regpipe_case<T, N, 64, 128, 6>(run);
  cpasync_case<T, N, 32, 2, 128, 6>(run);
  cpasync_case<T, N, 64, 2, 128, 6>(run);
  cpasync_case<T, N, 64, 3, 128, 4>(run);
  cpasync_case<T, N, 128, 2, 128, 6>(run);
  cpasync_case<T, N, 128, 3, 128, 4>(run);
  cpasync_case<T, N, 128, 4, 128, 3>(run);
  cpasync_case<T, N, 64, 2, 64, 12>(run);
  cpasync_case<T, N, 64, 3, 128, 4, true>(run);
  cpasync_case<T, N, 128, 4, 128, 3, true>(run);
  cpasync_case<T, N, 128, 3, 128, 4, true>(run);
  cpasync_case<T, N, 64, 4, 128, 3, true>(run);
}

int main() {
  const double ceiling = measure_copy_ceiling_gbs();
  std::printf("copy ceiling %.1f GB/s\n", ceiling);
  std::printf("dtype\tB\tD\tL\tkernel\tregs\tthreads_per_sm\tms\tGB/s\tceiling_pct\tcheck\n");
  shape<__nv_bfloat16>(8, 4096, 4096, ceiling);
  shape<__nv_bfloat16>(1, 4096, 16384, ceiling);
  shape<__nv_bfloat16>(32, 2048, 512, ceiling);
  shape<float>(8, 4096, 4096, ceiling);
  return 0;
}
