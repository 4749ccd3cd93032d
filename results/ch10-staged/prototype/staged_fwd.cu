// Prototype (not part of the project): a channel-first forward whose tiles arrive in shared memory
// by bulk copies (cp.async.bulk + mbarrier), several stages deep, in a persistent grid, so that the
// bytes in flight do not depend on the registers or the arithmetic of the threads. Plain rows, and
// packed rows with a per-vector tap-mask word (8 outputs x 4 taps = 32 bits) and states.
#include <cmath>
#include <random>
#include "bulk.cuh"

template <int TILE, int STAGES, int THREADS, bool PACKED, bool PAD_FULL = false,
          bool WSTAGE = false>
__global__ void __launch_bounds__(THREADS)
    staged_fwd(const bf16* __restrict__ x, const bf16* __restrict__ weight, bf16* __restrict__ out,
               int64_t rows, int64_t D, int64_t L, const uint32_t* __restrict__ map,
               const bf16* __restrict__ init, bf16* __restrict__ fin) {
  constexpr int kVecsPerTile = TILE / 8;
  constexpr int kStage =
      TILE * 2 + 128 + (WSTAGE ? kVecsPerTile * 4 : 0);  // 112 unused, the halo, the tile, words
  static_assert(kVecsPerTile % THREADS == 0, "whole vectors a thread");
  extern __shared__ __align__(128) unsigned char smem[];
  __shared__ uint64_t full[STAGES];
  const int64_t per_row = L / TILE, tiles = rows * per_row;
  const int64_t first = blockIdx.x, step = gridDim.x;
  const int64_t mine = first < tiles ? (tiles - first + step - 1) / step : 0;
  auto issue = [&](int64_t i) {  // tile number i of this block into stage i % STAGES
    const int64_t tile = first + i * step;
    const int64_t row = tile / per_row, chunk = tile - row * per_row;
    unsigned char* st = smem + (i % STAGES) * kStage;
    const bf16* src = x + row * L + chunk * TILE;
    uint64_t* bar = &full[i % STAGES];
    bar_expect(bar, TILE * 2 + (chunk > 0 ? 16 : 0) + (WSTAGE ? kVecsPerTile * 4 : 0));
    if (chunk > 0)
      bulk_copy(st + 112, src - 8, TILE * 2 + 16, bar);
    else
      bulk_copy(st + 128, src, TILE * 2, bar);
    if (WSTAGE) {
      const int64_t b = row / D;
      bulk_copy(st + 128 + TILE * 2, map + b * (L / 8) + chunk * kVecsPerTile, kVecsPerTile * 4,
                bar);
    }
  };
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) bar_init(&full[s], 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    for (int64_t i = 0; i < STAGES && i < mine; ++i) issue(i);
  }
  __syncthreads();
  for (int64_t i = 0; i < mine; ++i) {
    const int64_t tile = first + i * step;
    const int64_t row = tile / per_row, chunk = tile - row * per_row;
    const int64_t b = row / D, d = row - b * D;
    float w[W];
    {
      const uint2 wv = *reinterpret_cast<const uint2*>(weight + d * W);
      w[0] = lo(wv.x), w[1] = hi(wv.x), w[2] = lo(wv.y), w[3] = hi(wv.y);
    }
    uint32_t word[kVecsPerTile / THREADS];
    const unsigned char* st = smem + (i % STAGES) * kStage;
    if constexpr (PACKED && !WSTAGE) {
#pragma unroll
      for (int j = 0; j < kVecsPerTile / THREADS; ++j)
        word[j] = map[b * (L / 8) + chunk * kVecsPerTile + threadIdx.x + j * THREADS];
    }
    bar_wait(&full[i % STAGES], uint32_t(i / STAGES) & 1u);
    if constexpr (PACKED && WSTAGE) {
#pragma unroll
      for (int j = 0; j < kVecsPerTile / THREADS; ++j)
        word[j] = reinterpret_cast<const uint32_t*>(st + 128 + TILE * 2)[threadIdx.x + j * THREADS];
    }
#pragma unroll
    for (int j = 0; j < kVecsPerTile / THREADS; ++j) {
      const int v = threadIdx.x + j * THREADS;
      const uint4 cur = *reinterpret_cast<const uint4*>(st + 128 + 16 * v);
      uint2 prev = *reinterpret_cast<const uint2*>(st + 120 + 16 * v);
      if (chunk == 0 && v == 0) {
        prev = make_uint2(0, 0);
        if (PACKED && init) {  // the state: elements -3..-1 in prev's last three
          const bf16* s = init + row * (W - 1);
          const uint32_t a = __bfloat16_as_ushort(s[0]), bb = __bfloat16_as_ushort(s[1]),
                         c = __bfloat16_as_ushort(s[2]);
          prev = make_uint2(a << 16, bb | (c << 16));
        }
      }
      float win[11];
      win[0] = hi(prev.x), win[1] = lo(prev.y), win[2] = hi(prev.y);
      win[3] = lo(cur.x), win[4] = hi(cur.x), win[5] = lo(cur.y), win[6] = hi(cur.y);
      win[7] = lo(cur.z), win[8] = hi(cur.z), win[9] = lo(cur.w), win[10] = hi(cur.w);
      float y[8];
      if (!PACKED || word[j] == 0xFFFFFFFFu || (PAD_FULL && word[j] == 0u)) {
#pragma unroll
        for (int o = 0; o < 8; ++o)
          y[o] = w[0] * win[o] + w[1] * win[o + 1] + w[2] * win[o + 2] + w[3] * win[o + 3];
      } else {
        const uint32_t m = word[j];
#pragma unroll
        for (int o = 0; o < 8; ++o) {
          float acc = 0.0f;
#pragma unroll
          for (int k = 0; k < W; ++k) acc += (m >> (o * 4 + k) & 1u) ? w[k] * win[o + k] : 0.0f;
          y[o] = acc;
        }
      }
      uint4 o4;
      o4.x = pack2(y[0], y[1]);
      o4.y = pack2(y[2], y[3]);
      o4.z = pack2(y[4], y[5]);
      o4.w = pack2(y[6], y[7]);
      if (PAD_FULL && PACKED && word[j] == 0u) o4 = make_uint4(0, 0, 0, 0);
      *reinterpret_cast<uint4*>(out + row * L + chunk * TILE + 8 * v) = o4;
      if (PACKED && fin && chunk == per_row - 1 && v == kVecsPerTile - 1) {
        const uint32_t m = word[j];
#pragma unroll
        for (int q = 0; q < W - 1; ++q)
          fin[row * (W - 1) + q] = __float2bfloat16((m >> (28 + q + 1) & 1u) ? win[8 + q] : 0.0f);
      }
    }
    __syncthreads();  // every thread is done with this stage
    if (threadIdx.x == 0 && i + STAGES < mine) issue(i + STAGES);
  }
}

