// The host-side loops on several threads (common/parallel.h): every index exactly once, errors
// passed on, and results that are the same bits whatever the number of threads: the fp64 reference
// (forward and backward with every option, both layouts), the random inputs and the verification.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "common/parallel.h"
#include "common/reference.h"
#include "common/tensor.h"
#include "common/verify.h"

namespace {

using namespace conv1d;

const int kThreadCounts[] = {1, 2, 7};

// Restores the default thread count when a test ends, whatever it set.
struct ThreadsGuard {
  ~ThreadsGuard() { set_host_threads(0); }
};

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

std::vector<double> random_values(uint64_t seed, int64_t n) {
  Rng r(seed);
  std::vector<double> v(static_cast<size_t>(n));
  for (double& e : v) e = r.uniform(-1.0, 1.0);
  return v;
}

TEST(ParallelFor, EveryIndexOnceAndErrorsPassedOn) {
  ThreadsGuard guard;
  for (int threads : kThreadCounts) {
    set_host_threads(threads);
    std::vector<std::atomic<int>> seen(1001);
    parallel_for(1001, [&](int64_t i) { ++seen[i]; });
    for (size_t i = 0; i < seen.size(); ++i)
      ASSERT_EQ(seen[i].load(), 1) << "index " << i << ", threads " << threads;

    std::atomic<int> ran{0};
    EXPECT_THROW(parallel_for(50,
                              [&](int64_t i) {
                                ++ran;
                                if (i == 17) throw std::runtime_error("item 17");
                              }),
                 std::runtime_error);
    EXPECT_EQ(ran.load(), 50) << "the other items still run";

    std::vector<int> blocks(10, 0);
    parallel_for_blocks(
        10,
        [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) ++blocks[i];
        },
        3);
    for (int v : blocks) EXPECT_EQ(v, 1);
  }
  parallel_for(0, [](int64_t) { FAIL() << "no items"; });
}

TEST(ParallelFor, ThreadsCanBeSet) {
  ThreadsGuard guard;
  set_host_threads(2);
  EXPECT_EQ(host_threads(), host_parallel_available() ? 2 : 1);
  set_host_threads(0);
  EXPECT_GE(host_threads(), 1);
}

// The reference at one thread count, all outputs. Width 3 and 4, D not a multiple of the channel
// group (8), both layouts, bias, SiLU, initial states; seq_idx in a second problem.
struct RefRun {
  std::vector<double> out, final_states, dx, dweight, dbias, dinit, dweight_sq, dbias_sq;
};

RefRun run_reference(const RefProblem& p, const std::vector<double>& dout) {
  const ConvShape& s = p.shape;
  RefRun r;
  const size_t n = static_cast<size_t>(s.elements()),
               states = static_cast<size_t>(s.batch * s.dim * (s.width - 1));
  r.out.assign(n, NAN);
  r.final_states.assign(states, NAN);
  reference_forward(p, r.out.data(), r.final_states.data());
  r.dx.assign(n, NAN);
  r.dweight.assign(s.dim * s.width, NAN);
  r.dbias.assign(s.dim, NAN);
  r.dinit.assign(states, NAN);
  r.dweight_sq.assign(s.dim * s.width, NAN);
  r.dbias_sq.assign(s.dim, NAN);
  reference_backward(p, dout.data(),
                     RefGrads{r.dx.data(), r.dweight.data(), r.dbias.data(), r.dinit.data(),
                              r.dweight_sq.data(), r.dbias_sq.data()});
  return r;
}

void expect_same_bits(const RefRun& a, const RefRun& b, int threads) {
  EXPECT_TRUE(same_bits(a.out, b.out)) << "out, threads " << threads;
  EXPECT_TRUE(same_bits(a.final_states, b.final_states)) << "final states, threads " << threads;
  EXPECT_TRUE(same_bits(a.dx, b.dx)) << "dx, threads " << threads;
  EXPECT_TRUE(same_bits(a.dweight, b.dweight)) << "dweight, threads " << threads;
  EXPECT_TRUE(same_bits(a.dbias, b.dbias)) << "dbias, threads " << threads;
  EXPECT_TRUE(same_bits(a.dinit, b.dinit)) << "dinitial_states, threads " << threads;
  EXPECT_TRUE(same_bits(a.dweight_sq, b.dweight_sq)) << "dweight_sq, threads " << threads;
  EXPECT_TRUE(same_bits(a.dbias_sq, b.dbias_sq)) << "dbias_sq, threads " << threads;
}

