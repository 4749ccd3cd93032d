// Chapter 02: pad + img2col and the weight expansion move to GPU kernels; the transposes stay on the
// host, as in the seed notes (docs/background.md#the-seeds).
//
//   x [B,D,L] -> transpose -> xt [B,L,D]                                (host)
//   cudaMalloc xt, weight, A, Bw, C; copy xt and weight to the device    (alloc, h2d)
//   xt -> A [B,L,W*D], one preprocess_input launch per batch             (kernel)
//   weight [D,W] -> Bw [W*D,D], one expand_weights launch                 (kernel)
//   C[b] = A[b] x Bw, one naive_gemm launch per batch (chapter 01's)      (kernel)
//   copy C back, cudaFree, transpose C [B,L,D] -> out [B,D,L]             (d2h, free, host)
//
// The pipeline is split into upload, launches and download so that chapters 03 and 04 reuse the two
// ends and replace only the launches.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "chapters/01_host_img2col/pipeline.cuh"
#include "chapters/02_gpu_preprocess/preprocess_kernels.cuh"

namespace conv1d::ch02 {

struct DeviceBuffers {  // the run's device memory: time-first x, weights, A, Bw, C
  DeviceBuffer xt, weight, a, bw, c;
};

// The chapter's idea in one function: the kernels of preprocess_kernels.cuh replace chapter 01's host
// steps, launched one batch at a time as in the seed notes. The upload and download around them,
// the rate models and the registration follow below.
// [docs:ch02_launches]
template <class T>
void launch_per_batch(const FwdProblem& p, RunContext& ctx, DeviceBuffers& d) {
  using DevT = device_t<T>;
  const int64_t B = p.shape.batch, D = p.shape.dim, L = p.shape.seqlen;
  const int W = p.shape.width;
  for (int64_t b = 0; b < B; ++b)  // one launch per batch, as in the seed notes
    ctx.rec.kernel("preprocess_input", [&] {
      launch_preprocess_input(d.xt.get<DevT>() + b * L * D, d.a.get<DevT>() + b * L * W * D, 1, L,
                              D, W);
    });
  ctx.rec.kernel("expand_weights",
                 [&] { launch_expand_weights(d.weight.get<DevT>(), d.bw.get<DevT>(), D, W); });
  for (int64_t b = 0; b < B; ++b)
    ctx.rec.kernel("naive_gemm", [&] {
      launch_naive_gemm(d.a.get<DevT>() + b * L * W * D, d.bw.get<DevT>(),
                        d.c.get<DevT>() + b * L * D, L, D, W * D);
    });
}
// [/docs:ch02_launches]

inline MemoryNeed memory_need(const Options& o) {
  const ch01::GemmSizes s(o);
  const int64_t e = dtype_bytes(o.dtype), x = o.batch * o.seqlen * o.dim;
  MemoryNeed m;
  m.device_bytes = (x + o.dim * o.width + s.a + s.bw + s.c) * e;
  m.host_bytes = (x + s.c) * e;  // xt and C on the host
  return m;
}

// Napkin byte counts (read + written, what the kernel must move at least) for the bandwidth
// figures.
inline KernelModel preprocess_input_model(const Options& o) {
  const double x = double(o.batch) * o.seqlen * o.dim;
  // xt read once (its W-fold re-reads come from the L2), A written once: W+1 times the input.
  return {"preprocess_input", 0.0, x * (o.width + 1) * dtype_bytes(o.dtype)};
}
inline KernelModel expand_weights_model(const Options& o) {
  // The weights read, and every element of Bw written, zeros included (they are nearly all of it).
  const double taps = double(o.width) * o.dim;
  return {"expand_weights", 0.0, (taps + taps * o.dim) * dtype_bytes(o.dtype)};
}
inline std::vector<KernelModel> kernel_models(const Options& o) {
  return {ch01::gemm_model(o), preprocess_input_model(o), expand_weights_model(o)};
}

// [docs:ch02_upload]
template <class T>  // host storage type: float or Half
void upload(const FwdProblem& p, RunContext& ctx, DeviceBuffers& d) {
  const int64_t B = p.shape.batch, D = p.shape.dim, L = p.shape.seqlen;
  const ch01::GemmSizes n(p.opt);
  PhaseRecorder& rec = ctx.rec;
  std::vector<T> xt;

  // The one host step left before the GPU: see docs/02_gpu_preprocess.md for why it stays.
  rec.host("transpose x to [B,L,D]", [&] {
    xt.resize(B * L * D);
    transpose_batched(static_cast<const T*>(p.x.data()), xt.data(), B, D, L);
  });
  rec.alloc("cudaMalloc xt", [&] { d.xt = DeviceBuffer(xt.size() * sizeof(T)); });
  rec.alloc("cudaMalloc weight", [&] { d.weight = DeviceBuffer(p.weight.bytes()); });
  rec.alloc("cudaMalloc A", [&] { d.a = DeviceBuffer(n.a * sizeof(T)); });
  rec.alloc("cudaMalloc Bw", [&] { d.bw = DeviceBuffer(n.bw * sizeof(T)); });
  rec.alloc("cudaMalloc C", [&] { d.c = DeviceBuffer(n.c * sizeof(T)); });
  // W times fewer bytes cross the bus than chapter 01's A, and Bw (W*D*D elements) not at all.
  rec.h2d("copy xt to device", [&] {
    GPU_CHECK(cudaMemcpy(d.xt.get(), xt.data(), d.xt.bytes(), cudaMemcpyHostToDevice));
  });
  rec.h2d("copy weight to device", [&] {
    GPU_CHECK(
        cudaMemcpy(d.weight.get(), p.weight.data(), d.weight.bytes(), cudaMemcpyHostToDevice));
  });
  if (ctx.poison_outputs) {  // verification runs: whatever a kernel leaves unwritten stays NaN and fails
    d.a.poison();
    d.bw.poison();
    d.c.poison();
  }
}
// [/docs:ch02_upload]

template <class T>
void download(const FwdProblem& p, RunContext& ctx, DeviceBuffers& d, HostArray& out) {
  const int64_t B = p.shape.batch, D = p.shape.dim, L = p.shape.seqlen;
  PhaseRecorder& rec = ctx.rec;
  std::vector<T> c;
  rec.host("host buffer for C", [&] { c.resize(B * L * D); });  // page faults here, not in the copy
  // Wait for the kernels outside any record: their time is in their own records already, and a copy
  // that started by waiting for them would count it a second time.
  GPU_CHECK(cudaDeviceSynchronize());
  rec.d2h("copy C to host",
          [&] { GPU_CHECK(cudaMemcpy(c.data(), d.c.get(), d.c.bytes(), cudaMemcpyDeviceToHost)); });
  rec.free("cudaFree xt, weight, A, Bw, C", [&] { d = DeviceBuffers{}; });
  rec.host("transpose C to [B,D,L]",
           [&] { transpose_batched(c.data(), static_cast<T*>(out.data()), B, L, D); });
}

// Upload, the chapter's kernel launches, download. `launches(d)` only enqueues work.
template <class T, class Launches>
void run_pipeline(const FwdProblem& p, RunContext& ctx, HostArray& out, Launches&& launches) {
  DeviceBuffers d;
  upload<T>(p, ctx, d);
  launches(d);
  download<T>(p, ctx, d, out);
}

// A variant of this pipeline: `launch(tag, p, ctx, d)` enqueues a chapter's kernels, with tag's
// ::type the host storage type of the run (float or Half). Chapter 03 passes its own launches.
template <class Launch>
FwdVariant pipeline_variant(std::string name, std::vector<KernelModel> kernels, Launch launch) {
  auto run = [launch](const FwdProblem& p, RunContext& ctx, HostArray& out) {
    dispatch_storage(p.opt.dtype, [&](auto tag) {
      run_pipeline<typename decltype(tag)::type>(p, ctx, out,
                                                 [&](DeviceBuffers& d) { launch(tag, p, ctx, d); });
    });
  };
  return FwdVariant{std::move(name), run, std::move(kernels)};
}

inline FwdChapter chapter() {
  FwdChapter ch;
  ch.spec = {"02", "gpu_preprocess",
             "host transpose, GPU pad + img2col and weight expansion; per-batch launches"};
  ch.memory = memory_need;
  ch.variants = [](const Options& o) {
    auto launch = [](auto tag, auto&&... args) {
      launch_per_batch<typename decltype(tag)::type>(args...);
    };
    return std::vector<FwdVariant>{pipeline_variant("per_batch", kernel_models(o), launch)};
  };
  return ch;
}

}  // namespace conv1d::ch02
