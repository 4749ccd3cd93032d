// Chapter 01 on the GPU: the naive GEMM against an fp64 GEMM, and the whole pipeline against the
// reference over random shapes, including odd ones (D and L not multiples of 16/32, L < W, B = 1).
#include <gtest/gtest.h>

#include <set>

#include "chapters/01_host_img2col/pipeline.cuh"
#include "common/verify.h"
#include "tests/gpu_test_util.h"

using namespace conv1d;

namespace {
// C = A x B on the device with the naive GEMM; C poisoned before, so unwritten elements stay NaN.
void device_gemm(const HostArray& a, const HostArray& b, HostArray& c, int64_t m, int64_t n,
                 int64_t k) {
  DeviceBuffer da(a.bytes()), db(b.bytes()), dc(c.bytes());
  GPU_CHECK(cudaMemcpy(da.get(), a.data(), a.bytes(), cudaMemcpyHostToDevice));
  GPU_CHECK(cudaMemcpy(db.get(), b.data(), b.bytes(), cudaMemcpyHostToDevice));
  dc.poison();
  launch_naive_gemm(da.get<float>(), db.get<float>(), dc.get<float>(), m, n, k);
  GPU_CHECK(cudaMemcpy(c.data(), dc.get(), c.bytes(), cudaMemcpyDeviceToHost));
}
}  // namespace

TEST(Ch01Gemm, NaiveGemmMatchesFp64) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  Rng rng(11);
  for (int trial = 0; trial < 8; ++trial) {
    const int64_t m = rng.range(1, 70), n = rng.range(1, 50), k = rng.range(1, 90);
    HostArray a(Dtype::fp32, m * k), b(Dtype::fp32, k * n), c(Dtype::fp32, m * n);
    fill_uniform(a, rng.next());
    fill_uniform(b, rng.next());
    std::vector<double> want(m * n, 0.0);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        for (int64_t l = 0; l < k; ++l) want[i * n + j] += a.get(i * k + l) * b.get(l * n + j);
    device_gemm(a, b, c, m, n, k);
    const VerifyReport r = verify("C", c, want, {1e-5, 1e-5}, {m, n});
    EXPECT_TRUE(r.ok()) << m << "x" << n << "x" << k << ": " << r.summary() << "\n" << r.details();
  }
}

TEST(Ch01Gemm, GridStrideCoversMoreRowsThanTheGrid) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  // 65535 * 16 + 37 rows: more than one pass of the grid-stride loop.
  const int64_t m = 65535 * 16 + 37, n = 1, k = 1;
  HostArray a(Dtype::fp32, m), b(Dtype::fp32, 1), c(Dtype::fp32, m);
  for (int64_t i = 0; i < m; ++i) a.set(i, static_cast<double>(i % 1000));
  b.set(0, 2.0);
  device_gemm(a, b, c, m, n, k);
  for (int64_t i = 0; i < m; ++i) ASSERT_EQ(c.get(i), 2.0 * (i % 1000)) << i;
}

TEST(Ch01Pipeline, MatchesReferenceOverRandomShapes) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  Rng rng(2024);
  const FwdChapter ch = ch01::chapter();
  for (int trial = 0; trial < 16; ++trial) {
    Options o;
    o.batch = trial == 0 ? 1 : rng.range(1, 4);
    o.dim = rng.range(1, 70);
    o.seqlen = trial == 1 ? 2 : rng.range(1, 140);  // trial 1: L < W
    o.width = static_cast<int>(rng.range(2, 4));
    o.dtype = trial % 2 ? Dtype::fp16 : Dtype::fp32;
    o.seed = rng.next();
    const FwdProblem p = make_forward_problem(o);
    HostArray out(o.dtype, p.x.size());
    out.fill_nan();
    PhaseRecorder rec;
    rec.begin_iteration(1);
    RunContext ctx{rec, true};
    ch.variants(o)[0].run(p, ctx, out);
    rec.end_iteration();
    const VerifyReport r =
        verify("out", out, p.ref, default_tolerance(o.dtype), {o.batch, o.dim, o.seqlen});
    EXPECT_TRUE(r.ok()) << "B=" << o.batch << " D=" << o.dim << " L=" << o.seqlen
                        << " W=" << o.width << " " << dtype_name(o.dtype) << ": " << r.summary()
                        << "\n"
                        << r.details();

    // The phase records name every step, with one GEMM launch per batch.
    int gemms = 0;
    std::set<std::string> names;
    for (const PhaseRecord& rr : rec.records()) {
      names.insert(rr.name);
      gemms += rr.category == Category::kernel;
      EXPECT_GE(rr.end_ns, rr.start_ns);
    }
    EXPECT_EQ(gemms, o.batch);
    for (const char* n :
         {"transpose x to [B,L,D]", "img2col into A", "cudaMalloc A", "copy A to device",
          "naive_gemm", "copy C to host", "cudaFree A, Bw, C", "transpose C to [B,D,L]"})
      EXPECT_TRUE(names.count(n)) << n;
  }
}
