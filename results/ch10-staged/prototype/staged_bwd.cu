// Prototype (not part of the project): the channel-first backward (dx, and per-tile partial sums of
// dweight and dbias) with x and dout staged in shared memory by bulk copies, several stages deep,
// in a persistent grid. Plain rows; packed rows (seq_idx, initial states, dfinal_states) with a
// full pass (every lane the same code) and a pass over the tile's mixed vectors, one position a
// thread, in an order fixed by a scan (so that the sums are the same bits every run).
#include <cmath>
#include <random>

#include "bulk.cuh"

__device__ __forceinline__ void cp16(void* smem, const void* g) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_addr(smem)), "l"(g));
}
__device__ __forceinline__ float dsilu(float z, float g) {
  const float s = 1.0f / (1.0f + __expf(-z));
  return g * s * (1.0f + z * (1.0f - s));
}

struct Packing {
  const uint8_t* flags;  // [B, L] (+16): bits 0-3 the taps that count (state taps included),
                         // bits 4-5 1 + j when dx there receives dfinal_states[j]
  const uint8_t* kind;   // [B, L/8]: 0 full, 1 padding, 2 mixed (nullptr: plain)
  const bf16* init;      // [rows, 3] or nullptr
  const bf16* dfinal;    // [rows, 3] or nullptr
  float* dinit;          // [rows, 3]
};

template <int TILE, int STAGES, int THREADS, bool SILU, bool LIST = false, bool KSTAGE = false,
          bool ASYNC = false>