// Flat tiles (a tile may cross rows; L a multiple of 8), padding taken by the full path (its
// outputs replaced by zeros), 32-bit index arithmetic, the masked form in the lane (divergent).
template <int TILE, int STAGES, int THREADS, bool PACKED>
__global__ void __launch_bounds__(THREADS)
    staged_fwd3(const bf16* __restrict__ x, const bf16* __restrict__ weight, bf16* __restrict__ out,
                int64_t n, uint32_t D, uint32_t L, const uint32_t* __restrict__ map,
                const bf16* __restrict__ init, bf16* __restrict__ fin) {
  constexpr int kStage = TILE * 2 + 128;
  constexpr int kVecsPerTile = TILE / 8, kPer = kVecsPerTile / THREADS;
  static_assert(kVecsPerTile % THREADS == 0, "whole vectors a thread");
  extern __shared__ __align__(128) unsigned char smem[];
  __shared__ uint64_t full[STAGES];
  const uint32_t tiles = uint32_t((n + TILE - 1) / TILE);
  const uint32_t first = blockIdx.x, step = gridDim.x;
  const uint32_t mine = first < tiles ? (tiles - first + step - 1) / step : 0;
  const uint32_t vecs_per_row = L / 8;
  auto issue = [&](uint32_t i) {
    const uint32_t tile = first + i * step;
    unsigned char* st = smem + (i % STAGES) * kStage;
    const int64_t e0 = int64_t(tile) * TILE;
    const uint32_t bytes = uint32_t(min(int64_t(TILE), n - e0)) * 2;
    if (tile > 0)
      bulk_load(st + 112, x + e0 - 8, bytes + 16, &full[i % STAGES]);
    else
      bulk_load(st + 128, x + e0, bytes, &full[i % STAGES]);
  };
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) bar_init(&full[s], 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    for (uint32_t i = 0; i < STAGES && i < mine; ++i) issue(i);
  }
  __syncthreads();
  for (uint32_t i = 0; i < mine; ++i) {
    const uint32_t tile = first + i * step;
    const int64_t e_tile = int64_t(tile) * TILE;
    const uint32_t vecs = uint32_t(min(int64_t(TILE), n - e_tile)) / 8;
    // each vector: its row (b*D + d) and place in it, its filter, its word
    uint32_t word[kPer], rowv[kPer], vin[kPer];
    float w[kPer][W];
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      const uint32_t v = threadIdx.x + j * THREADS;
      const uint32_t gv = uint32_t(e_tile / 8) + v;  // the vector in the tensor (< 2^32 here)
      rowv[j] = gv / vecs_per_row;
      vin[j] = gv - rowv[j] * vecs_per_row;
      const uint32_t d = rowv[j] % D, b = rowv[j] / D;
      const uint2 wv =
          v < vecs ? *reinterpret_cast<const uint2*>(weight + d * W) : make_uint2(0, 0);
      w[j][0] = lo(wv.x), w[j][1] = hi(wv.x), w[j][2] = lo(wv.y), w[j][3] = hi(wv.y);
      word[j] = PACKED && v < vecs ? map[b * vecs_per_row + vin[j]] : 0xFFFFFFFFu;
    }
    const unsigned char* st = smem + (i % STAGES) * kStage;
    bar_wait(&full[i % STAGES], (i / STAGES) & 1u);
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      const uint32_t v = threadIdx.x + j * THREADS;
      if (v >= vecs) break;
      const uint4 cur = *reinterpret_cast<const uint4*>(st + 128 + 16 * v);
      uint2 prev = *reinterpret_cast<const uint2*>(st + 120 + 16 * v);
      if (vin[j] == 0) {
        prev = make_uint2(0, 0);
        if (PACKED && init) {
          const bf16* s = init + rowv[j] * (W - 1);
          const uint32_t a = __bfloat16_as_ushort(s[0]), bb = __bfloat16_as_ushort(s[1]),
                         c = __bfloat16_as_ushort(s[2]);
          prev = make_uint2(a << 16, bb | (c << 16));
        }
      }
      float win[11];
      win[0] = hi(prev.x), win[1] = lo(prev.y), win[2] = hi(prev.y);
      win[3] = lo(cur.x), win[4] = hi(cur.x), win[5] = lo(cur.y), win[6] = hi(cur.y);
      win[7] = lo(cur.z), win[8] = hi(cur.z), win[9] = lo(cur.w), win[10] = hi(cur.w);
      const uint32_t m = word[j];
      float y[8];
      if (!PACKED || m == 0xFFFFFFFFu || m == 0u) {
#pragma unroll
        for (int o = 0; o < 8; ++o)
          y[o] =
              w[j][0] * win[o] + w[j][1] * win[o + 1] + w[j][2] * win[o + 2] + w[j][3] * win[o + 3];
      } else {
#pragma unroll
        for (int o = 0; o < 8; ++o) {
          float acc = 0.0f;
#pragma unroll
          for (int k = 0; k < W; ++k) acc += (m >> (o * 4 + k) & 1u) ? w[j][k] * win[o + k] : 0.0f;
          y[o] = acc;
        }
      }
      uint4 o4;
      o4.x = pack2(y[0], y[1]);
      o4.y = pack2(y[2], y[3]);
      o4.z = pack2(y[4], y[5]);
      o4.w = pack2(y[6], y[7]);
      if (PACKED && m == 0u) o4 = make_uint4(0, 0, 0, 0);
      *reinterpret_cast<uint4*>(out + e_tile + 8 * v) = o4;
      if (PACKED && fin && vin[j] == vecs_per_row - 1) {
#pragma unroll
        for (int q = 0; q < W - 1; ++q)
          fin[rowv[j] * (W - 1) + q] =
              __float2bfloat16((m >> (28 + q + 1) & 1u) ? win[8 + q] : 0.0f);
      }
    }
    __syncthreads();
    if (threadIdx.x == 0 && i + STAGES < mine) issue(i + STAGES);
  }
}

