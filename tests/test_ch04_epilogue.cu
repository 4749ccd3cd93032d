// Chapter 04: the epilogue function against fp64, the add_bias pass against a host computation on
// both access paths, both pipelines (separate and fused) against the reference with every bias/SiLU
// combination, and the --epilogue flag.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "chapters/04_bias_epilogue/pipeline.cuh"
#include "tests/chapter_test_util.h"
#include "tests/gpu_test_util.h"

using namespace conv1d;
using namespace conv1d::testing;

namespace {

template <class T>
__global__ void epilogue_probe(const float* acc, const T* bias, float* out, int64_t n, int64_t dim,
                               bool silu) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = apply_bias_silu(acc[i], bias, i % dim, silu);
}

double silu_fp64(double z) { return z / (1.0 + std::exp(-z)); }

std::vector<std::string> variant_names(const FwdChapter& ch, const Options& o) {
  std::vector<std::string> names;
  for (const FwdVariant& v : ch.variants(o)) names.push_back(v.name);
  return names;
}

}  // namespace

TEST(Ch04Epilogue, ApplyBiasSiluMatchesFp64) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  const int64_t dim = 7;
  std::vector<float> acc;
  for (int i = -300; i <= 300; ++i) acc.push_back(i * 0.1f);
  for (float z : {-100.0f, -88.5f, -30.0f, 0.0f, 30.0f, 100.0f}) acc.push_back(z);
  HostArray bias(Dtype::fp16, dim);
  fill_uniform(bias, 9, -2.0, 2.0);
  const int64_t n = static_cast<int64_t>(acc.size());
  DeviceBuffer d_acc = to_device(acc.data(), n * sizeof(float)),
               d_bias = to_device(bias.data(), bias.bytes());
  DeviceBuffer d_out(n * sizeof(float));
  for (bool with_bias : {false, true})
    for (bool silu : {false, true}) {
      d_out.poison();
      epilogue_probe<<<unsigned((n + 127) / 128), 128>>>(d_acc.get<float>(),
                                                         with_bias ? d_bias.get<__half>() : nullptr,
                                                         d_out.get<float>(), n, dim, silu);
      GPU_CHECK_LAUNCH("epilogue_probe");
      const std::vector<float> got = from_device<float>(d_out.get(), n);
      for (int64_t i = 0; i < n; ++i) {
        const double z = acc[i] + (with_bias ? bias.get(i % dim) : 0.0);
        const double want = silu ? silu_fp64(z) : z;
        ASSERT_TRUE(std::isfinite(got[i])) << "acc " << acc[i];
        // fp32 arithmetic with the fast exp and division: a few ulp, with |z| up to 100.
        EXPECT_NEAR(got[i], want, 1e-6 + 1e-5 * std::fabs(want))
            << "acc " << acc[i] << " bias " << with_bias << " silu " << silu;
      }
    }
}

namespace {

// add_bias on C [rows, D] against the same arithmetic in fp64; returns the access width used.
template <class T>
int check_add_bias(Rng& rng, int64_t rows, int64_t dim, bool with_bias, bool silu, int offset) {
  using DevT = device_t<T>;
  const Dtype dt = sizeof(T) == 2 ? Dtype::fp16 : Dtype::fp32;
  HostArray c(dt, rows * dim), bias(dt, dim), got(dt, rows * dim);
  fill_uniform(c, rng.next(), -4.0, 4.0);
  fill_uniform(bias, rng.next(), -1.0, 1.0);
  DeviceBuffer d_c((c.size() + offset) * sizeof(T)), d_bias((dim + offset) * sizeof(T));
  DevT* cp = d_c.get<DevT>() + offset;
  DevT* bp = d_bias.get<DevT>() + offset;
  GPU_CHECK(cudaMemcpy(cp, c.data(), c.bytes(), cudaMemcpyHostToDevice));
  GPU_CHECK(cudaMemcpy(bp, bias.data(), bias.bytes(), cudaMemcpyHostToDevice));
  const int bytes = launch_add_bias(cp, with_bias ? bp : nullptr, rows, dim, silu);
  GPU_CHECK(cudaMemcpy(got.data(), cp, got.bytes(), cudaMemcpyDeviceToHost));
  std::vector<double> want(c.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t ch = 0; ch < dim; ++ch) {
      const double z = c.get(r * dim + ch) + (with_bias ? bias.get(ch) : 0.0);
      want[r * dim + ch] = silu ? silu_fp64(z) : z;
    }
  const VerifyReport rep = verify("C", got, want, default_tolerance(dt), {rows, dim});
  EXPECT_TRUE(rep.ok()) << "rows=" << rows << " D=" << dim << " bias " << with_bias << " silu "
                        << silu << " offset " << offset << " " << dtype_name(dt) << ": "
                        << rep.summary() << "\n"
                        << rep.details();
  return bytes;
}

}  // namespace

