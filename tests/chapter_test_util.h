// Helpers for the tests of chapters 02-04: random problem shapes with the odd cases the chapters
// must survive, one run of a chapter's variant with its phase records, and device round trips.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "chapters/02_gpu_preprocess/preprocess_kernels.cuh"
#include "common/buffers.h"
#include "common/device_types.cuh"
#include "common/preprocess.h"
#include "common/runner.h"
#include "common/verify.h"

namespace conv1d::testing {

// Trial `trial` of a sweep: B = 1 first, L < W second, then D and L that are multiples of nothing
// (and every third D a multiple of 8, so the 16-byte paths run too), every width, both dtypes.
inline Options random_options(Rng& rng, int trial) {
  Options o;
  o.batch = trial == 0 ? 1 : rng.range(1, 4);
  o.dim = trial % 3 == 2 ? 8 * rng.range(1, 12) : rng.range(1, 70);
  o.seqlen = trial == 1 ? 2 : rng.range(1, 140);
  o.width = static_cast<int>(trial == 1 ? 4 : rng.range(2, 4));
  o.dtype = trial % 2 ? Dtype::fp16 : Dtype::fp32;
  o.seed = rng.next();
  return o;
}

inline std::string describe(const Options& o) {
  return "B=" + std::to_string(o.batch) + " D=" + std::to_string(o.dim) +
         " L=" + std::to_string(o.seqlen) + " W=" + std::to_string(o.width) + " " +
         dtype_name(o.dtype) + (o.bias ? " bias" : "") + (o.silu ? " silu" : "");
}

struct VariantRun {
  HostArray out;
  std::vector<PhaseRecord> records;
};

// One verification-style run (outputs poisoned first) of `v` on `p`.
inline VariantRun run_once(const FwdVariant& v, const FwdProblem& p) {
  VariantRun r{HostArray(p.opt.dtype, p.x.size()), {}};
  r.out.fill_nan();
  PhaseRecorder rec;
  rec.begin_iteration(1);
  RunContext ctx{rec, true};
  v.run(p, ctx, r.out);
  rec.end_iteration();
  r.records = rec.records();
  return r;
}

inline VerifyReport verify_against(const VariantRun& r, const FwdProblem& p,
                                   const std::vector<double>& want) {
  return verify("out", r.out, want, default_tolerance(p.opt.dtype),
                {p.opt.batch, p.opt.dim, p.opt.seqlen});
}

// One run of `v`, expected to match the reference.
inline VariantRun run_verified(const FwdVariant& v, const FwdProblem& p) {
  VariantRun r = run_once(v, p);
  const VerifyReport rep = verify_against(r, p, p.ref);
  EXPECT_TRUE(rep.ok()) << v.name << " " << describe(p.opt) << ": " << rep.summary() << "\n"
                        << rep.details();
  return r;
}

// The chapter's one variant on `trials` random problems, each expected to match the reference; then
// check(options, run) for what else the caller wants to see (launch counts).
template <class F>
void sweep_chapter(const FwdChapter& ch, uint64_t seed, int trials, F&& check) {
  Rng rng(seed);
  for (int trial = 0; trial < trials; ++trial) {
    const Options o = random_options(rng, trial);
    const std::vector<FwdVariant> vs = ch.variants(o);
    ASSERT_EQ(vs.size(), 1u);
    check(o, run_verified(vs[0], make_forward_problem(o)));
  }
}

// Launches of one kernel in a run's records.
inline int launches(const VariantRun& r, const std::string& kernel) {
  int n = 0;
  for (const PhaseRecord& rec : r.records)
    n += rec.category == Category::kernel && rec.name == kernel;
  return n;
}
inline int launches(const VariantRun& r) {
  int n = 0;
  for (const PhaseRecord& rec : r.records) n += rec.category == Category::kernel;
  return n;
}

inline DeviceBuffer to_device(const void* host, size_t bytes) {
  DeviceBuffer d(bytes);
  GPU_CHECK(cudaMemcpy(d.get(), host, bytes, cudaMemcpyHostToDevice));
  return d;
}

template <class T>
std::vector<T> from_device(const void* device, size_t count) {
  std::vector<T> h(count);
  GPU_CHECK(cudaMemcpy(h.data(), device, count * sizeof(T), cudaMemcpyDeviceToHost));
  return h;
}

// Index of the first element whose bits differ, or -1: preprocessing must copy bits exactly.
template <class T>
int64_t first_difference(const std::vector<T>& got, const std::vector<T>& want) {
  if (got.size() != want.size()) return 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (std::memcmp(&got[i], &want[i], sizeof(T)) != 0) return static_cast<int64_t>(i);
  return -1;
}

// Random bit patterns (NaN payloads included): the preprocessing kernels must carry any bits.
template <class T>
std::vector<T> random_elements(Rng& rng, size_t n) {
  std::vector<T> v(n);
  for (T& e : v) {
    const uint64_t bits = rng.next();
    std::memcpy(&e, &bits, sizeof(T));
  }
  return v;
}

// What chapter 01 computes on the host: xt [B,L,D] -> A [B,L,W*D].
template <class T>
std::vector<T> host_img2col(const std::vector<T>& xt, int64_t B, int64_t L, int64_t D, int W) {
  std::vector<T> xp(B * (L + W - 1) * D), a(B * L * W * D);
  pad_time(xt.data(), xp.data(), B, L, D, W);
  img2col(xp.data(), a.data(), B, L, D, W);
  return a;
}

// preprocess_input on the GPU, either one launch per batch (chapter 02) or one for all (chapter
// 03). The device copies start `offset` elements into their buffers, so offset 1 makes them
// misaligned. Returns the bytes per access the launcher chose.
template <class T>
int gpu_img2col(const std::vector<T>& xt, int64_t B, int64_t L, int64_t D, int W, bool per_batch,
                int offset, std::vector<T>* a) {
  using DevT = device_t<T>;
  DeviceBuffer d_xt((xt.size() + offset) * sizeof(T)), d_a((B * L * W * D + offset) * sizeof(T));
  DevT* x = d_xt.get<DevT>() + offset;
  DevT* out = d_a.get<DevT>() + offset;
  GPU_CHECK(cudaMemcpy(x, xt.data(), xt.size() * sizeof(T), cudaMemcpyHostToDevice));
  d_a.poison();
  int bytes = 0;
  if (per_batch) {
    for (int64_t b = 0; b < B; ++b)
      bytes = launch_preprocess_input(x + b * L * D, out + b * L * W * D, 1, L, D, W);
  } else {
    bytes = launch_preprocess_input(x, out, B, L, D, W);
  }
  GPU_CHECK(cudaDeviceSynchronize());
  *a = from_device<T>(out, B * L * W * D);
  return bytes;
}

}  // namespace conv1d::testing