__global__ void __launch_bounds__(THREADS)
    staged_bwd(const bf16* __restrict__ x, const bf16* __restrict__ dout,
               const bf16* __restrict__ weight, bf16* __restrict__ dx, float* __restrict__ partial,
               uint32_t rows, uint32_t D, uint32_t L, Packing pk) {
  constexpr int kX = 128 + TILE * 2 + 16;    // x: 112 unused, 16 before, the tile, 16 after
  constexpr int kG = TILE * 2 + 16;          // dout: the tile, 16 after
  constexpr int kK = KSTAGE ? TILE / 8 : 0;  // the tile's kinds
  constexpr int kStage = (kX + kG + kK + 127) / 128 * 128;
  constexpr int kVecsPerTile = TILE / 8, kPer = kVecsPerTile / THREADS, kWarps = THREADS / 32;
  static_assert(kVecsPerTile % THREADS == 0, "whole vectors a thread");
  extern __shared__ __align__(128) unsigned char smem[];
  __shared__ uint64_t full[STAGES];
  __shared__ float red[kWarps][W + 1];
  const uint32_t per_row = L / TILE, tiles = rows * per_row;
  const uint32_t first = blockIdx.x, step = gridDim.x;
  const uint32_t mine = first < tiles ? (tiles - first + step - 1) / step : 0;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  auto issue_async = [&](uint32_t i) {
    if (i < mine) {
      const uint32_t tile = first + i * step;
      const uint32_t row = tile / per_row, chunk = tile - row * per_row;
      unsigned char* st = smem + (i % STAGES) * kStage;
      const int64_t at = int64_t(row) * L + chunk * TILE;
#pragma unroll
      for (int j = 0; j < kPer; ++j) {
        const int v = threadIdx.x + j * THREADS;
        cp16(st + 128 + 16 * v, x + at + 8 * v);
        cp16(st + kX + 16 * v, dout + at + 8 * v);
      }
      if (threadIdx.x == 0 && chunk > 0) cp16(st + 112, x + at - 8);
      if (threadIdx.x == 1 && chunk < per_row - 1) {
        cp16(st + 128 + TILE * 2, x + at + TILE);
        cp16(st + kX + TILE * 2, dout + at + TILE);
      }
    }
    asm volatile("cp.async.commit_group;\n" ::);
  };
  auto issue = [&](uint32_t i) {
    const uint32_t tile = first + i * step;
    const uint32_t row = tile / per_row, chunk = tile - row * per_row;
    unsigned char* st = smem + (i % STAGES) * kStage;
    const int64_t at = int64_t(row) * L + chunk * TILE;
    const uint32_t before = chunk > 0 ? 16 : 0, after = chunk < per_row - 1 ? 16 : 0;
    uint64_t* bar = &full[i % STAGES];
    const bool kinds = KSTAGE && pk.kind;
    bar_expect(bar, TILE * 4 + before + 2 * after + (kinds ? kK : 0));
    bulk_copy(st + 128 - before, x + at - before / 2, TILE * 2 + before + after, bar);
    bulk_copy(st + kX, dout + at, TILE * 2 + after, bar);
    if (kinds) {
      const uint32_t b = row / D;
      bulk_copy(st + kX + kG, pk.kind + size_t(b) * (L / 8) + chunk * (TILE / 8), kK, bar);
    }
  };
  if (ASYNC) {
    for (int s = 0; s < STAGES - 1; ++s) issue_async(s);
  } else if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) bar_init(&full[s], 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    for (uint32_t i = 0; i < STAGES && i < mine; ++i) issue(i);
  }
  __syncthreads();
  for (uint32_t i = 0; i < mine; ++i) {
    const uint32_t tile = first + i * step;
    const uint32_t row = tile / per_row, chunk = tile - row * per_row;
    const uint32_t b = row / D, d = row - b * D, t_tile = chunk * TILE;
    const bool last_chunk = chunk == per_row - 1;
    float w[W];
    {
      const uint2 wv = *reinterpret_cast<const uint2*>(weight + d * W);
      w[0] = lo(wv.x), w[1] = hi(wv.x), w[2] = lo(wv.y), w[3] = hi(wv.y);
    }
    // Early, before the tile arrives: each vector's kind and, for a mixed one, its flags (the
    // vector's 8 positions and the 3 after) and the states it needs.
    uint8_t kind[kPer];
    unsigned bal[kPer];
    int n_mixed = 0;
    const unsigned char* st = smem + (i % STAGES) * kStage;
    if (KSTAGE) bar_wait(&full[i % STAGES], (i / STAGES) & 1u);
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      const uint32_t v = threadIdx.x + j * THREADS;
      if (KSTAGE)
        kind[j] = pk.kind ? st[kX + kG + v] : 0;
      else
        kind[j] = pk.kind ? pk.kind[b * (L / 8) + t_tile / 8 + v] : 0;
      bal[j] = LIST ? __ballot_sync(0xFFFFFFFFu, kind[j] == 2) : 0u;
      n_mixed += __popc(bal[j]);
    }
    // Which vector the e-th mixed one of this warp is.
    auto entry = [&](int e) {
      int j = 0;
#pragma unroll
      for (int q = 0; q < kPer - 1; ++q)
        if (e >= __popc(bal[q]))
          e -= __popc(bal[q]), j = q + 1;
        else
          break;
      unsigned m = bal[0];
#pragma unroll
      for (int q = 1; q < kPer; ++q) m = j == q ? bal[q] : m;
      return uint32_t(__fns(m, 0, e + 1)) + warp * 32 + j * THREADS;
    };
    auto load_flags = [&](uint32_t v, uint32_t* f3) {
      const uint8_t* f = pk.flags + size_t(b) * L + t_tile + 8 * v;
      const uint2 two = *reinterpret_cast<const uint2*>(f);
      f3[0] = two.x, f3[1] = two.y, f3[2] = 0;
      if (t_tile + 8 * v + 8 < L) f3[2] = *reinterpret_cast<const uint32_t*>(f + 8);
    };
    uint32_t fl[kPer][3];
    if constexpr (!LIST) {
#pragma unroll
      for (int j = 0; j < kPer; ++j) {
        fl[j][0] = fl[j][1] = fl[j][2] = 0;
        if (kind[j] == 2) load_flags(threadIdx.x + j * THREADS, fl[j]);
      }
    } else {
      fl[0][0] = fl[0][1] = fl[0][2] = 0;
      if (lane < n_mixed) load_flags(entry(lane), fl[0]);
    }
    float st_init[W - 1] = {}, st_dfin[W - 1] = {};
    if (pk.init && t_tile == 0)