// The same with per-thread 16-byte cp.async copies instead of the copy engine's bulk copies.
__device__ __forceinline__ void cp16(void* smem, const void* g) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_addr(smem)), "l"(g));
}
template <int TILE, int STAGES, int THREADS, bool PACKED>
__global__ void __launch_bounds__(THREADS)
    staged_async(const bf16* __restrict__ x, const bf16* __restrict__ weight,
                 bf16* __restrict__ out, int64_t rows, int64_t D, int64_t L,
                 const uint32_t* __restrict__ map, const bf16* __restrict__ init,
                 bf16* __restrict__ fin) {
  constexpr int kStage = TILE * 2 + 128;
  constexpr int kVecsPerTile = TILE / 8, kPer = kVecsPerTile / THREADS;
  extern __shared__ __align__(128) unsigned char smem[];
  const int64_t per_row = L / TILE, tiles = rows * per_row;
  const int64_t first = blockIdx.x, step = gridDim.x;
  const int64_t mine = first < tiles ? (tiles - first + step - 1) / step : 0;
  auto issue = [&](int64_t i) {
    if (i < mine) {
      const int64_t tile = first + i * step;
      const int64_t row = tile / per_row, chunk = tile - row * per_row;
      unsigned char* st = smem + (i % STAGES) * kStage;
      const bf16* src = x + row * L + chunk * TILE;
#pragma unroll
      for (int j = 0; j < kPer; ++j) {
        const int v = threadIdx.x + j * THREADS;
        cp16(st + 128 + 16 * v, src + 8 * v);
      }
      if (threadIdx.x == 0 && chunk > 0) cp16(st + 112, src - 8);
    }
    asm volatile("cp.async.commit_group;\n" ::);
  };
  for (int s = 0; s < STAGES - 1; ++s) issue(s);
  for (int64_t i = 0; i < mine; ++i) {
    const int64_t tile = first + i * step;
    const int64_t row = tile / per_row, chunk = tile - row * per_row;
    const int64_t b = row / D, d = row - b * D;
    float w[W];
    {
      const uint2 wv = *reinterpret_cast<const uint2*>(weight + d * W);
      w[0] = lo(wv.x), w[1] = hi(wv.x), w[2] = lo(wv.y), w[3] = hi(wv.y);
    }
    uint32_t word[kPer];
    if constexpr (PACKED) {
#pragma unroll
      for (int j = 0; j < kPer; ++j)
        word[j] = map[b * (L / 8) + chunk * kVecsPerTile + threadIdx.x + j * THREADS];
    }
    asm volatile("cp.async.wait_group %0;\n" ::"n"(STAGES - 2) : "memory");
    __syncthreads();
    issue(i + STAGES - 1);
    const unsigned char* st = smem + (i % STAGES) * kStage;
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      const int v = threadIdx.x + j * THREADS;
      const uint4 cur = *reinterpret_cast<const uint4*>(st + 128 + 16 * v);
      uint2 prev = *reinterpret_cast<const uint2*>(st + 120 + 16 * v);
      if (chunk == 0 && v == 0) {
        prev = make_uint2(0, 0);
        if (PACKED && init) {
          const bf16* s = init + row * (W - 1);
          const uint32_t a = __bfloat16_as_ushort(s[0]), bb = __bfloat16_as_ushort(s[1]),
                         c = __bfloat16_as_ushort(s[2]);
          prev = make_uint2(a << 16, bb | (c << 16));
        }
      }
      float win[11];
      win[0] = hi(prev.x), win[1] = lo(prev.y), win[2] = hi(prev.y);
      win[3] = lo(cur.x), win[4] = hi(cur.x), win[5] = lo(cur.y), win[6] = hi(cur.y);
      win[7] = lo(cur.z), win[8] = hi(cur.z), win[9] = lo(cur.w), win[10] = hi(cur.w);
      float y[8];
      if (!PACKED || word[j] == 0xFFFFFFFFu) {
#pragma unroll
        for (int o = 0; o < 8; ++o)
          y[o] = w[0] * win[o] + w[1] * win[o + 1] + w[2] * win[o + 2] + w[3] * win[o + 3];
      } else {
        const uint32_t m = word[j];
#pragma unroll
        for (int o = 0; o < 8; ++o) {
          float acc = 0.0f;
#pragma unroll
          for (int k = 0; k < W; ++k) acc += (m >> (o * 4 + k) & 1u) ? w[k] * win[o + k] : 0.0f;
          y[o] = acc;
        }
      }
      uint4 o4;
      o4.x = pack2(y[0], y[1]);
      o4.y = pack2(y[2], y[3]);
      o4.z = pack2(y[4], y[5]);
      o4.w = pack2(y[6], y[7]);
      *reinterpret_cast<uint4*>(out + row * L + chunk * TILE + 8 * v) = o4;
      if (PACKED && fin && chunk == per_row - 1 && v == kVecsPerTile - 1) {
        const uint32_t m = word[j];
#pragma unroll
        for (int q = 0; q < W - 1; ++q)
          fin[row * (W - 1) + q] = __float2bfloat16((m >> (28 + q + 1) & 1u) ? win[8 + q] : 0.0f);
      }
    }
  }
  asm volatile("cp.async.wait_all;\n" ::: "memory");
}

