// Chapter 05's tensor-core GEMMs against the fp64 reference, over random shapes including odd ones
// (D and L not multiples of 16, L < W, B = 1), every width, with and without bias/SiLU; the block
// and sparse variants also agree with the warp variant.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "chapters/05_wmma_gemm/blas_gemm.cuh"
#include "chapters/05_wmma_gemm/wmma_block.cuh"
#include "chapters/05_wmma_gemm/wmma_sparse.cuh"
#include "chapters/05_wmma_gemm/wmma_warp.cuh"
#include "common/buffers.h"
#include "common/preprocess.h"
#include "common/runner.h"
#include "common/verify.h"
#include "tests/gpu_test_util.h"

using namespace conv1d;

namespace {

struct Case {
  Options opt;
  FwdProblem p;
  std::vector<Half> a, bw;
};

Case make_case(Rng& rng, int64_t B, int64_t D, int64_t L, int W, bool bias, bool silu) {
  Case c;
  c.opt.batch = B;
  c.opt.dim = D;
  c.opt.seqlen = L;
  c.opt.width = W;
  c.opt.dtype = Dtype::fp16;
  c.opt.bias = bias;
  c.opt.silu = silu;
  c.opt.seed = rng.next();
  c.p = make_forward_problem(c.opt);
  std::vector<Half> xt(B * L * D), xp(B * (L + W - 1) * D);
  c.a.resize(B * L * W * D);
  c.bw.resize(W * D * D);
  transpose_batched(static_cast<const Half*>(c.p.x.data()), xt.data(), B, D, L);
  pad_time(xt.data(), xp.data(), B, L, D, W);
  img2col(xp.data(), c.a.data(), B, L, D, W);
  expand_weights(static_cast<const Half*>(c.p.weight.data()), c.bw.data(), D, W);
  return c;
}

// Runs `gemm` on the case and returns the output in [B, D, L], as the reference has it.
HostArray run(const Case& c, const std::function<void(const ch05::GemmArgs&)>& gemm) {
  const int64_t B = c.opt.batch, D = c.opt.dim, L = c.opt.seqlen;
  DeviceBuffer a(c.a.size() * 2), bw(c.bw.size() * 2), out(B * L * D * 2), bias(D * 2);
  GPU_CHECK(cudaMemcpy(a.get(), c.a.data(), a.bytes(), cudaMemcpyHostToDevice));
  GPU_CHECK(cudaMemcpy(bw.get(), c.bw.data(), bw.bytes(), cudaMemcpyHostToDevice));
  if (c.opt.bias)
    GPU_CHECK(cudaMemcpy(bias.get(), c.p.bias.data(), bias.bytes(), cudaMemcpyHostToDevice));
  out.poison();
  ch05::GemmArgs g{a.get<__half>(),
                   bw.get<__half>(),
                   out.get<__half>(),
                   c.opt.bias ? bias.get<__half>() : nullptr,
                   c.opt.silu,
                   B * L,
                   D,
                   c.opt.width * D};
  gemm(g);
  GPU_CHECK(cudaDeviceSynchronize());
  std::vector<Half> ct(B * L * D);
  GPU_CHECK(cudaMemcpy(ct.data(), out.get(), out.bytes(), cudaMemcpyDeviceToHost));
  HostArray res(Dtype::fp16, B * D * L);
  transpose_batched(ct.data(), static_cast<Half*>(res.data()), B, L, D);
  return res;
}

const std::vector<std::pair<std::string, std::function<void(const ch05::GemmArgs&, int)>>>&
variants() {
  static const std::vector<std::pair<std::string, std::function<void(const ch05::GemmArgs&, int)>>>
      v{
          {"warp", [](const ch05::GemmArgs& g, int) { ch05::launch_wmma_warp(g); }},
          {"block", [](const ch05::GemmArgs& g,
                       int) { ch05::launch_wmma_block<128, 128, 32, 64, 32, 3>(g); }},
          {"block_64x64x32_2stage",
           [](const ch05::GemmArgs& g, int) { ch05::launch_wmma_block<64, 64, 32, 32, 32, 2>(g); }},
          {"sparse", [](const ch05::GemmArgs& g, int w) { ch05::launch_wmma_sparse(g, w); }},
      };
  return v;
}

}  // namespace

TEST(Ch05Wmma, EveryVariantMatchesReferenceOnRandomShapes) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  Rng rng(505);
  struct Shape {
    int64_t B, D, L;
  };
  // Aligned, odd D (scalar staging), D % 8 == 0 but not % 16, L < W, B = 1, D < 16.
  const std::vector<Shape> shapes{{2, 64, 96}, {3, 37, 101}, {1, 24, 50}, {2, 48, 3},
                                  {1, 5, 2},   {4, 130, 70}, {1, 16, 1},  {2, 200, 33}};
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Shape& s = shapes[i];
    const int W = 2 + static_cast<int>(i % 3);
    const Case c = make_case(rng, s.B, s.D, s.L, W, i % 2 == 0, i % 3 == 0);
    HostArray warp_out;
    for (const auto& [name, gemm] : variants()) {
      const HostArray out = run(c, [&, &gemm = gemm](const ch05::GemmArgs& g) { gemm(g, W); });
      const VerifyReport r =
          verify("out", out, c.p.ref, default_tolerance(Dtype::fp16), {s.B, s.D, s.L});
      EXPECT_TRUE(r.ok()) << name << " B=" << s.B << " D=" << s.D << " L=" << s.L << " W=" << W
                          << ": " << r.summary() << "\n"
                          << r.details();
      if (name == "warp") {
        warp_out = out;
      } else {  // the same products in another order: within an fp16 rounding of the warp variant
        const VerifyReport agree =
            verify(name + " vs warp", out, warp_out.to_double(), {1e-3, 2e-3});
        EXPECT_TRUE(agree.ok()) << agree.summary() << "\n" << agree.details();
      }
    }
  }
}

TEST(Ch05Wmma, BlockKernelCoversMoreRowTilesThanTheGrid) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  // 65535 row tiles of 128 rows is the grid's limit; M just above it makes the grid-stride loop
  // run.
  Rng rng(7);
  const Case c = make_case(rng, 1, 8, 65535 * 128 + 100, 2, true, false);
  const HostArray out =
      run(c, [](const ch05::GemmArgs& g) { ch05::launch_wmma_block<128, 128, 32, 64, 32, 3>(g); });
  const VerifyReport r = verify("out", out, c.p.ref, default_tolerance(Dtype::fp16));
  EXPECT_TRUE(r.ok()) << r.summary() << "\n" << r.details();
}

#if defined(CONV1D_HAVE_BLAS)
TEST(Ch05Wmma, BlasGemmMatchesReferenceWithoutEpilogue) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  Rng rng(99);
  ch05::BlasHandle h;
  for (const auto& [B, D, L] :
       std::vector<std::tuple<int64_t, int64_t, int64_t>>{{2, 64, 96}, {3, 37, 101}}) {
    const Case c = make_case(rng, B, D, L, 4, false, false);
    const HostArray out = run(c, [&](const ch05::GemmArgs& g) { ch05::blas_gemm(h, g); });
    const VerifyReport r = verify("out", out, c.p.ref, default_tolerance(Dtype::fp16), {B, D, L});
    EXPECT_TRUE(r.ok()) << r.summary() << "\n" << r.details();
  }
}
#endif
