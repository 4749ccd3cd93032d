// Chapter 01: the original pipeline of the seed notes (docs/background.md#the-seeds). Everything but
// the GEMM happens on the host:
//
//   x [B,D,L] -> transpose -> pad -> img2col -> A [B,L,W*D]      (host)
//   weight [D,W] -> expand -> Bw [W*D,D]                          (host)
//   cudaMalloc A, Bw, C; copy A and Bw to the device              (alloc, h2d)
//   C[b] = A[b] x Bw, one naive_gemm launch per batch              (kernel)
//   copy C back, cudaFree, transpose C [B,L,D] -> out [B,D,L]      (d2h, free, host)
#pragma once

#include <vector>

#include "chapters/01_host_img2col/naive_gemm.cuh"
#include "common/buffers.h"
#include "common/preprocess.h"
#include "common/runner.h"

namespace conv1d::ch01 {

// Sizes of the GEMM formulation, in elements.
struct GemmSizes {
  int64_t a, bw, c;  // A [B,L,W*D], Bw [W*D,D], C [B,L,D]
  explicit GemmSizes(const Options& o)
      : a(o.batch * o.seqlen * o.width * o.dim),
        bw(int64_t(o.width) * o.dim * o.dim),
        c(o.batch * o.seqlen * o.dim) {}
};

inline MemoryNeed memory_need(const Options& o) {
  const GemmSizes s(o);
  const int64_t e = dtype_bytes(o.dtype);
  MemoryNeed m;
  m.device_bytes = (s.a + s.bw + s.c) * e;
  m.host_bytes =
      (2 * o.batch * (o.seqlen + o.width) * o.dim + s.a + s.bw + s.c) * e;  // xt, xp, A, Bw, C
  return m;
}

inline KernelModel gemm_model(const Options& o) {
  const GemmSizes s(o);
  // Every multiply-add of the dense GEMM counts, including the ones with Bw's zeros: that is the
  // work this formulation asks the GPU for. Bytes: A and Bw read once, C written once.
  return {"naive_gemm", 2.0 * s.c * (o.width * double(o.dim)),
          double(s.a + s.bw + s.c) * dtype_bytes(o.dtype)};
}

// [docs:ch01_pipeline]
template <class T>  // host storage type: float or Half
void run_pipeline(const FwdProblem& p, RunContext& ctx, HostArray& out) {
  using DevT = device_t<T>;
  const int64_t B = p.shape.batch, D = p.shape.dim, L = p.shape.seqlen;
  const int W = p.shape.width;
  const GemmSizes n(p.opt);
  PhaseRecorder& rec = ctx.rec;
  std::vector<T> xt, xp, a, bw, c;

  rec.host("transpose x to [B,L,D]", [&] {
    xt.resize(B * L * D);
    transpose_batched(static_cast<const T*>(p.x.data()), xt.data(), B, D, L);
  });
  rec.host("pad W-1 zeros", [&] {
    xp.resize(B * (L + W - 1) * D);
    pad_time(xt.data(), xp.data(), B, L, D, W);
  });
  rec.host("img2col into A", [&] {
    a.resize(n.a);
    img2col(xp.data(), a.data(), B, L, D, W);
  });
  rec.host("expand weights into Bw", [&] {
    bw.resize(n.bw);
    expand_weights(static_cast<const T*>(p.weight.data()), bw.data(), D, W);
  });

  DeviceBuffer d_a, d_bw, d_c;
  rec.alloc("cudaMalloc A", [&] { d_a = DeviceBuffer(n.a * sizeof(T)); });
  rec.alloc("cudaMalloc Bw", [&] { d_bw = DeviceBuffer(n.bw * sizeof(T)); });
  rec.alloc("cudaMalloc C", [&] { d_c = DeviceBuffer(n.c * sizeof(T)); });
  rec.h2d("copy A to device", [&] {
    GPU_CHECK(cudaMemcpy(d_a.get(), a.data(), n.a * sizeof(T), cudaMemcpyHostToDevice));
  });
  rec.h2d("copy Bw to device", [&] {
    GPU_CHECK(cudaMemcpy(d_bw.get(), bw.data(), n.bw * sizeof(T), cudaMemcpyHostToDevice));
  });
  if (ctx.poison_outputs) d_c.poison();  // verification runs only: an unwritten C element stays NaN

  for (int64_t b = 0; b < B; ++b)  // one launch per batch, as in the seed notes
    rec.kernel("naive_gemm", [&] {
      launch_naive_gemm(d_a.get<DevT>() + b * L * W * D, d_bw.get<DevT>(),
                        d_c.get<DevT>() + b * L * D, L, D, W * D);
    });

  // The host buffer is touched before the copy, so "copy C to host" measures the copy and not the
  // page faults of fresh memory (those land in this host step, where they belong).
  rec.host("host buffer for C", [&] { c.resize(n.c); });
  // Wait for the GEMMs outside any record: their time is in their own records already, and a copy
  // that started by waiting for them would count it a second time (as chapter 02 does it).
  GPU_CHECK(cudaDeviceSynchronize());
  rec.d2h("copy C to host", [&] {
    GPU_CHECK(cudaMemcpy(c.data(), d_c.get(), n.c * sizeof(T), cudaMemcpyDeviceToHost));
  });
  rec.free("cudaFree A, Bw, C", [&] {
    d_a.reset();
    d_bw.reset();
    d_c.reset();
  });
  rec.host("transpose C to [B,D,L]",
           [&] { transpose_batched(c.data(), static_cast<T*>(out.data()), B, L, D); });
}
// [/docs:ch01_pipeline]

inline FwdChapter chapter() {
  FwdChapter ch;
  ch.spec.number = "01";
  ch.spec.name = "host_img2col";
  ch.spec.title = "host transpose + pad + img2col, naive GPU GEMM, host transpose back";
  ch.spec.dtypes = {Dtype::fp32, Dtype::fp16};
  ch.memory = memory_need;
  ch.variants = [](const Options& o) {
    FwdVariant v;
    v.name = "naive";
    v.kernels = {gemm_model(o)};
    v.run = [](const FwdProblem& p, RunContext& ctx, HostArray& out) {
      dispatch_storage(p.opt.dtype,
                       [&](auto tag) { run_pipeline<typename decltype(tag)::type>(p, ctx, out); });
    };
    return std::vector<FwdVariant>{v};
  };
  return ch;
}

}  // namespace conv1d::ch01