#pragma unroll
      for (int q = 0; q < W - 1; ++q) st_init[q] = __bfloat162float(pk.init[row * 3 + q]);
    if (pk.dfinal && last_chunk)
#pragma unroll
      for (int q = 0; q < W - 1; ++q) st_dfin[q] = __bfloat162float(pk.dfinal[row * 3 + q]);

    const unsigned char* xs = st + 128;  // x at tile position 0
    const unsigned char* gs = st + kX;   // dout at tile position 0
    if (ASYNC) {
      asm volatile("cp.async.wait_group %0;\n" ::"n"(STAGES - 2) : "memory");
      __syncthreads();
      issue_async(i + STAGES - 1);
    } else if (!KSTAGE) {
      bar_wait(&full[i % STAGES], (i / STAGES) & 1u);
    }
    float sums[W + 1] = {};
    bf16* dxrow = dx + size_t(row) * L + t_tile;
    auto window = [&](uint32_t v, float* xw, float* g) {
      const uint2 xp = *reinterpret_cast<const uint2*>(xs + 16 * v - 8);
      const uint4 xc = *reinterpret_cast<const uint4*>(xs + 16 * v);
      const uint4 gc = *reinterpret_cast<const uint4*>(gs + 16 * v);
      const uint2 gn = *reinterpret_cast<const uint2*>(gs + 16 * v + 16);
      xw[0] = hi(xp.x), xw[1] = lo(xp.y), xw[2] = hi(xp.y);
      if (t_tile == 0 && v == 0) xw[0] = st_init[0], xw[1] = st_init[1], xw[2] = st_init[2];
      xw[3] = lo(xc.x), xw[4] = hi(xc.x), xw[5] = lo(xc.y), xw[6] = hi(xc.y);
      xw[7] = lo(xc.z), xw[8] = hi(xc.z), xw[9] = lo(xc.w), xw[10] = hi(xc.w);
      g[0] = lo(gc.x), g[1] = hi(gc.x), g[2] = lo(gc.y), g[3] = hi(gc.y);
      g[4] = lo(gc.z), g[5] = hi(gc.z), g[6] = lo(gc.w), g[7] = hi(gc.w);
      g[8] = lo(gn.x), g[9] = hi(gn.x), g[10] = lo(gn.y);
      if (last_chunk && v == kVecsPerTile - 1) g[8] = g[9] = g[10] = 0.0f;  // past L
      if constexpr (SILU) {
        const uint2 xn = *reinterpret_cast<const uint2*>(xs + 16 * v + 16);
        xw[11] = lo(xn.x), xw[12] = hi(xn.x), xw[13] = lo(xn.y);
      }
    };
    auto store = [&](uint32_t v, const float* y) {
      uint4 o4;
      o4.x = pack2(y[0], y[1]);
      o4.y = pack2(y[2], y[3]);
      o4.z = pack2(y[4], y[5]);
      o4.w = pack2(y[6], y[7]);
      *reinterpret_cast<uint4*>(dxrow + 8 * v) = o4;
    };
    // A mixed vector: every term by its flags.
    auto masked = [&](uint32_t v, const uint32_t* f3) {
      float xw[14], g[11], dz[11], y[8];
      window(v, xw, g);
      auto flag = [&](int q) { return (f3[q / 4] >> (8 * (q % 4))) & 0xFFu; };
#pragma unroll
      for (int q = 0; q < 11; ++q) {
        const uint32_t f = flag(q);
        if constexpr (SILU) {
          float z = 0.0f;
#pragma unroll
          for (int k = 0; k < W; ++k) z += (f >> k & 1u) ? w[k] * xw[q + k] : 0.0f;
          dz[q] = (f & 15u) ? dsilu(z, g[q]) : 0.0f;
        } else {
          dz[q] = (f & 15u) ? g[q] : 0.0f;
        }
      }
#pragma unroll
      for (int o = 0; o < 8; ++o) {
        const uint32_t fin = flag(o) >> 4 & 3u;
        float acc = fin ? (fin == 1 ? st_dfin[0] : fin == 2 ? st_dfin[1] : st_dfin[2]) : 0.0f;
#pragma unroll
        for (int k = 0; k < W; ++k)
          acc += (flag(o + 3 - k) >> k & 1u) ? w[k] * dz[o + 3 - k] : 0.0f;
        y[o] = acc;
        const uint32_t f = flag(o);
#pragma unroll
        for (int k = 0; k < W; ++k) sums[k] += (f >> k & 1u) ? dz[o] * xw[o + k] : 0.0f;
        sums[W] += dz[o];
      }
      if (pk.init && t_tile == 0 && v == 0) {  // dinitial_states[q]: input q - 3 feeds t <= q
#pragma unroll
        for (int q = 0; q < W - 1; ++q) {
          float di = 0.0f;
#pragma unroll
          for (int t = 0; t <= q; ++t) di += (flag(t) >> (q - t) & 1u) ? w[q - t] * dz[t] : 0.0f;
          pk.dinit[row * 3 + q] = di;
        }
      }
      store(v, y);
    };
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      const uint32_t v = threadIdx.x + j * THREADS;
      if (kind[j] != 2) {  // full (or padding: zeros)
        float xw[14], g[11], dz[11], y[8];
        window(v, xw, g);
#pragma unroll
        for (int q = 0; q < 11; ++q) {
          if constexpr (SILU) {
            const float z = w[0] * xw[q] + w[1] * xw[q + 1] + w[2] * xw[q + 2] + w[3] * xw[q + 3];
            dz[q] = dsilu(z, g[q]);
          } else {
            dz[q] = g[q];
          }
        }
        if (SILU && last_chunk && v == kVecsPerTile - 1) dz[8] = dz[9] = dz[10] = 0.0f;
        const float keep = kind[j] == 0 ? 1.0f : 0.0f;
#pragma unroll
        for (int o = 0; o < 8; ++o) {
          y[o] = keep * (w[3] * dz[o] + w[2] * dz[o + 1] + w[1] * dz[o + 2] + w[0] * dz[o + 3]);
          const float dzo = keep * dz[o];
#pragma unroll
          for (int k = 0; k < W; ++k) sums[k] += dzo * xw[o + k];
          sums[W] += dzo;
        }
        store(v, y);
      } else if constexpr (!LIST) {
        masked(v, fl[j]);
      }
    }
    if constexpr (LIST) {
      for (int e = lane; e < n_mixed; e += 32) {
        uint32_t f3[3] = {fl[0][0], fl[0][1], fl[0][2]};
        const uint32_t v = entry(e);
        if (e >= 32) load_flags(v, f3);
        masked(v, f3);
      }
    }
    // The tile's unit: a fixed butterfly in each warp, then the warps in order.