int main(int argc, char** argv) {
  const int64_t B = 8, D = 4096, L = 4096, rows = B * D, n = rows * L;
  const int iters = 20;
  int dev = 0, sms = 0;
  CK(cudaGetDevice(&dev));
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, dev));
  printf("device %s, %d SMs\n", prop.name, sms);

  std::mt19937_64 rng(42);
  std::uniform_real_distribution<float> U(-1.f, 1.f);
  std::vector<bf16> hx(n), hw(D * W), hinit(rows * (W - 1));
  for (auto& v : hx) v = __float2bfloat16(U(rng));
  for (auto& v : hw) v = __float2bfloat16(U(rng));
  for (auto& v : hinit) v = __float2bfloat16(U(rng));
  // seq_idx: 8 documents a row of random length, odd rows end in padding
  std::vector<int32_t> seq(B * L);
  for (int64_t b = 0; b < B; ++b) {
    std::vector<int64_t> cuts{0, L};
    for (int i = 0; i < 7; ++i) cuts.push_back(std::uniform_int_distribution<int64_t>(0, L)(rng));
    std::sort(cuts.begin(), cuts.end());
    for (int j = 0; j < 8; ++j)
      for (int64_t t = cuts[j]; t < cuts[j + 1]; ++t)
        seq[b * L + t] = (b % 2 == 1 && j == 7) ? -1 : j;
  }
  auto contributes = [&](int64_t b, int64_t s, int64_t t, bool packed) {
    if (!packed) return true;
    const int32_t* q = &seq[b * L];
    if (q[t] < 0) return false;
    if (s < 0) return q[0] == q[t];
    return q[s] == q[t];
  };
  // map words: packed (seq + states) and states alone (every tap, states before t = 0)
  std::vector<uint32_t> map_rows(B * L / 8), map_states(B * L / 8, 0xFFFFFFFFu);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t v = 0; v < L / 8; ++v) {
      uint32_t m = 0;
      for (int o = 0; o < 8; ++o)
        for (int k = 0; k < W; ++k)
          if (contributes(b, v * 8 + o - 3 + k, v * 8 + o, true)) m |= 1u << (o * 4 + k);
      map_rows[b * L / 8 + v] = m;
    }
  bf16 *x, *w, *out, *init, *fin;
  uint32_t *mrows, *mstates;
  char* flush;
  const size_t flush_bytes = 256 << 20;
  CK(cudaMalloc(&x, n * 2));
  CK(cudaMalloc(&out, n * 2));
  CK(cudaMalloc(&w, D * W * 2));
  CK(cudaMalloc(&init, rows * 3 * 2));
  CK(cudaMalloc(&fin, rows * 3 * 2));
  CK(cudaMalloc(&mrows, B * L / 8 * 4));
  CK(cudaMalloc(&mstates, B * L / 8 * 4));
  CK(cudaMalloc(&flush, flush_bytes));
  CK(cudaMemcpy(x, hx.data(), n * 2, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(w, hw.data(), D * W * 2, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(init, hinit.data(), rows * 3 * 2, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(mrows, map_rows.data(), B * L / 8 * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(mstates, map_states.data(), B * L / 8 * 4, cudaMemcpyHostToDevice));
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
      time_it([&] { CK(cudaMemcpyAsync(out, x, n * 2, cudaMemcpyDeviceToDevice)); });
  const double bytes = 2.0 * n * 2;
  const double ceiling = bytes / copy_ms / 1e6;
  printf("copy: %.4f ms, %.1f GB/s (the ceiling)\n", copy_ms, ceiling);

  // verification: every output, in float from the bf16 inputs
  auto verify = [&](bool packed, bool states, const char* name) {
    std::vector<bf16> ho(n), hf(rows * 3);
    CK(cudaMemcpy(ho.data(), out, n * 2, cudaMemcpyDeviceToHost));
    if (states) CK(cudaMemcpy(hf.data(), fin, rows * 3 * 2, cudaMemcpyDeviceToHost));
    double worst = 0;
    int64_t bad = 0;
#pragma omp parallel for reduction(+ : bad) reduction(max : worst) schedule(dynamic, 64)
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t b = r / D, d = r % D;
      for (int64_t t = 0; t < L; ++t) {
        float acc = 0;
        for (int k = 0; k < W; ++k) {
          const int64_t s = t - 3 + k;
          if (!contributes(b, s, t, packed)) continue;
          const float xs = s >= 0 ? __bfloat162float(hx[r * L + s])
                                  : (states ? __bfloat162float(hinit[r * 3 + 3 + s]) : 0.f);
          acc += __bfloat162float(hw[d * W + k]) * xs;
        }
        const float got = __bfloat162float(ho[r * L + t]);
        const float err = std::fabs(got - acc);
        if (!(err <= 1e-2f + 1e-2f * std::fabs(acc))) ++bad;
        if (packed && seq[b * L + t] < 0 && got != 0.0f) ++bad;
        worst = std::max(worst, double(err));
      }
      if (states)
        for (int q = 0; q < 3; ++q) {
          const int64_t s = L - 3 + q;
          const float want =
              contributes(b, s, L - 1, packed) ? __bfloat162float(hx[r * L + s]) : 0.f;
          if (__bfloat162float(hf[r * 3 + q]) != want) ++bad;
        }
    }
    printf("  verify %-28s %s (worst abs err %.3g, %lld bad)\n", name, bad ? "FAIL" : "ok", worst,
           (long long)bad);
    return bad == 0;
  };
  bool all_ok = true;
  bool wstage_now = false;
  auto run = [&](auto kernel, int tile, int stages, int threads, const uint32_t* map, bool states,
                 const char* name, bool packed) {
    const int smem = stages * (tile * 2 + 128 + (wstage_now ? tile / 2 : 0));
    CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    int per_sm = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem));
    const int grid = per_sm * sms;
    auto launch = [&] {
      kernel<<<grid, threads, smem>>>(x, w, out, rows, D, L, map, states ? init : nullptr,
                                      states ? fin : nullptr);
    };
    CK(cudaMemset(out, 0xFF, n * 2));  // poison (NaN in bf16)
    launch();
    CK(cudaDeviceSynchronize());
    all_ok &= verify(packed, states, name);
    const float ms = time_it(launch);
    all_ok &= verify(packed, states, name);
    printf(
        "%-34s tile %5d stages %d threads %4d blocks/SM %d: %.4f ms  %.1f GB/s  %.1f %% of copy\n",
        name, tile, stages, threads, per_sm, ms, bytes / ms / 1e6,
        100.0 * bytes / ms / 1e6 / ceiling);
  };
  auto run3 = [&](auto kernel, int tile, int stages, int threads, const uint32_t* map, bool states,
                  const char* name, bool packed) {
    const int smem = stages * (tile * 2 + 128);
    CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    int per_sm = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem));
    const int grid = per_sm * sms;
    auto launch = [&] {
      kernel<<<grid, threads, smem>>>(x, w, out, n, uint32_t(D), uint32_t(L), map,
                                      states ? init : nullptr, states ? fin : nullptr);
    };
    CK(cudaMemset(out, 0xFF, n * 2));
    launch();
    CK(cudaDeviceSynchronize());
    all_ok &= verify(packed, states, name);
    const float ms = time_it(launch);
    all_ok &= verify(packed, states, name);
    printf(
        "%-34s tile %5d stages %d threads %4d blocks/SM %d: %.4f ms  %.1f GB/s  %.1f %% of copy\n",
        name, tile, stages, threads, per_sm, ms, bytes / ms / 1e6,
        100.0 * bytes / ms / 1e6 / ceiling);
  };