TEST(Ch04AddBias, MatchesFp64OnBothPaths) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  Rng rng(404);
  std::set<int> paths;
  for (int trial = 0; trial < 24; ++trial) {
    const int64_t rows = rng.range(1, 300);
    const int64_t dim = trial % 3 == 2 ? 8 * rng.range(1, 20) : rng.range(1, 150);
    const bool with_bias = trial % 4 != 3,
               silu = trial % 4 >= 2;  // bias, bias, bias+silu, silu alone
    const int offset = trial % 5 == 4 ? 1 : 0;
    const int bytes = trial % 2 ? check_add_bias<Half>(rng, rows, dim, with_bias, silu, offset)
                                : check_add_bias<float>(rng, rows, dim, with_bias, silu, offset);
    paths.insert(bytes == 16 ? 16 : 1);
  }
  EXPECT_EQ(paths, (std::set<int>{1, 16}));
  EXPECT_EQ(check_add_bias<float>(rng, 70000, 4, true, true, 0),
            16);  // rows beyond grid y (4 words a row)
  EXPECT_EQ(check_add_bias<Half>(rng, 3, 16, true, false, 1), 2);  // misaligned
}

TEST(Ch04Pipeline, BothEpiloguesMatchReference) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  Rng rng(405);
  const FwdChapter ch = ch04::chapter();
  for (int trial = 0; trial < 16; ++trial) {
    Options o = random_options(rng, trial);
    o.bias = trial % 4 != 3;
    o.silu = trial % 4 >= 2;
    const FwdProblem p = make_forward_problem(o);
    const std::vector<FwdVariant> vs = ch.variants(o);
    ASSERT_EQ(vs.size(), 2u);
    for (const FwdVariant& v : vs) {
      const VariantRun r = run_verified(v, p);
      if (v.name == "fused") {
        EXPECT_EQ(launches(r, "naive_gemm_bias_silu"), 1);
        EXPECT_EQ(launches(r), 3) << describe(o);
      } else {
        EXPECT_EQ(launches(r, "naive_gemm"), 1);
        EXPECT_EQ(launches(r, "add_bias"), 1);
        EXPECT_EQ(launches(r), 4) << describe(o);
      }
    }
  }
}

TEST(Ch04Pipeline, WithoutBiasOrSiluTheSeparatePassIsSkipped) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  Rng rng(406);
  const Options o = random_options(rng, 3);
  const FwdProblem p = make_forward_problem(o);
  for (const FwdVariant& v : ch04::chapter().variants(o)) {
    const VariantRun r = run_verified(v, p);
    EXPECT_EQ(launches(r), 3) << v.name;
    EXPECT_EQ(launches(r, "add_bias"), 0) << v.name;
  }
}

TEST(Ch04Pipeline, BiasAndSiluReallyChangeTheResult) {
  CONV1D_REQUIRE_GPU_OR_SKIP();
  // The check must be able to fail: a run with bias (or SiLU) compared with the reference without
  // it.
  Options plain;
  plain.batch = 2;
  plain.dim = 24;
  plain.seqlen = 50;
  plain.width = 3;
  const std::vector<double> plain_ref =
      make_forward_problem(plain).ref;  // same x and weight (same seed)
  for (int which = 0; which < 2; ++which) {
    Options o = plain;
    (which == 0 ? o.bias : o.silu) = true;
    const FwdProblem p = make_forward_problem(o);
    for (const FwdVariant& v : ch04::chapter().variants(o)) {
      const VariantRun r = run_verified(v, p);
      EXPECT_FALSE(verify_against(r, p, plain_ref).ok())
          << v.name << (which == 0 ? ": bias" : ": silu") << " ignored";
    }
  }
}

TEST(Ch04Chapter, EpilogueFlagPicksTheVariants) {
  struct Case {
    std::vector<const char*> args;
    std::vector<std::string> names;
  };
  for (const Case& c :
       {Case{{}, {"fused", "separate"}}, Case{{"--epilogue", "both"}, {"fused", "separate"}},
        Case{{"--epilogue", "fused"}, {"fused"}}, Case{{"--epilogue=separate"}, {"separate"}}}) {
    const FwdChapter ch = ch04::chapter();
    std::vector<const char*> argv{"ch04", "--bias", "--silu"};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    Options o;
    const ParseResult r =
        parse_command_line(static_cast<int>(argv.size()), argv.data(), ch.spec, &o, ch.extra_flags);
    ASSERT_EQ(r.status, ParseStatus::ok) << r.message;
    EXPECT_TRUE(o.bias && o.silu);
    EXPECT_EQ(variant_names(ch, o), c.names);
  }
  const FwdChapter ch = ch04::chapter();
  const char* bad[] = {"ch04", "--epilogue", "later"};
  Options o;
  const ParseResult r = parse_command_line(3, bad, ch.spec, &o, ch.extra_flags);
  EXPECT_EQ(r.status, ParseStatus::error);
  EXPECT_NE(r.message.find("--epilogue must be one of separate, fused, both"), std::string::npos)
      << r.message;
}