#pragma unroll
    for (int k = 0; k <= W; ++k) {
#pragma unroll
      for (int off = 16; off > 0; off /= 2) sums[k] += __shfl_xor_sync(0xFFFFFFFFu, sums[k], off);
    }
    if (lane == 0)
#pragma unroll
      for (int k = 0; k <= W; ++k) red[warp][k] = sums[k];
    __syncthreads();  // the stage and red are done with
    if (threadIdx.x <= W) {
      float t = 0.0f;
      for (int q = 0; q < kWarps; ++q) t += red[q][threadIdx.x];
      partial[size_t(tile) * (W + 1) + threadIdx.x] = t;
    }
    if (!ASYNC && threadIdx.x == 0 && i + STAGES < mine) issue(i + STAGES);
    if (!ASYNC)
      __syncthreads();  // red is read before the next tile writes it (async: the next tile's barrier)
  }
}

// dweight and dbias from the units, each channel's in a fixed order.
__global__ void reduce_units(const float* partial, int64_t B, int64_t D, int64_t per_row, float* dw,
                             float* db) {
  const int64_t q = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (q >= D * (W + 1)) return;
  const int64_t d = q / (W + 1), k = q % (W + 1);
  float t = 0.0f;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t c = 0; c < per_row; ++c) t += partial[((b * D + d) * per_row + c) * (W + 1) + k];
  if (k < W)
    dw[d * W + k] = t;
  else
    db[d] = t;
}