#define PLAIN(T, S, TH) run(staged_fwd<T, S, TH, false>, T, S, TH, nullptr, false, "plain", false)
#define ROWS(T, S, TH) \
  run(staged_fwd<T, S, TH, true>, T, S, TH, mrows, true, "rows 8 docs + states", true)
#define PLAIN3(T, S, TH) \
  run3(staged_fwd3<T, S, TH, false>, T, S, TH, nullptr, false, "flat plain", false)
#define ROWS3(T, S, TH) \
  run3(staged_fwd3<T, S, TH, true>, T, S, TH, mrows, true, "flat rows 8 docs + states", true)
#define STATES3(T, S, TH) \
  run3(staged_fwd3<T, S, TH, true>, T, S, TH, mstates, true, "flat states alone", false)
#define STATES(T, S, TH) \
  run(staged_fwd<T, S, TH, true>, T, S, TH, mstates, true, "states alone", false)
  run(staged_async<4096, 4, 128, false>, 4096, 4, 128, nullptr, false, "cp.async plain", false);
  run(staged_async<4096, 4, 128, true>, 4096, 4, 128, mrows, true, "cp.async rows", true);
  run(staged_async<4096, 4, 128, true>, 4096, 4, 128, mstates, true, "cp.async states", false);
  PLAIN(4096, 4, 128);
  printf("copy again: %.4f ms\n",
         time_it([&] { CK(cudaMemcpyAsync(out, x, n * 2, cudaMemcpyDeviceToDevice)); }));
  printf(all_ok ? "ALL VERIFIED\n" : "SOME FAILED\n");
  return all_ok ? 0 : 1;
}
