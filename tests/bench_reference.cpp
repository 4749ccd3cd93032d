// How long the fp64 reference takes at a shape: what a chapter spends before it can check a large
// run. Host only (no GPU needed); the GPU check runs it at the 2^31-element shape.
//
//   conv1d_bench_reference [--batch B] [--dim D] [--seqlen L] [--width W] [--layout channel-first|channel-last]
//                          [--threads N] [--backward] [--summary FILE]
//
// Prints the time of each step (random inputs in bf16, their conversion to fp64, the forward, and
// with --backward the backward with every gradient); --summary appends one tab-separated row.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/parallel.h"
#include "common/reference.h"
#include "common/runner.h"
#include "common/tensor.h"
#include "common/timing.h"

int main(int argc, char** argv) {
  using namespace conv1d;
  ConvShape s{1, 4096, 4096, 4};
  Layout layout = Layout::channel_first;
  bool backward = false;
  std::string summary;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "conv1d_bench_reference: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--help") {
      std::printf(
          "usage: conv1d_bench_reference [--batch B] [--dim D] [--seqlen L] [--width W]\n"
          "       [--layout channel-first|channel-last] [--threads N] [--backward] [--summary "
          "FILE]\n"
          "Times the fp64 CPU reference (inputs, forward, and with --backward the backward).\n");
      return 0;
    } else if (a == "--batch")
      s.batch = std::atoll(value().c_str());
    else if (a == "--dim")
      s.dim = std::atoll(value().c_str());
    else if (a == "--seqlen")
      s.seqlen = std::atoll(value().c_str());
    else if (a == "--width")
      s.width = std::atoi(value().c_str());
    else if (a == "--threads")
      set_host_threads(std::atoi(value().c_str()));
    else if (a == "--backward")
      backward = true;
    else if (a == "--summary")
      summary = value();
    else if (a == "--layout") {
      const std::string v = value();
      if (v != "channel-first" && v != "channel-last") {
        std::fprintf(stderr,
                     "conv1d_bench_reference: --layout must be channel-first or channel-last\n");
        return 2;
      }
      layout = v == "channel-first" ? Layout::channel_first : Layout::channel_last;
    } else {
      std::fprintf(stderr, "conv1d_bench_reference: unknown argument '%s' (see --help)\n",
                   a.c_str());
      return 2;
    }
  }
  if (s.batch < 1 || s.dim < 1 || s.seqlen < 1 || s.width < 1) {
    std::fprintf(stderr, "conv1d_bench_reference: sizes must be >= 1\n");
    return 2;
  }
  const int64_t n = s.elements();
  std::printf("fp64 reference: B=%lld D=%lld L=%lld W=%d (%lld elements), %s, %d host thread(s)\n",
              static_cast<long long>(s.batch), static_cast<long long>(s.dim),
              static_cast<long long>(s.seqlen), s.width, static_cast<long long>(n),
              layout_name(layout), host_threads());
  std::fflush(stdout);
  auto seconds = [](int64_t t0) { return (host_now_ns() - t0) * 1e-9; };

  int64_t t0 = host_now_ns();
  HostArray x(Dtype::bf16, n), w(Dtype::bf16, s.dim * s.width);
  fill_uniform(x, 1, -1.0, 1.0);
  fill_uniform(w, 2, -1.0, 1.0);
  const double t_draw = seconds(t0);
  t0 = host_now_ns();
  const std::vector<double> xd = x.to_double(), wd = w.to_double();
  const double t_convert = seconds(t0);
  std::printf("  random inputs %.2f s, to fp64 %.2f s\n", t_draw, t_convert);
  std::fflush(stdout);

  RefProblem p;
  p.shape = s;
  p.layout = layout;
  p.x = xd.data();
  p.weight = wd.data();
  std::vector<double> out(n);
  t0 = host_now_ns();
  reference_forward(p, out.data());
  const double t_fwd = seconds(t0);
  std::printf("  forward %.2f s\n", t_fwd);
  std::fflush(stdout);

  double t_bwd = 0;
  if (backward) {
    std::vector<double> dx(n), dw(s.dim * s.width), db(s.dim), dw2(s.dim * s.width), db2(s.dim);
    t0 = host_now_ns();
    // The forward's output as dout: any values do, and it saves drawing another tensor.
    reference_backward(p, out.data(),
                       RefGrads{dx.data(), dw.data(), db.data(), nullptr, dw2.data(), db2.data()});
    t_bwd = seconds(t0);
    std::printf("  backward (dx, dweight, dbias and their squared terms) %.2f s\n", t_bwd);
  }
  if (!summary.empty()) {
    char row[512];
    std::snprintf(row, sizeof row, "%lld\t%lld\t%lld\t%d\t%lld\t%s\t%d\t%.3f\t%.3f\t%.3f\t%s",
                  static_cast<long long>(s.batch), static_cast<long long>(s.dim),
                  static_cast<long long>(s.seqlen), s.width, static_cast<long long>(n),
                  layout_name(layout), host_threads(), t_draw + t_convert, t_fwd, t_bwd,
                  backward ? "yes" : "no");
    append_rows(summary,
                "batch\tdim\tseqlen\twidth\telements\tlayout\tthreads\tinputs_s\tforward_"
                "s\tbackward_s\tbackward_run",
                {row});
  }
  return 0;
}
