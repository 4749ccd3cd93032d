// Chapter 03: one launch per kernel for all batches instead of one per batch. The kernels do not
// change; only how they are launched:
//
//   preprocess_input   the batch on grid z (chapter 02's kernel already loops over blockIdx.z)
//   expand_weights     one launch already: the weights have no batch
//   naive_gemm         the batch folded into the rows: Bw is the same for every batch, so the B
//                      products [L, W*D] x [W*D, D] stack into one [B*L, W*D] x [W*D, D]
//
// Upload and download are chapter 02's.
#pragma once

#include "chapters/02_gpu_preprocess/pipeline.cuh"

namespace conv1d::ch03 {

// [docs:ch03_launches]
// The preprocessing, one launch per kernel (chapter 04 reuses this part alone).
template <class T>
void launch_preprocessing(const FwdProblem& p, RunContext& ctx, ch02::DeviceBuffers& d) {
  using DevT = device_t<T>;
  const int64_t B = p.shape.batch, D = p.shape.dim, L = p.shape.seqlen;
  const int W = p.shape.width;
  // Grid z takes the batch (striding beyond 65535, though --batch stops there).
  ctx.rec.kernel("preprocess_input",
                 [&] { launch_preprocess_input(d.xt.get<DevT>(), d.a.get<DevT>(), B, L, D, W); });
  ctx.rec.kernel("expand_weights",
                 [&] { launch_expand_weights(d.weight.get<DevT>(), d.bw.get<DevT>(), D, W); });
}

template <class T>
void launch_batched(const FwdProblem& p, RunContext& ctx, ch02::DeviceBuffers& d) {
  using DevT = device_t<T>;
  const int64_t B = p.shape.batch, D = p.shape.dim, L = p.shape.seqlen;
  const int W = p.shape.width;
  launch_preprocessing<T>(p, ctx, d);
  // M = B*L rows: the GEMM's grid-stride loop over rows covers any batch, no grid limit involved.
  ctx.rec.kernel("naive_gemm", [&] {
    launch_naive_gemm(d.a.get<DevT>(), d.bw.get<DevT>(), d.c.get<DevT>(), B * L, D, W * D);
  });
}
// [/docs:ch03_launches]

inline FwdChapter chapter() {
  FwdChapter ch;
  ch.spec = {"03", "batch_fusion", "as chapter 02, with one launch per kernel for all batches"};
  ch.memory = ch02::memory_need;
  ch.variants = [](const Options& o) {
    auto launch = [](auto tag, auto&&... args) {
      launch_batched<typename decltype(tag)::type>(args...);
    };
    // The same work as chapter 02, in 3 launches instead of 2B+1.
    return std::vector<FwdVariant>{
        ch02::pipeline_variant("batched", ch02::kernel_models(o), launch)};
  };
  return ch;
}

}  // namespace conv1d::ch03
