// Chapter 05: chapter 04's fused pipeline with the naive GEMM replaced by tensor-core GEMMs.
//
//   host transpose, upload, GPU preprocessing (chapter 03), GEMM + bias + SiLU epilogue, download,
//   host transpose back (chapters 02-04) -- only the GEMM changes, in four variants compared in one run:
//
//   sparse  wmma_gemm_sparse: W tensor-core steps per output tile, the zero tiles of Bw skipped
//   block   wmma_gemm_block: shared-memory block tiling, the whole dense GEMM
//   warp    wmma_gemm_warp: one warp per output tile, fragments from global memory
//   cublas  the vendor library on the same dense GEMM (then chapter 04's add_bias pass)
//
// fp16 only: the tensor cores multiply fp16 (or bf16) and accumulate in fp32.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "chapters/04_bias_epilogue/pipeline.cuh"
#include "chapters/05_wmma_gemm/blas_gemm.cuh"
#include "chapters/05_wmma_gemm/wmma_block.cuh"
#include "chapters/05_wmma_gemm/wmma_sparse.cuh"
#include "chapters/05_wmma_gemm/wmma_warp.cuh"

namespace conv1d::ch05 {

// The block tiles one run can choose from (--block-tile); the default was the fastest on an H200.
struct BlockTile {
  const char* name;
  void (*launch)(const GemmArgs&, cudaStream_t);
};
inline const std::vector<BlockTile>& block_tiles() {
  static const std::vector<BlockTile> tiles{
      {"128x128x64",
       [](const GemmArgs& g, cudaStream_t s) { launch_wmma_block<128, 128, 64, 64, 64, 3>(g, s); }},
      {"128x128x32",
       [](const GemmArgs& g, cudaStream_t s) { launch_wmma_block<128, 128, 32, 64, 32, 4>(g, s); }},
      {"64x64x32",
       [](const GemmArgs& g, cudaStream_t s) { launch_wmma_block<64, 64, 32, 32, 32, 2>(g, s); }},
  };
  return tiles;
}

inline GemmArgs gemm_args(const FwdProblem& p, ch02::DeviceBuffers& d, const DeviceBuffer& bias) {
  const int64_t B = p.shape.batch, D = p.shape.dim, L = p.shape.seqlen;
  return GemmArgs{d.a.get<__half>(),
                  d.bw.get<__half>(),
                  d.c.get<__half>(),
                  p.opt.bias ? bias.get<__half>() : nullptr,
                  p.opt.silu,
                  B * L,
                  D,
                  p.shape.width * D};
}

// Napkin counts. The dense kernels are charged the whole GEMM (chapter 04's fused model); the
// sparse one's model is in wmma_sparse.cuh.
inline KernelModel dense_model(const Options& o, const char* kernel) {
  KernelModel m = ch04::fused_gemm_model(o);
  m.kernel = kernel;
  return m;
}

inline FwdVariant variant(const std::string& name, const Options& o, const BlockTile& tile) {
  std::vector<KernelModel> kernels = ch02::kernel_models(o);
  if (name == "sparse") kernels.front() = sparse_model(o);
  if (name == "block") kernels.front() = dense_model(o, "wmma_gemm_block");
  if (name == "warp") kernels.front() = dense_model(o, "wmma_gemm_warp");
  if (name == "cublas") {
    kernels.front() = ch01::gemm_model(o);
    kernels.front().kernel = "cublas_gemm";
    if (o.bias || o.silu) kernels.push_back(ch04::add_bias_model(o));
  }
  // One library handle per variant, made before the timed runs (creating it is not part of the
  // work).
  std::shared_ptr<void> blas;
#if defined(CONV1D_HAVE_BLAS)
  if (name == "cublas") blas = std::make_shared<BlasHandle>();
#endif
  auto run = [name, tile, blas](const FwdProblem& p, RunContext& ctx, HostArray& out) {
    ch04::run_with_bias<Half>(p, ctx, out, [&](ch02::DeviceBuffers& d, const DeviceBuffer& bias) {
      ch03::launch_preprocessing<Half>(p, ctx, d);
      const GemmArgs g = gemm_args(p, d, bias);
      // [docs:ch05_launches]
      if (name == "sparse") {
        ctx.rec.kernel("wmma_gemm_sparse", [&] { launch_wmma_sparse(g, p.shape.width); });
      } else if (name == "block") {
        ctx.rec.kernel("wmma_gemm_block", [&] { tile.launch(g, 0); });
      } else if (name == "warp") {
        ctx.rec.kernel("wmma_gemm_warp", [&] { launch_wmma_warp(g); });
      } else {
#if defined(CONV1D_HAVE_BLAS)
        ctx.rec.kernel("cublas_gemm", [&] { blas_gemm(*static_cast<BlasHandle*>(blas.get()), g); });
        if (g.bias != nullptr || g.silu)  // the library's GEMM has no epilogue of ours
          ctx.rec.kernel("add_bias", [&] { launch_add_bias(g.c, g.bias, g.m, g.n, g.silu); });
#endif
      }
      // [/docs:ch05_launches]
    });
  };
  return FwdVariant{name, run, kernels};
}

inline std::vector<std::string> variant_names() {
  std::vector<std::string> v{"sparse", "block", "warp"};
#if defined(CONV1D_HAVE_BLAS)
  v.push_back("cublas");
#endif
  return v;
}

inline FwdChapter chapter() {
  FwdChapter ch;
  ch.spec = {"05", "wmma_gemm",
             "tensor-core GEMM with WMMA (warp, block tiling, zero tiles skipped) against the BLAS "
             "library"};
  ch.spec.dtypes = {Dtype::fp16};
  ch.spec.defaults.dtype = Dtype::fp16;
  ch.spec.bias = ch.spec.silu = true;
  ch.memory = ch04::memory_need;
  auto which = std::make_shared<std::string>("all");
  auto tile = std::make_shared<std::string>(block_tiles().front().name);
  std::vector<std::string> choices = variant_names();
  choices.insert(choices.begin(), "all");
  std::vector<std::string> tiles;
  for (const BlockTile& t : block_tiles()) tiles.push_back(t.name);
  ch.extra_flags.push_back(
      choice_flag("--variant", which.get(), choices,
                  "which GEMM to run: all (default; sparse is the headline) or one of them"));
  ch.extra_flags.push_back(
      choice_flag("--block-tile", tile.get(), tiles,
                  "block tile MxNxK of the block variant (default " + tiles.front() + ")"));
  ch.variants = [which, tile](const Options& o) {
    const BlockTile* t = &block_tiles().front();
    for (const BlockTile& b : block_tiles())
      if (*tile == b.name) t = &b;
    std::vector<FwdVariant> vs;
    for (const std::string& n : variant_names())
      if (*which == "all" || *which == n) vs.push_back(variant(n, o, *t));
    return vs;
  };
  return ch;
}

}  // namespace conv1d::ch05
