// How often a warp of chapter 08's staged kernel holds both a full vector and a masked one, in
// chapter 10's rows benchmark packing (8 x 4096, seed 1234 + 4 as the chapter draws it): vectors of
// 8 positions, a warp's 32 lanes on 32 consecutive vectors of a row (256 positions). Host only;
// results/cf-staged-one-path/collect.sh builds it (with packing.cpp and the common library).
#include <cstdio>
#include <vector>
#include "chapters/10_packed_sequences/packing.h"
using namespace conv1d::ch10;
int main(int argc, char** argv) {
  const long B = 8, L = 4096, W = 4, P = 8;
  const char* spec = argc > 1 ? argv[1] : "random:8";
  std::vector<int32_t> s;
  std::string e = make_seq_idx(spec, B, L, 1234 + 4, &s);
  if (!e.empty()) {
    printf("%s\n", e.c_str());
    return 1;
  }
  long full = 0, pad = 0, mixed = 0, warps = 0, div = 0, allmasked = 0;
  for (long b = 0; b < B; ++b) {
    const int32_t* id = &s[b * L];
    for (long w0 = 0; w0 < L; w0 += 32 * P) {
      int nf = 0, nm = 0;
      for (long v = w0; v < w0 + 32 * P; v += P) {
        bool isfull = true, ispad = true;
        for (long t = v; t < v + P; ++t) {
          if (id[t] >= 0) ispad = false;
          for (long k = 0; k < W; ++k) {
            long src = t - (W - 1) + k;
            // the row's state counts for the first sequence's first outputs (--initial-states)
            bool counts = id[t] >= 0 && (src < 0 ? id[t] == id[0] : id[src] == id[t]);
            if (!counts) isfull = false;
          }
        }
        if (isfull)
          ++full, ++nf;
        else {
          ++nm;
          if (ispad)
            ++pad;
          else
            ++mixed;
        }
      }
      ++warps;
      if (nf > 0 && nm > 0) ++div;
      if (nf == 0) ++allmasked;
    }
  }
  long vec = B * L / P;
  // One tab-separated line: seq_lens, vectors, full %, padding %, mixed %, warp-steps, both %.
  printf("%s\t%ld\t%.1f\t%.1f\t%.1f\t%ld\t%.1f\n", spec, vec, 100.0 * full / vec, 100.0 * pad / vec,
         100.0 * mixed / vec, warps, 100.0 * div / warps);
  (void)allmasked;
}