int main() {
  const int64_t B = 8, D = 4096, L = 4096, rows = B * D, n = rows * L;
  const int iters = 20;
  int dev = 0, sms = 0;
  CK(cudaGetDevice(&dev));
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, dev));
  printf("device %s, %d SMs\n", prop.name, sms);
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<float> U(-1.f, 1.f);
  std::vector<bf16> hx(n), hg(n), hw(D * W), hinit(rows * 3), hdfin(rows * 3);
  for (auto& v : hx) v = __float2bfloat16(U(rng));
  for (auto& v : hg) v = __float2bfloat16(U(rng));
  for (auto& v : hw) v = __float2bfloat16(U(rng));
  for (auto& v : hinit) v = __float2bfloat16(U(rng));
  for (auto& v : hdfin) v = __float2bfloat16(U(rng));
  std::vector<int32_t> seq(B * L);
  for (int64_t b = 0; b < B; ++b) {
    std::vector<int64_t> cuts{0, L};
    for (int i = 0; i < 7; ++i) cuts.push_back(std::uniform_int_distribution<int64_t>(0, L)(rng));
    std::sort(cuts.begin(), cuts.end());
    for (int j = 0; j < 8; ++j)
      for (int64_t t = cuts[j]; t < cuts[j + 1]; ++t)
        seq[b * L + t] = (b % 2 == 1 && j == 7) ? -1 : j;
  }
  // kinds: full when positions 8v .. 8v+10 (those < L) are all in one sequence with every tap in
  // it; padding when 8v .. 8v+7 are padding; the row's first vector mixed (states) and its last
  // (dfinal_states).
  auto make_kinds = [&](bool packed, bool states) {
    std::vector<uint8_t> k(B * L / 8, 0);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t v = 0; v < L / 8; ++v) {
        uint8_t kind = 0;
        if (packed) {
          const int32_t* q = &seq[b * L];
          bool pad = true;
          for (int o = 0; o < 8; ++o) pad &= q[8 * v + o] < 0;
          bool fullv = true;
          for (int64_t t = 8 * v; t < std::min<int64_t>(8 * v + 11, L); ++t)
            for (int kk = 0; kk < W; ++kk) {
              const int64_t p = t - 3 + kk;
              fullv &= q[t] >= 0 && p >= 0 && q[p] == q[t];
            }
          kind = pad ? 1 : fullv ? 0 : 2;
        }
        if (states && (v == 0 || v == L / 8 - 1)) kind = 2;
        if (packed && kind == 0 && v == 0) kind = 2;
        k[b * L / 8 + v] = kind;
      }
    return k;
  };
  const auto kinds_rows = make_kinds(true, true), kinds_states = make_kinds(false, true);
  // flag bytes, per position: the taps that count (state taps included), 1 + j for dfinal_states
  auto make_flags = [&](bool packed, bool states) {
    std::vector<uint8_t> f(B * L + 16, 0);
    for (int64_t b = 0; b < B; ++b) {
      const int32_t* q = &seq[b * L];
      auto counts = [&](int64_t p, int64_t t) {
        if (!packed) return p >= 0 || states;
        if (q[t] < 0) return false;
        return p < 0 ? (states && q[0] == q[t]) : q[p] == q[t];
      };
      for (int64_t t = 0; t < L; ++t) {
        uint8_t v = 0;
        for (int k = 0; k < W; ++k)
          if (counts(t - 3 + k, t)) v |= 1u << k;
        if (states && t >= L - 3 && (!packed || (q[L - 1] >= 0 && q[t] == q[L - 1])))
          v |= uint8_t((t - (L - 3) + 1) << 4);
        f[b * L + t] = v;
      }
    }
    return f;
  };
  const auto flags_rows = make_flags(true, true), flags_states = make_flags(false, true);
  int64_t mixed_rows = 0;
  for (auto k : kinds_rows) mixed_rows += k == 2;
  printf("rows: %lld mixed vectors of %lld (%.2f %%)\n", (long long)mixed_rows,
         (long long)kinds_rows.size(), 100.0 * mixed_rows / kinds_rows.size());

  bf16 *x, *g, *w, *dx, *init, *dfin;
  float *partial, *dw, *db, *dinit;
  uint8_t *frows, *fstates;
  uint8_t *krows, *kstates;
  char* flush;
  const size_t flush_bytes = 256 << 20;
  CK(cudaMalloc(&x, n * 2));
  CK(cudaMalloc(&g, n * 2));
  CK(cudaMalloc(&dx, n * 2));
  CK(cudaMalloc(&w, D * W * 2));
  CK(cudaMalloc(&init, rows * 6));
  CK(cudaMalloc(&dfin, rows * 6));
  CK(cudaMalloc(&dinit, rows * 12));
  CK(cudaMalloc(&partial, rows * 4 * (W + 1) * 4));  // up to 4 tiles a row
  CK(cudaMalloc(&dw, D * W * 4));
  CK(cudaMalloc(&db, D * 4));
  CK(cudaMalloc(&frows, B * L + 16));
  CK(cudaMalloc(&fstates, B * L + 16));
  CK(cudaMalloc(&krows, B * L / 8));
  CK(cudaMalloc(&kstates, B * L / 8));
  CK(cudaMalloc(&flush, flush_bytes));
  CK(cudaMemcpy(x, hx.data(), n * 2, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(g, hg.data(), n * 2, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(w, hw.data(), D * W * 2, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(init, hinit.data(), rows * 6, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dfin, hdfin.data(), rows * 6, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(frows, flags_rows.data(), B * L + 16, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(fstates, flags_states.data(), B * L + 16, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(krows, kinds_rows.data(), B * L / 8, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(kstates, kinds_states.data(), B * L / 8, cudaMemcpyHostToDevice));
  Timer tm;
  auto time_it = [&](auto&& launch) {
    for (int i = 0; i < 3; ++i) launch();
    CK(cudaDeviceSynchronize());
    std::vector<float> ms;
    for (int i = 0; i < iters; ++i) {
      CK(cudaMemsetAsync(flush, i & 0xFF, flush_bytes));
      cudaEventRecord(tm.a);
      launch();
      cudaEventRecord(tm.b);
      CK(cudaEventSynchronize(tm.b));
      float t;
      cudaEventElapsedTime(&t, tm.a, tm.b);
      ms.push_back(t);
    }
    CK(cudaGetLastError());
    return median(ms);
  };
  const float copy_ms =
      time_it([&] { CK(cudaMemcpyAsync(dx, x, n * 2, cudaMemcpyDeviceToDevice)); });
  const double ceiling = 2.0 * n * 2 / copy_ms / 1e6;
  const double bytes = 3.0 * n * 2;
  printf("copy: %.4f ms, %.1f GB/s (the ceiling)\n", copy_ms, ceiling);

  // fp64 reference (position-wise, the same rules as the project's)
  auto verify = [&](bool packed, bool states, bool silu, const char* name) {
    std::vector<bf16> hdx(n);
    std::vector<float> hdw(D * W), hdb(D), hdi(rows * 3);
    CK(cudaMemcpy(hdx.data(), dx, n * 2, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hdw.data(), dw, D * W * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hdb.data(), db, D * 4, cudaMemcpyDeviceToHost));
    if (states) CK(cudaMemcpy(hdi.data(), dinit, rows * 12, cudaMemcpyDeviceToHost));
    std::vector<double> rdw(D * W, 0), rdb(D, 0), mag_w(D * W, 0), mag_b(D, 0);
    int64_t bad = 0;
    double worst = 0;
#pragma omp parallel for reduction(+ : bad) reduction(max : worst) schedule(dynamic, 16)
    for (int64_t rr = 0; rr < rows; ++rr) {
      std::vector<double> dz(L);
      const int64_t d = rr / B, b = rr % B, r = b * D + d;
      const int32_t* q = &seq[b * L];
      auto f = [&](const bf16& v) { return double(__bfloat162float(v)); };
      auto counts = [&](int64_t p, int64_t t) {
        if (!packed) return p >= 0 || states;
        if (q[t] < 0) return false;
        return p < 0 ? (states && q[0] == q[t]) : q[p] == q[t];
      };
      auto xin = [&](int64_t p) {
        return p >= 0 ? f(hx[r * L + p]) : states ? f(hinit[r * 3 + 3 + p]) : 0.0;
      };
      for (int64_t t = 0; t < L; ++t) {
        if (packed && q[t] < 0) {
          dz[t] = 0;
          continue;
        }
        double z = 0;
        for (int k = 0; k < W; ++k)
          if (counts(t - 3 + k, t)) z += f(hw[d * W + k]) * xin(t - 3 + k);
        const double gg = f(hg[r * L + t]);
        const double s = 1 / (1 + std::exp(-z));
        dz[t] = silu ? gg * s * (1 + z * (1 - s)) : gg;
      }
      for (int64_t s = 0; s < L; ++s) {
        double acc = 0;
        if (states && s >= L - 3 && (!packed || (q[L - 1] >= 0 && q[s] == q[L - 1])))
          acc = f(hdfin[r * 3 + s - (L - 3)]);
        for (int k = 0; k < W; ++k) {
          const int64_t t = s + 3 - k;
          if (t < L && counts(s, t)) acc += f(hw[d * W + k]) * dz[t];
        }
        const double got = __bfloat162float(hdx[r * L + s]);
        const double err = std::fabs(got - acc);
        worst = std::max(worst, err);
        if (!(err <= 5e-2 + 1e-2 * std::fabs(acc))) ++bad;
        for (int k = 0; k < W; ++k)
          if (counts(s - 3 + k, s)) {
            rdw[d * W + k] += dz[s] * xin(s - 3 + k);
            mag_w[d * W + k] += std::fabs(dz[s] * xin(s - 3 + k));
          }
        rdb[d] += dz[s];
        mag_b[d] += std::fabs(dz[s]);
      }
      if (states)
        for (int j = 0; j < 3; ++j) {
          double di = 0;
          for (int64_t t = 0; t <= j && t < L; ++t)
            if (counts(j - 3, t)) di += f(hw[d * W + j - t]) * dz[t];
          if (!(std::fabs(hdi[r * 3 + j] - di) <= 1e-3 + 1e-3 * std::fabs(di))) ++bad;
        }
    }
    int64_t bad_w = 0;
    for (int64_t q = 0; q < D * W; ++q)
      if (!(std::fabs(hdw[q] - rdw[q]) <= 1e-3 * (1 + mag_w[q] / 100))) ++bad_w;
    for (int64_t q = 0; q < D; ++q)
      if (!(std::fabs(hdb[q] - rdb[q]) <= 1e-3 * (1 + mag_b[q] / 100))) ++bad_w;
    printf("  verify %-26s %s (dx worst abs err %.3g, %lld bad; dweight/dbias %lld bad)\n", name,
           bad || bad_w ? "FAIL" : "ok", worst, (long long)bad, (long long)bad_w);
    return bad == 0 && bad_w == 0;
  };
  bool all_ok = true;
  auto run = [&](auto kernel, int tile, int stages, int threads, bool packed, bool states,
                 bool silu, const char* name) {
    constexpr int kAlign = 128;
    const int stage =
        ((128 + tile * 2 + 16) + (tile * 2 + 16) + tile / 8 + kAlign - 1) / kAlign * kAlign;
    const int smem = stages * stage;
    CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    int per_sm = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem));
    const int grid = per_sm * sms;
    Packing pk{packed ? frows : fstates, packed ? krows : (states ? kstates : nullptr),
               states ? init : nullptr, states ? dfin : nullptr, dinit};
    const int64_t per_row = L / tile;
    auto launch = [&] {
      kernel<<<grid, threads, smem>>>(x, g, w, dx, partial, uint32_t(rows), uint32_t(D),
                                      uint32_t(L), pk);
      reduce_units<<<(D * (W + 1) + 255) / 256, 256>>>(partial, B, D, per_row, dw, db);
    };
    CK(cudaMemset(dx, 0xFF, n * 2));
    CK(cudaMemset(dw, 0xFF, D * W * 4));
    CK(cudaMemset(db, 0xFF, D * 4));
    CK(cudaMemset(dinit, 0xFF, rows * 12));
    launch();
    CK(cudaDeviceSynchronize());
    all_ok &= verify(packed, states, silu, name);
    const float ms = time_it(launch);
    all_ok &= verify(packed, states, silu, name);
    printf(
        "%-30s tile %5d stages %d threads %4d blocks/SM %2d: %.4f ms  %.1f GB/s  %.1f %% of copy\n",
        name, tile, stages, threads, per_sm, ms, bytes / ms / 1e6,
        100.0 * bytes / ms / 1e6 / ceiling);
  };
#define PLAIN(T, S, TH) run(staged_bwd<T, S, TH, false>, T, S, TH, false, false, false, "plain")
#define APLAIN(T, S, TH) \
  run(staged_bwd<T, S, TH, false, false, false, true>, T, S, TH, false, false, false, "async plain")
#define AROWS(T, S, TH)                                                             \
  run(staged_bwd<T, S, TH, false, false, false, true>, T, S, TH, true, true, false, \
      "async rows, divergent")
#define AROWSL(T, S, TH)                                                           \
  run(staged_bwd<T, S, TH, false, true, false, true>, T, S, TH, true, true, false, \
      "async rows, lists")
#define ASTATES(T, S, TH)                                                            \
  run(staged_bwd<T, S, TH, false, false, false, true>, T, S, TH, false, true, false, \
      "async states, divergent")
#define ASTATESL(T, S, TH)                                                          \
  run(staged_bwd<T, S, TH, false, true, false, true>, T, S, TH, false, true, false, \
      "async states, lists")
  PLAIN(4096, 3, 128);
  APLAIN(4096, 3, 128);
  APLAIN(4096, 4, 128);
  APLAIN(4096, 3, 256);
  AROWS(4096, 3, 128);
  AROWS(4096, 3, 256);
  AROWSL(4096, 3, 128);
  AROWSL(4096, 3, 256);
  ASTATES(4096, 3, 128);
  ASTATESL(4096, 3, 128);
  run(staged_bwd<4096, 3, 128, true, false, false, true>, 4096, 3, 128, false, false, true,
      "async plain + silu");
  run(staged_bwd<4096, 3, 128, true, true, false, true>, 4096, 3, 128, true, true, true,
      "async rows + silu, lists");
  run(staged_bwd<4096, 3, 128, true, false, false, true>, 4096, 3, 128, true, true, true,
      "async rows + silu, divergent");
  PLAIN(4096, 3, 128);
  printf(all_ok ? "ALL VERIFIED\n" : "SOME FAILED\n");
  return all_ok ? 0 : 1;
}
