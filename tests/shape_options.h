// Tests: the Options of a problem shape in one call, and the shapes the direct chapters are tested at.
#pragma once

#include <cstdint>
#include <vector>

#include "common/cli.h"
#include "common/tensor.h"

namespace conv1d {

inline Options shape_options(int64_t b, int64_t d, int64_t l, int w, Dtype t, bool bias, bool silu,
                             uint64_t seed) {
  Options o;
  o.batch = b;
  o.dim = d;
  o.seqlen = l;
  o.width = w;
  o.dtype = t;
  o.bias = bias;
  o.silu = silu;
  o.seed = seed;
  return o;
}

// The shapes every direct kernel is tested at, chosen to hit every path: L < W, L shorter than a
// vector, L = `long_l` and 4095 (several chunks or tiles per row, the last one partial), D odd or a
// multiple of 8, a single channel; each in every dtype and width, with bias and SiLU varied.
// fn(Options) runs once for each.
template <class F>
void for_each_awkward_shape(uint64_t seed, int64_t long_l, F&& fn) {
  struct Shape {
    int64_t b, d, l;
  };
  const Shape shapes[] = {{1, 1, 1},       {2, 3, 2},     {1, 5, 7},   {3, 37, 101},
                          {2, 64, long_l}, {1, 24, 4095}, {2, 136, 65}};
  for (const Shape& sh : shapes)
    for (Dtype t : {Dtype::fp32, Dtype::fp16, Dtype::bf16})
      for (int w : {2, 3, 4}) {
        const bool bias = (seed % 2) == 0, silu = (seed % 3) != 1;
        fn(shape_options(sh.b, sh.d, sh.l, w, t, bias, silu, ++seed));
      }
}

// A random shape for trial number `trial`: B up to 3, D up to 90 (every fourth trial a multiple of
// 8 up to 160), L up to max_l, every dtype in turn, W, bias and SiLU drawn.
inline Options random_shape_options(Rng& rng, int trial, int64_t max_l) {
  return shape_options(rng.range(1, 3), trial % 4 == 0 ? 8 * rng.range(1, 20) : rng.range(1, 90),
                       rng.range(1, max_l), static_cast<int>(rng.range(2, 4)),
                       std::vector<Dtype>{Dtype::fp32, Dtype::fp16, Dtype::bf16}[trial % 3],
                       rng.range(0, 1) == 1, rng.range(0, 1) == 1, rng.next());
}

}  // namespace conv1d