TEST(ParallelReference, SameBitsForAnyThreadCount) {
  ThreadsGuard guard;
  for (Layout layout : {Layout::channel_first, Layout::channel_last})
    for (int width : {3, 4})
      for (bool seq : {false, true}) {
        const ConvShape s{3, 21, 257, width};
        const std::vector<double> x = random_values(1, s.elements()),
                                  w = random_values(2, s.dim * width),
                                  bias = random_values(3, s.dim),
                                  dout = random_values(4, s.elements()),
                                  init = random_values(5, s.batch * s.dim * (width - 1));
        std::vector<int32_t> seq_idx(s.batch * s.seqlen);
        for (int64_t i = 0; i < static_cast<int64_t>(seq_idx.size()); ++i)
          seq_idx[i] = (i % s.seqlen) % 50 == 49 ? -1 : static_cast<int32_t>((i % s.seqlen) / 37);
        RefProblem p;
        p.shape = s;
        p.layout = layout;
        p.x = x.data();
        p.weight = w.data();
        p.bias = bias.data();
        p.silu = true;
        if (seq)
          p.seq_idx = seq_idx.data();
        else
          p.initial_states = init.data();

        set_host_threads(1);
        const RefRun one = run_reference(p, dout);
        for (int threads : {2, 7}) {
          set_host_threads(threads);
          SCOPED_TRACE(std::string(layout_name(layout)) + " W=" + std::to_string(width) +
                       (seq ? " seq_idx" : " init"));
          expect_same_bits(one, run_reference(p, dout), threads);
        }
      }
}

// dweight_sq and dbias_sq: the sums of the squared terms, written out directly here.
TEST(ParallelReference, SquaredTermsOfTheSums) {
  const ConvShape s{2, 3, 9, 3};
  const std::vector<double> x = random_values(7, s.elements()),
                            w = random_values(8, s.dim * s.width),
                            dout = random_values(9, s.elements());
  RefProblem p;
  p.shape = s;
  p.x = x.data();
  p.weight = w.data();
  const RefRun r = run_reference(p, dout);
  for (int64_t d = 0; d < s.dim; ++d) {
    double db2 = 0;
    std::vector<double> dw2(s.width, 0.0);
    for (int64_t b = 0; b < s.batch; ++b)
      for (int64_t t = 0; t < s.seqlen; ++t) {
        const double dz = dout[(b * s.dim + d) * s.seqlen + t];  // no SiLU: dz = dout
        db2 += dz * dz;
        for (int k = 0; k < s.width; ++k) {
          const int64_t src = t - (s.width - 1) + k;
          const double term = src >= 0 ? dz * x[(b * s.dim + d) * s.seqlen + src] : 0.0;
          dw2[k] += term * term;
        }
      }
    EXPECT_NEAR(r.dbias_sq[d], db2, 1e-12 * db2) << "channel " << d;
    for (int k = 0; k < s.width; ++k)
      EXPECT_NEAR(r.dweight_sq[d * s.width + k], dw2[k], 1e-12 * dw2[k]);
  }
}

TEST(ParallelInputs, FillIsTheSerialSequenceForAnyThreadCount) {
  ThreadsGuard guard;
  const size_t n = 3 * (size_t(1) << 16) + 123;  // several blocks and a short last one
  HostArray serial(Dtype::bf16, n);
  Rng r(42);
  for (size_t i = 0; i < n; ++i) serial.set(i, r.uniform(-1.0, 1.0));
  for (int threads : kThreadCounts) {
    set_host_threads(threads);
    HostArray a(Dtype::bf16, n);
    fill_uniform(a, 42, -1.0, 1.0);
    EXPECT_EQ(std::memcmp(a.data(), serial.data(), a.bytes()), 0) << "threads " << threads;
    const std::vector<double> d = a.to_double();
    for (size_t i = 0; i < n; i += 4099) ASSERT_EQ(d[i], serial.get(i));
  }
}

TEST(ParallelInputs, SkipEqualsThatManyDraws) {
  Rng a(5), b(5);
  for (int i = 0; i < 1000; ++i) a.next();
  b.skip(1000);
  EXPECT_EQ(a.next(), b.next());
}

TEST(ParallelVerify, SameReportForAnyThreadCount) {
  ThreadsGuard guard;
  const size_t n = 5 * (size_t(1) << 16) + 7;
  std::vector<double> want = random_values(11, static_cast<int64_t>(n)), got = want;
  // Mismatches spread over the blocks, a NaN among them; the report lists the first in index order.
  for (size_t i : {size_t(3), size_t(70000), size_t(70001), size_t(200000), size_t(n - 1)})
    got[i] += 1.0;
  got[150000] = NAN;
  VerifyReport base;
  for (int threads : kThreadCounts) {
    set_host_threads(threads);
    const VerifyReport r = verify("out", got, want, Tolerance{1e-6, 0.0}, {}, 4);
    EXPECT_EQ(r.bad, 6u);
    EXPECT_EQ(r.non_finite, 1u);
    ASSERT_EQ(r.first_bad.size(), 4u);
    EXPECT_EQ(r.first_bad[0].index, 3u);
    EXPECT_EQ(r.first_bad[1].index, 70000u);
    EXPECT_EQ(r.first_bad[2].index, 70001u);
    EXPECT_EQ(r.first_bad[3].index, 150000u);
    if (threads == 1) base = r;
    EXPECT_EQ(r.max_abs, base.max_abs);
    EXPECT_EQ(r.max_rel, base.max_rel);
  }
}

}  // namespace
