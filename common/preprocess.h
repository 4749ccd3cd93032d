// Host-side preprocessing of the GEMM formulation (chapter 01 runs it; later chapters' GPU kernels are
// tested against it bit for bit). All functions move values without arithmetic, so they are
// templates over the storage type (float, Half, BFloat16).
//
//   x [B,D,L] --transpose--> xt [B,L,D] --pad W-1 rows of zeros in front--> xp [B,L+W-1,D]
//   xp --img2col--> A [B,L,W*D] with A[b,t,k*D+c] = xp[b,t+k,c] = x[b,c,t-(W-1)+k]
//   weight [D,W] --expand--> Bw [W*D,D] with Bw[k*D+ci, co] = (ci == co) ? weight[ci,k] : 0
//   C[b] = A[b] x Bw is [L,D] time-first; transposing it back gives out [B,D,L].
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace conv1d {

// [B, R, C] -> [B, C, R]: used both ways (x to time-first, C back to channel-first). Each tile's
// bounds are computed once, so the innermost loop has one comparison and few live values and stays
// in registers wherever the compiler inlines it. (Tested twice per element, the bounds made GCC
// keep the running pointer on the stack where it inlined this into chapters 02 and 03, and their
// transposes took twice as long as chapter 01's: tests/bench_host_transpose.cpp measures it.)
template <class T>
void transpose_batched(const T* in, T* out, int64_t batch, int64_t rows, int64_t cols) {
  constexpr int64_t kTile = 32;  // tiles keep both sides cache friendly
  for (int64_t b = 0; b < batch; ++b) {
    const T* src = in + b * rows * cols;
    T* dst = out + b * rows * cols;
    for (int64_t r0 = 0; r0 < rows; r0 += kTile) {
      const int64_t r1 = std::min(r0 + kTile, rows);
      for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
        const int64_t c1 = std::min(c0 + kTile, cols);
        for (int64_t r = r0; r < r1; ++r)
          for (int64_t c = c0; c < c1; ++c) dst[c * rows + r] = src[r * cols + c];
      }
    }
  }
}

// xt [B,L,D] -> xp [B,L+W-1,D] with W-1 zero rows in front of each batch.
template <class T>
void pad_time(const T* xt, T* xp, int64_t batch, int64_t seqlen, int64_t dim, int width) {
  const int64_t pad = width - 1;
  for (int64_t b = 0; b < batch; ++b) {
    T* dst = xp + b * (seqlen + pad) * dim;
    std::memset(static_cast<void*>(dst), 0,
                sizeof(T) * pad * dim);  // all-zero bits is +0 in every format
    std::memcpy(static_cast<void*>(dst + pad * dim), xt + b * seqlen * dim,
                sizeof(T) * seqlen * dim);
  }
}

// xp [B,L+W-1,D] -> A [B,L,W*D]: row t of A is the W rows t..t+W-1 of xp laid side by side.
template <class T>
void img2col(const T* xp, T* a, int64_t batch, int64_t seqlen, int64_t dim, int width) {
  const int64_t padded = seqlen + width - 1;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < seqlen; ++t)
      for (int k = 0; k < width; ++k)
        std::memcpy(static_cast<void*>(a + ((b * seqlen + t) * width + k) * dim),
                    xp + (b * padded + t + k) * dim, sizeof(T) * dim);
}

// weight [D,W] -> Bw [W*D, D], block diagonal: block k is diag(weight[:,k]).
template <class T>
void expand_weights(const T* weight, T* bw, int64_t dim, int width) {
  std::memset(static_cast<void*>(bw), 0, sizeof(T) * width * dim * dim);
  for (int k = 0; k < width; ++k)
    for (int64_t c = 0; c < dim; ++c) bw[(k * dim + c) * dim + c] = weight[c * width + k];
}

}  // namespace conv1d
