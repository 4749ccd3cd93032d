// Chapter 04: the bias arrives (with the optional SiLU), in two ways that one run compares:
//
//   separate  chapter 03's launches, then the seed notes' add_bias pass over C (bias + SiLU)
//   fused     chapter 03's preprocessing, then naive_gemm_bias_silu: the same GEMM with the
//             epilogue applied before C is stored
//
// --epilogue separate|fused|both picks the variants (both by default; fused is the headline, since it
// is what the following chapters build on). Upload and download are chapter 02's; the bias buffer is
// the one addition.
#pragma once

#include <memory>
#include <string>

#include "chapters/03_batch_fusion/pipeline.cuh"
#include "chapters/04_bias_epilogue/add_bias.cuh"
#include "chapters/04_bias_epilogue/naive_gemm_bias_silu.cuh"

namespace conv1d::ch04 {

enum class Epilogue { separate, fused };

inline MemoryNeed memory_need(const Options& o) {
  MemoryNeed m = ch02::memory_need(o);
  m.device_bytes += o.dim * dtype_bytes(o.dtype);
  return m;
}

inline KernelModel add_bias_model(const Options& o) {
  // C read and written once more, plus the bias.
  const double c = double(o.batch) * o.seqlen * o.dim;
  return {"add_bias", epilogue_flops(o), (2 * c + (o.bias ? o.dim : 0)) * dtype_bytes(o.dtype)};
}

inline KernelModel fused_gemm_model(const Options& o) {
  KernelModel m =
      ch01::gemm_model(o);  // the same GEMM; the epilogue adds its arithmetic and the bias
  m.kernel = "naive_gemm_bias_silu";
  m.flops += epilogue_flops(o);
  m.bytes += (o.bias ? o.dim : 0) * double(dtype_bytes(o.dtype));
  return m;
}

// [docs:ch04_launches]
template <class T>
void launch_with_epilogue(const FwdProblem& p, RunContext& ctx, ch02::DeviceBuffers& d,
                          const DeviceBuffer& bias, Epilogue e) {
  using DevT = device_t<T>;
  const int64_t B = p.shape.batch, D = p.shape.dim, L = p.shape.seqlen;
  const int W = p.shape.width;
  const DevT* b = p.opt.bias ? bias.get<DevT>() : nullptr;
  const bool silu = p.opt.silu;
  if (e == Epilogue::separate) {
    ch03::launch_batched<T>(p, ctx, d);  // C stored as the GEMM left it ...
    if (b != nullptr || silu)            // ... then read, finished and written once more
      ctx.rec.kernel("add_bias", [&] { launch_add_bias(d.c.get<DevT>(), b, B * L, D, silu); });
  } else {
    ch03::launch_preprocessing<T>(p, ctx, d);
    ctx.rec.kernel("naive_gemm_bias_silu", [&] {
      launch_naive_gemm_bias_silu(d.a.get<DevT>(), d.bw.get<DevT>(), b, d.c.get<DevT>(), B * L, D,
                                  W * D, silu);
    });
  }
}
// [/docs:ch04_launches]

// Chapter 02's pipeline plus the bias buffer: `launches(d, bias)` enqueues the kernels. Chapter 05
// reuses it with its own GEMMs.
template <class T, class Launches>
void run_with_bias(const FwdProblem& p, RunContext& ctx, HostArray& out, Launches&& launches) {
  // Owned out here, so it is freed after the copy back: freeing it earlier would wait for the
  // kernels.
  DeviceBuffer bias;
  ch02::run_pipeline<T>(p, ctx, out, [&](ch02::DeviceBuffers& d) {
    if (p.opt.bias) {
      ctx.rec.alloc("cudaMalloc bias", [&] { bias = DeviceBuffer(p.bias.bytes()); });
      ctx.rec.h2d("copy bias to device", [&] {
        GPU_CHECK(cudaMemcpy(bias.get(), p.bias.data(), bias.bytes(), cudaMemcpyHostToDevice));
      });
    }
    launches(d, bias);
  });
  if (p.opt.bias) ctx.rec.free("cudaFree bias", [&] { bias.reset(); });
}

template <class T>
void run_pipeline(const FwdProblem& p, RunContext& ctx, HostArray& out, Epilogue e) {
  run_with_bias<T>(p, ctx, out, [&](ch02::DeviceBuffers& d, const DeviceBuffer& bias) {
    launch_with_epilogue<T>(p, ctx, d, bias, e);
  });
}

inline FwdVariant variant(Epilogue e, const Options& o) {
  std::vector<KernelModel> kernels = ch02::kernel_models(o);
  if (e == Epilogue::fused)
    kernels.front() = fused_gemm_model(o);
  else if (o.bias || o.silu)
    kernels.push_back(add_bias_model(o));
  auto run = [e](const FwdProblem& p, RunContext& ctx, HostArray& out) {
    dispatch_storage(p.opt.dtype,
                     [&](auto tag) { run_pipeline<typename decltype(tag)::type>(p, ctx, out, e); });
  };
  return FwdVariant{e == Epilogue::fused ? "fused" : "separate", run, kernels};
}

inline FwdChapter chapter() {
  FwdChapter ch;
  ch.spec = {"04", "bias_epilogue",
             "bias + SiLU: a separate add_bias pass over C, or fused into the GEMM epilogue"};
  ch.spec.bias = ch.spec.silu = true;
  ch.memory = memory_need;
  // The flag writes into a string that the variants function shares, so the two live as long as
  // `ch`.
  auto choice = std::make_shared<std::string>("both");
  ch.extra_flags.push_back(
      choice_flag("--epilogue", choice.get(), {"separate", "fused", "both"},
                  "separate (add_bias pass), fused (GEMM epilogue) or both (default)"));
  ch.variants = [choice](const Options& o) {
    std::vector<FwdVariant> vs;
    if (*choice != "separate") vs.push_back(variant(Epilogue::fused, o));
    if (*choice != "fused") vs.push_back(variant(Epilogue::separate, o));
    return vs;
  };
  return ch;
}

}  // namespace conv1d::ch04
