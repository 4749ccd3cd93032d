// Chapter 10: packed sequences and states, as this chapter's kernels (chapter 08's and 09's,
// extended in direct_forward/ and direct_backward/) see them. The kernels ask a sequence policy
// (policy.cuh), for a range of positions at a time, whether every output there counts all W taps
// (the fast path, almost everywhere), is padding, or is mixed; only for a mixed range do they ask
// position by position. The two policies here answer from the inputs the caller already has,
// inside the convolution kernel, so a packed run is one launch, like a plain one (channel-first
// rows of other lengths add a small second one: cf_row_edges.cuh):
//
//   PackedRows   rows of [B, D, L] or [B, L, D] holding several sequences, told apart by seq_idx
//                [B, L] (optional); initial states [B, D, W-1] continue each row's first sequence,
//                final states are its last sequence's last W-1 inputs
//   Varlen       the tokens of N sequences as [total, D] (channel-last), sequence n being tokens
//                cu_seqlens[n] .. cu_seqlens[n+1]-1; row state_indices[n] of a state cache
//                [C, D, W-1] is its initial state (when read) and receives its final state, in place
//
// The states touch only the edges of a sequence: its first W-1 outputs (their windows reach into
// the state) and its last W-1 inputs. The convolution's main path leaves the first W-1 outputs of a
// sequence that starts from a state to the policy (they are flagged kEdge), which computes them
// and writes the final states: in the channel-last forward, from threads of their own at the head
// of its grid (edge_work); in its backward, from the thread that holds the sequence's first
// position; in channel-first rows, from cf_row_edges, after the convolution.
#pragma once

#include <cstdint>

#include "chapters/08_direct_forward/cl_vector.cuh"
#include "chapters/10_packed_sequences/policy.cuh"
#include "common/vec.cuh"
#include "common/warp.cuh"

namespace conv1d::ch10 {

// The sequence that token t (0 <= t < cu_seqlens[n]) belongs to: the last n with cu_seqlens[n] <= t
// (a length-0 sequence shares its start with the next one, and holds no token).
__host__ __device__ inline int32_t sequence_of(const int32_t* cu_seqlens, int32_t sequences,
                                               int64_t t) {
  int32_t lo = 0, hi = sequences;  // cu_seqlens[lo] <= t < cu_seqlens[hi]
  while (hi - lo > 1) {
    const int32_t mid = (lo + hi) / 2;
    if (cu_seqlens[mid] <= t)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

// The first sequence that starts at or after t (`sequences` when none does).
__host__ __device__ inline int32_t first_starting_at(const int32_t* cu_seqlens, int32_t sequences,
                                                     int64_t t) {
  int32_t lo = 0, hi = sequences;  // the answer lies in [lo, hi]
  while (lo < hi) {
    const int32_t mid = (lo + hi) / 2;
    if (cu_seqlens[mid] < t)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

// a[i], i known only at run time, without sending `a` to local memory (a few selects).
template <int M, class V>
__device__ __forceinline__ V pick(const V (&a)[M], int64_t i) {
  V v = a[0];
#pragma unroll
  for (int m = 1; m < M; ++m)
    if (i == m) v = a[m];
  return v;
}

// The states of N neighbouring channels, st[i][j] for channel d0+i: in memory ([.., D, W-1]) their
// N (W-1) values lie side by side from base + at (zeros when `base` is null: no states). Read and
// written with 16-byte accesses where they fill whole ones and the address allows it (8 channels
// of a 16-bit type, 4 of fp32), else a value at a time. A warp's 2-byte stores of a row of states are
// each one request to the L2 for a 2-byte piece of every lane's 48 bytes: as 24 of them, the edge
// work of 64 sequences cost the varlen forward more than as 3 whole ones
// (docs/10_packed_sequences.md, the eleventh version).
template <class T, int N, int W>
__device__ __forceinline__ void load_states(const T* base, int64_t at, T (&st)[N][W - 1]) {
  constexpr int kCount = N * (W - 1), kPer = kPer16<T>;
  if constexpr (kCount % kPer == 0) {
    if (base && aligned_to(base + at, 16)) {
#pragma unroll
      for (int q = 0; q < kCount / kPer; ++q) {
        const Vec<T, kPer> v = reinterpret_cast<const Vec<T, kPer>*>(base + at)[q];
#pragma unroll
        for (int e = 0, k = q * kPer; e < kPer; ++e, ++k) st[k / (W - 1)][k % (W - 1)] = v.v[e];
      }
      return;
    }
  }
#pragma unroll
  for (int i = 0; i < N; ++i)
#pragma unroll
    for (int j = 0; j < W - 1; ++j)
      st[i][j] = base ? base[at + i * (W - 1) + j] : from_float<T>(0.0f);
}
template <class T, int N, int W>
__device__ __forceinline__ void store_states(T* base, int64_t at, const T (&st)[N][W - 1]) {
  constexpr int kCount = N * (W - 1), kPer = kPer16<T>;
  if constexpr (kCount % kPer == 0) {
    if (aligned_to(base + at, 16)) {
#pragma unroll
      for (int q = 0; q < kCount / kPer; ++q) {
        Vec<T, kPer> v;
#pragma unroll
        for (int e = 0, k = q * kPer; e < kPer; ++e, ++k) v.v[e] = st[k / (W - 1)][k % (W - 1)];
        reinterpret_cast<Vec<T, kPer>*>(base + at)[q] = v;
      }
      return;
    }
  }
#pragma unroll
  for (int i = 0; i < N; ++i)
#pragma unroll
    for (int j = 0; j < W - 1; ++j) base[at + i * (W - 1) + j] = st[i][j];
}

// The window of a sequence's output j < W-1 (counted from its start) in channel i: its first
// inputs head[] (channels side by side) and, before them, the W-1 state values st.
template <int W, class T, int N>
__device__ __forceinline__ void edge_window(const Vec<T, N> (&head)[W - 1], const T (&st)[W - 1],
                                            int i, int j, float (&in)[W]) {
#pragma unroll
  for (int k = 0; k < W; ++k) {
    const int p = j - (W - 1) + k;  // the input's place from the sequence's start
    in[k] = to_float(p >= 0 ? head[p >= 0 ? p : 0].v[i] : st[(W - 1) + p]);
  }
}

// [docs:ch10_span]
// The ids of positions lo-(W-1) .. lo+kCount-1 of one row of `len` (those before len) at once:
// full when they are all one non-negative id, padding when the kOwn from lo on are all negative,
// mixed otherwise. Sixteen bytes a load where the row allows it: the ids are read by every channel
// of the row, so they come from the caches, but each load is an instruction.
template <int W, int kOwn, int kCount>
__device__ __forceinline__ Span scan_ids(const int32_t* ids, int64_t lo, int64_t len) {
  constexpr int kBack = W - 1, kLoads = (4 + kCount + 3) / 4;  // from lo - 4, in fours
  if (lo >= len) return Span::full;  // past the row: no outputs, nothing to read
  bool same = true, pad = true;
  int32_t ref;
  if (lo >= 4 && lo - 4 + 4 * kLoads <= len &&
      reinterpret_cast<uintptr_t>(ids + lo - 4) % 16 == 0) {
    int32_t v[4 * kLoads];
#pragma unroll
    for (int q = 0; q < kLoads; ++q) {
      const Vec<int32_t, 4> four = *reinterpret_cast<const Vec<int32_t, 4>*>(ids + lo - 4 + 4 * q);
#pragma unroll
      for (int e = 0; e < 4; ++e) v[4 * q + e] = four.v[e];
    }
    ref = v[4 - kBack];
#pragma unroll
    for (int i = 4 - kBack; i < 4 + kCount; ++i) {
      same = same && v[i] == ref;
      if (i >= 4 && i < 4 + kOwn) pad = pad && v[i] < 0;
    }
  } else {
    ref = ids[lo - kBack];
#pragma unroll
    for (int i = 0; i < kBack + kCount; ++i) {
      const int64_t p = lo - kBack + i;
      if (p >= len) break;
      const int32_t v = ids[p];
      same = same && v == ref;
      if (i >= kBack && i < kBack + kOwn) pad = pad && v < 0;
    }
  }
  return same && ref >= 0 ? Span::full : pad ? Span::padding : Span::mixed;
}
// [/docs:ch10_span]

// The same, by kLanes consecutive lanes of a warp that share lo (`lane`: which of them), each reading
// every kLanes-th id: a few ids a lane instead of all of them, and the verdicts combined by
// shuffles (every lane of the warp must call it).
template <int W, int kOwn, int kCount, int kLanes>
__device__ __forceinline__ Span scan_ids_by(const int32_t* ids, int64_t lo, int64_t len, int lane) {
  constexpr int kBack = W - 1, kEach = (kBack + kCount + kLanes - 1) / kLanes;
  const bool inside = lo < len;  // (a tile past the row has no outputs: it reads nothing, and is
                                 // full; its lanes still take part in the shuffles below)
  const int32_t ref = inside ? ids[lo - kBack] : -1;
  bool same = true, pad = true;
#pragma unroll
  for (int e = 0; e < kEach; ++e) {
    const int i = lane + e * kLanes;  // position lo - kBack + i
    const int64_t p = lo - kBack + i;
    if (i < kBack + kCount && p < len) {
      const int32_t v = ids[p];
      same = same && v == ref;
      if (i >= kBack && i < kBack + kOwn) pad = pad && v < 0;
    }
  }
  unsigned votes = (same ? 1u : 0u) | (pad ? 2u : 0u);
#pragma unroll
  for (int m = 1; m < kLanes; m <<= 1) votes &= shuffle(votes, (threadIdx.x % kWarpLanes) ^ m);
  if (!inside) return Span::full;
  return votes & 1u && ref >= 0 ? Span::full : votes & 2u ? Span::padding : Span::mixed;
}

// dz at a sequence's first W-1 positions (start + m, m < W-1) in N neighbouring channels, from
// values already in registers: its first inputs head[m] and dout there gs[m] (channels side by
// side), the state st[i] of channel i before it and the positions' flags fl[m] (0: past the
// sequence's end). The taps that do not count take 0, as in the walk.
template <int W, class T, int N>
__device__ __forceinline__ void edge_dz(const Filter<W> (&f)[N], const Vec<T, N> (&head)[W - 1],
                                        const Vec<T, N> (&gs)[W - 1], const T (&st)[N][W - 1],
                                        const unsigned (&fl)[W - 1], bool silu,
                                        float (&dz)[N][W - 1]) {
#pragma unroll
  for (int m = 0; m < W - 1; ++m) {
    const unsigned taps = taps_with_state<W>(fl[m]);
#pragma unroll
    for (int i = 0; i < N; ++i) {
      float in[W];
      edge_window<W>(head, st[i], i, m, in);
      dz[i][m] = taps ? dz_masked<W>(f[i], in, taps, to_float(gs[m].v[i]), silu) : 0.0f;
    }
  }
}

// The first W-1 inputs and douts of N neighbouring channels from position `start` of x and dout
// (row p at [p * dim]; zeros from `end` on), each a load that waits on no other.
template <int W, class T, int N>
__device__ __forceinline__ void edge_rows(const T* x, const T* g, int64_t dim, int64_t start,
                                          int64_t end, Vec<T, N> (&head)[W - 1],
                                          Vec<T, N> (&gs)[W - 1]) {
#pragma unroll
  for (int m = 0; m < W - 1; ++m) {
    const bool in = start + m < end;
    head[m] = in ? *reinterpret_cast<const Vec<T, N>*>(x + (start + m) * dim) : zero_vec<T, N>();
    gs[m] = in ? *reinterpret_cast<const Vec<T, N>*>(g + (start + m) * dim) : zero_vec<T, N>();
  }
}

// The gradient of a sequence's state, input j - (W-1) before its start, from dz at its first W-1
// positions (dz[m] at start + m; `reaches(m)`: does the window of that output include the inputs
// before the start): what the final states pass straight back first (`from_final`, a sequence
// shorter than W-1), then w[k] dz[j - k] for k ascending, the order in which one pass over a
// longer row would add the same terms into dx.
template <int W, class Reaches>
__device__ __forceinline__ float state_gradient(const Filter<W>& f, const float* dz, int j,
                                                float from_final, Reaches&& reaches) {
  float acc = from_final;
#pragma unroll
  for (int k = 0; k < W; ++k)
    if (k <= j && reaches(j - k)) acc += f.w[k] * dz[j - k];
  return acc;
}

// ---------------------------------------------------------------------------------------------
// Rows with several sequences each.

template <class T>
struct PackedRows {
  const int32_t* seq_idx = nullptr;  // [B, L]; nullptr: one sequence per row
  int64_t seqlen = 0, dim = 0;
  const T* initial_states = nullptr;     // [B, D, W-1], or nullptr (zeros)
  T* final_states = nullptr;             // [B, D, W-1] out (forward), or nullptr
  const float* dfinal_states = nullptr;  // [B, D, W-1] (backward), or nullptr
  float* dinitial_states = nullptr;      // [B, D, W-1] out (backward), or nullptr

  __device__ __forceinline__ const int32_t* ids(int64_t b) const { return seq_idx + b * seqlen; }
  __device__ __forceinline__ const T* state(int64_t b, int64_t d, int width) const {
    return initial_states ? initial_states + (b * dim + d) * (width - 1) : nullptr;
  }

  // Does input p (negative: an initial state) belong to the row's last sequence, whose last W-1
  // inputs are the final states?
  __device__ __forceinline__ bool in_final(int64_t b, int64_t p) const {
    if (!seq_idx) return true;
    const int32_t last = ids(b)[seqlen - 1];
    return last >= 0 && ids(b)[p >= 0 ? p : 0] == last;
  }

  // [docs:ch10_rows_flags]
  // The flags of output t of row b: tap k counts when its input has t's id; padding keeps none.
  template <int W>
  __device__ __forceinline__ unsigned flags_here(int64_t b, int64_t t) const {
    if (!seq_idx) return edges<W>(b, t, taps_inside<W>(t), false, false);
    const int32_t* id = ids(b);
    const int32_t own = id[t];
    unsigned f = 0;
#pragma unroll
    for (int k = 0; k < W; ++k) {
      const int64_t p = t - (W - 1) + k;
      f |= (own >= 0 && p >= 0 && id[p] == own ? 1u : 0u) << k;
    }
    return edges<W>(b, t, f, initial_states && own == id[0],
                    dfinal_states && own == id[seqlen - 1]);
  }

  // The flags of outputs lo .. lo+N-1 of row b (0 past the row). Away from the row's edges, from
  // the ids in a few 16-byte loads (vector_flags); at the edges one output at a time, out of line.
  template <int W, int N>
  __device__ __forceinline__ TokenFlags<N> flags_of(int64_t b, int64_t lo) const {
    if (seq_idx && lo >= W - 1 && !near_final(lo + N, W)) return vector_flags<W, N>(b, lo);
    return edge_flags_of<W, N>(b, lo);
  }
  // (Out of line and one at a time, as all the rare work: inline, or unrolled, its registers would
  // count against every thread.)
  template <int W, int N>
  __device__ __noinline__ TokenFlags<N> edge_flags_of(int64_t b, int64_t lo) const {
    TokenFlags<N> m = TokenFlags<N>::filled(0);
#pragma unroll 1
    for (int i = 0; i < N; ++i)
      if (lo + i < seqlen) m.put(i, flags_here<W>(b, lo + i));
    return m;
  }

  // The edge bits of output t with taps `f`: the inputs before t = 0 belong to the row's first
  // sequence (the initial states are its; `with_first`: t belongs to it), the final states to its
  // last (`with_last`).
  template <int W>
  __device__ __forceinline__ unsigned edges(int64_t, int64_t t, unsigned f, bool with_first,
                                            bool with_last) const {
    if (!f) return 0;
    if (initial_states && t < W - 1 && (!seq_idx || with_first)) f |= kEdge;
    if (dfinal_states && t >= seqlen - (W - 1) && (!seq_idx || with_last))
      f |= unsigned(t - (seqlen - (W - 1)) + 1) << kFinalShift;
    return f;
  }
  // [/docs:ch10_rows_flags]

  // One output's flags (where outputs are taken one by one; out of line, as all the rare work).
  template <int W>
  __device__ __noinline__ unsigned flags(int64_t b, int64_t t) const {
    return flags_here<W>(b, t);
  }
  template <int W, int kOwn, int kAhead>
  __device__ __forceinline__ Span span(int64_t b, int64_t lo) const {
    if (lo < W - 1) return Span::mixed;  // the row's first outputs reach before t = 0
    if (dfinal_states && lo + kOwn + kAhead > seqlen - (W - 1))
      return Span::mixed;  // the last inputs' dx also receive the final states' gradient
    if (!seq_idx) return Span::full;
    return scan_ids<W, kOwn, kOwn + kAhead>(ids(b), lo, seqlen);
  }

  // A mixed tile's batches (chapter 08's cl_staged): each asks the ids near it, as a tile does.
  template <int W, int kBatch>
  struct Batches {
    const PackedRows& rows;
    int64_t b;
    __device__ __forceinline__ Span span(int64_t t) const {
      return rows.template span<W, kBatch, 0>(b, t);
    }
    __device__ __forceinline__ TokenFlags<kBatch> flags(int64_t t) const {
      return rows.template flags_of<W, kBatch>(b, t);
    }
  };
  template <int W, int kBatch>
  __device__ __forceinline__ Batches<W, kBatch> batches(int64_t b, int64_t, Span) const {
    return {*this, b};
  }

  // Do outputs before `hi` reach the inputs whose dx receives the final states' gradient?
  __device__ __forceinline__ bool near_final(int64_t hi, int width) const {
    return dfinal_states && hi > seqlen - (width - 1);
  }

  // The flags of a channel-first vector's N outputs lo .. lo+N-1 away from the row's start (lo >=
  // W-1, no edges), inline: its ids in 16-byte loads where the row allows (from the caches: the
  // span just read them), compared in registers.
  template <int W, int N>
  __device__ __forceinline__ TokenFlags<N> vector_flags(int64_t b, int64_t lo) const {
    constexpr int kLoads = (4 + N + 3) / 4;  // positions lo-4 .. lo+N-1
    const int32_t* id = ids(b);
    int32_t v[4 * kLoads];
    if (lo >= 4 && lo - 4 + 4 * kLoads <= seqlen &&
        reinterpret_cast<uintptr_t>(id + lo - 4) % 16 == 0) {
#pragma unroll
      for (int q = 0; q < kLoads; ++q) {
        const Vec<int32_t, 4> four = *reinterpret_cast<const Vec<int32_t, 4>*>(id + lo - 4 + 4 * q);
#pragma unroll
        for (int e = 0; e < 4; ++e) v[4 * q + e] = four.v[e];
      }
    } else {
#pragma unroll
      for (int i = 0; i < 4 * kLoads; ++i) {
        const int64_t p = lo - 4 + i;
        v[i] = p >= 0 && p < seqlen ? id[p] : -1;
      }
    }
    TokenFlags<N> m = TokenFlags<N>::filled(0);
#pragma unroll
    for (int i = 0; i < N; ++i) {
      const int32_t own = v[4 + i];
      unsigned f = 0;
#pragma unroll
      for (int k = 0; k < W; ++k) f |= (own >= 0 && v[4 + i - (W - 1) + k] == own ? 1u : 0u) << k;
      m.put(i, f);
    }
    return m;
  }

  // span, computed by kLanes consecutive lanes that share lo together (every lane of the warp must
  // call it).
  template <int W, int kOwn, int kAhead, int kLanes>
  __device__ __forceinline__ Span span_by(int64_t b, int64_t lo, int lane) const {
    const bool short_cut = lo < W - 1 || (dfinal_states && lo + kOwn + kAhead > seqlen - (W - 1));
    if (!seq_idx) return short_cut ? Span::mixed : Span::full;
    const Span s =
        scan_ids_by<W, kOwn, kOwn + kAhead, kLanes>(ids(b), lo < W - 1 ? W - 1 : lo, seqlen, lane);
    return short_cut ? Span::mixed : s;
  }

  // Output t of row b, channel d, from memory by its flags `fl` (flags<W>(b, t)): the taps in t's
  // sequence and, for an edge output (kEdge), the initial states before t = 0; x_row: position p
  // of that row and channel at x_row[p * stride]. The same arithmetic as the convolution's masked
  // outputs, so a row computed in chunks gives the same bits.
  template <int W>
  __device__ __forceinline__ float output_from_memory(const T* x_row, int64_t stride,
                                                      const Filter<W>& f, int64_t b, int64_t d,
                                                      int64_t t, unsigned fl, bool silu) const {
    float in[W];
#pragma unroll
    for (int k = 0; k < W; ++k) {
      const int64_t p = t - (W - 1) + k;
      in[k] = p >= 0       ? to_float(x_row[p * stride])
              : fl & kEdge ? to_float(state(b, d, W)[(W - 1) + p])
                           : 0.0f;  // (a tap that does not count)
    }
    return output_or_padding<W>(f, in, taps_with_state<W>(fl), silu);
  }

  // The final states of row b, channel d: the last W-1 inputs of its last sequence (0 for inputs of
  // an earlier one, all 0 when the row ends in padding). Copies of inputs, so the same bits.
  template <int W>
  __device__ __forceinline__ void write_final(const T* x_row, int64_t stride, int64_t b,
                                              int64_t d) const {
    if (!final_states) return;
    const T* st = state(b, d, W);
    T v[W - 1];
#pragma unroll
    for (int j = 0; j < W - 1; ++j) {
      const int64_t p = seqlen - (W - 1) + j;
      v[j] = !in_final(b, p) ? from_float<T>(0.0f)
             : p >= 0        ? x_row[p * stride]
             : st            ? st[(W - 1) + p]
                             : from_float<T>(0.0f);
    }
#pragma unroll
    for (int j = 0; j < W - 1; ++j) final_states[(b * dim + d) * (W - 1) + j] = v[j];
  }

  // Channel-last tiles (chapter 09's backward): does a tile have edge work? The first tile of a
  // row does (checked inline: the work itself is out of line).
  __device__ __forceinline__ bool owns_edges(int64_t t0, int, bool) const { return t0 == 0; }

  // [docs:ch10_rows_edge_work]
  // The channel-last forward's edge work, in threads of their own at the head of its grid
  // (cl_tiled): a unit each row when there are states, a thread each unit and N channels. The
  // row's first W-1 outputs where they read the initial states (the walk left them alone), then
  // its final states. Every value is read before any is written, so the thread waits on memory
  // about once, not once a value; and at the head of the grid its wait overlaps the first tiles',
  // where in the tile that held the row's start it could be the kernel's last.
  __host__ __device__ int64_t edge_units(int64_t batch) const {
    return initial_states || final_states ? batch : 0;
  }
  template <int W, int N>
  __device__ __noinline__ void edge_work(const DirectArgs<T> a, int64_t b, int64_t d0) const {
    const T* x = a.x + b * seqlen * dim + d0;
    Vec<T, N> head[W - 1], tail[W - 1];  // inputs 0 .. W-2, and the row's last W-1
    unsigned fl[W - 1];                  // the first outputs' flags
    bool last[W - 1];                    // the last inputs: in the row's last sequence?
#pragma unroll
    for (int j = 0; j < W - 1; ++j) {
      const int64_t p = seqlen - (W - 1) + j;
      head[j] = j < seqlen ? *reinterpret_cast<const Vec<T, N>*>(x + j * dim) : zero_vec<T, N>();
      tail[j] = p >= 0 ? *reinterpret_cast<const Vec<T, N>*>(x + p * dim) : zero_vec<T, N>();
      fl[j] = initial_states && j < seqlen ? flags_here<W>(b, j) : 0u;
      last[j] = final_states && in_final(b, p);
    }
    T st[N][W - 1];  // the initial states of channels d0 .. d0+N-1
    load_states<T, N, W>(initial_states, (b * dim + d0) * (W - 1), st);
    Filter<W> f[N];
    ch08::load_filters<W, N>(a, d0, f);

#pragma unroll
    for (int t = 0; t < W - 1; ++t) {
      if (!(fl[t] & kEdge)) continue;
      Vec<T, N> o;
#pragma unroll
      for (int i = 0; i < N; ++i) {
        float in[W];
        edge_window<W>(head, st[i], i, t, in);
        o.v[i] = from_float<T>(output_or_padding<W>(f[i], in, taps_with_state<W>(fl[t]), a.silu));
      }
      *reinterpret_cast<Vec<T, N>*>(a.out + (b * seqlen + t) * dim + d0) = o;
    }
    if (final_states) {
      T fin[N][W - 1];
#pragma unroll
      for (int i = 0; i < N; ++i)
#pragma unroll
        for (int j = 0; j < W - 1; ++j)  // (input seqlen - (W-1) + j, an initial state when < 0)
          fin[i][j] = !last[j]                    ? from_float<T>(0.0f)
                      : seqlen - (W - 1) + j >= 0 ? tail[j].v[i]
                                                  : pick(st[i], seqlen + j);
      store_states<T, N, W>(final_states, (b * dim + d0) * (W - 1), fin);
    }
  }
  // [/docs:ch10_rows_edge_work]

  // ---- Backward (chapter 09's kernels).
  // (Out of line, as all the rare work.)
  template <int W>
  __device__ __noinline__ const T* state_at(int64_t b, int64_t, int64_t d) const {
    return state(b, d, W);
  }
  template <int W>
  __device__ __noinline__ float dfinal_at(int64_t b, int64_t, int64_t d, int j) const {
    return dfinal_states[(b * dim + d) * (W - 1) + j];
  }
  // What final state j' passes straight back to initial state j (a row shorter than W-1, whose
  // final states reach into its initial states).
  template <int W>
  __device__ __forceinline__ float final_to_initial(int64_t b, int64_t d, int j) const {
    const int64_t p = j - (W - 1), first = seqlen - (W - 1);
    return dfinal_states && p >= first && in_final(b, p)
               ? dfinal_states[(b * dim + d) * (W - 1) + (p - first)]
               : 0.0f;
  }

  // The initial states' gradient of row b, channel d, from dz at the row's first positions (dz[t]
  // for t < W-1, `flags_at(t)` their flags): output t's window reaches before t = 0 when it
  // reaches t = 0 itself (tap W-1-t), since the inputs before 0 belong to the sequence at 0.
  // (kLongRow: the row is at least W-1 long, so nothing comes straight from the final states.)
  template <int W, bool kLongRow = false, class FlagsAt>
  __device__ __forceinline__ void row_dinit(int64_t b, int64_t d, const Filter<W>& f,
                                            const float* dz, FlagsAt&& flags_at) const {
    if (!dinitial_states) return;
#pragma unroll
    for (int j = 0; j < W - 1; ++j)
      dinitial_states[(b * dim + d) * (W - 1) + j] = state_gradient<W>(
          f, dz, j, kLongRow ? 0.0f : final_to_initial<W>(b, d, j),
          [&](int t) { return (kLongRow || t < seqlen) && (flags_at(t) >> (W - 1 - t) & 1u); });
  }

  // [docs:ch10_rows_tile_dinit]
  // Channel-last tiles: the first tile of a row computes the row's initial states' gradient from
  // dz at the first W-1 positions again. Every value it needs is asked first, in loads that wait
  // on no other (the inputs and douts of those positions, the states, the filters), and the
  // arithmetic follows. (Asked a channel and a value at a time, they were a chain of waits on
  // memory in the one warp its block waits for.)
  template <int W, int N, class Args>
  __device__ __noinline__ void tile_dinit(const Args a, int64_t b, int64_t d0, int64_t t0, int,
                                          bool) const {
    if (t0 != 0 || !dinitial_states) return;
    const int64_t at = b * seqlen * dim + d0;
    Vec<T, N> head[W - 1], gs[W - 1];
    edge_rows<W>(a.x + at, a.dout + at, dim, 0, seqlen, head, gs);
    unsigned fl[W - 1];
#pragma unroll
    for (int t = 0; t < W - 1; ++t) fl[t] = t < seqlen ? flags_here<W>(b, t) : 0u;
    T st[N][W - 1];
    load_states<T, N, W>(initial_states, (b * dim + d0) * (W - 1), st);
    Filter<W> f[N];
#pragma unroll
    for (int i = 0; i < N; ++i) f[i] = load_filter<W>(a.weight, a.bias, d0 + i);
    float dz[N][W - 1];
    edge_dz<W>(f, head, gs, st, fl, a.silu, dz);
#pragma unroll
    for (int i = 0; i < N; ++i) row_dinit<W>(b, d0 + i, f[i], dz[i], [&](int t) { return fl[t]; });
  }

  // Channel-last walks (chapter 09's step): the states of output t's sequence, and the final
  // states' gradients, channel d's at + d (W-1).
  template <int W>
  __device__ __forceinline__ const T* states_of(int64_t b, int64_t) const {
    return initial_states + b * dim * (W - 1);
  }
  template <int W>
  __device__ __forceinline__ const float* dfinals_of(int64_t b, int64_t) const {
    return dfinal_states + b * dim * (W - 1);
  }
  // [/docs:ch10_rows_tile_dinit]
};

// ---------------------------------------------------------------------------------------------
// Variable-length batches with a state cache.

template <class T>
struct Varlen {
  const int32_t* cu_seqlens = nullptr;     // [N + 1]
  int32_t sequences = 0;                   // N
  const int32_t* state_indices = nullptr;  // [N], or nullptr: sequence n uses cache row n
  int64_t total = 0, dim = 0;              // tokens [total, D]
  const T* states_in = nullptr;  // the cache [C, D, W-1] when sequences start from it, or nullptr
  T* states_out = nullptr;       // the cache, receiving the final states (forward), or nullptr
  const float* dfinal_states = nullptr;  // [C, D, W-1] by cache row (backward), or nullptr
  float* dstates = nullptr;              // [C, D, W-1] out by cache row (backward), or nullptr

  __device__ __forceinline__ int32_t slot(int32_t n) const {
    return state_indices ? state_indices[n] : n;
  }

  // The flags of token t of a sequence of tokens start .. end-1 with cache row s.
  template <int W>
  __device__ __forceinline__ unsigned flags_at(int64_t start, int64_t end, int32_t s,
                                               int64_t t) const {
    unsigned m = 0;
#pragma unroll
    for (int k = 0; k < W; ++k) m |= (t - (W - 1) + k >= start ? 1u : 0u) << k;
    if (states_in && t - start < W - 1 && s >= 0) m |= kEdge;
    if (dfinal_states && end - t <= W - 1 && s >= 0)
      m |= unsigned(t - (end - (W - 1)) + 1) << kFinalShift;
    return m;
  }
  // The flags of token t of sequence n.
  template <int W>
  __device__ __forceinline__ unsigned flags_in(int32_t n, int64_t t) const {
    return flags_at<W>(cu_seqlens[n], cu_seqlens[n + 1], slot(n), t);
  }

  template <int W>
  __device__ __forceinline__ unsigned flags(int64_t, int64_t t) const {
    return flags_in<W>(sequence_of(cu_seqlens, sequences, t), t);
  }

  // A mixed range's flags (out of line: the ranges that need it are few, and its loop would cost
  // every thread registers). One search for the sequence of output lo, then that sequence's bounds
  // and cache row held in registers: memory is read again only where a sequence ends inside the
  // range, not for every output (the walk this replaced read them again for each output, a chain
  // of waits on memory that cost the varlen forward 1.8 points of the copy ceiling).
  template <int W, int N>
  __device__ __noinline__ TokenFlags<N> flags_of(int64_t, int64_t lo) const {
    return flags_walk<W, N>(lo, -1);
  }
  // The same from sequence n, at or before output lo's (Batches, which know it).
  template <int W, int N>
  __device__ __noinline__ TokenFlags<N> flags_from(int64_t lo, int32_t n) const {
    return flags_walk<W, N>(lo, n);
  }
  template <int W, int N>
  __device__ __forceinline__ TokenFlags<N> flags_walk(int64_t lo, int32_t n) const {
    TokenFlags<N> m = TokenFlags<N>::filled(0);
    if (lo >= total) return m;
    if (n < 0) n = sequence_of(cu_seqlens, sequences, lo);
    int64_t start = cu_seqlens[n], end = cu_seqlens[n + 1];
    int32_t s = slot(n);
#pragma unroll
    for (int i = 0; i < N; ++i) {
      const int64_t t = lo + i;
      if (t >= total) break;  // (past the last token: no taps)
      while (end <= t) {      // (t in a later sequence, perhaps past some of length 0)
        start = end;
        end = cu_seqlens[++n + 1];
        s = slot(n);
      }
      m.put(i, flags_at<W>(start, end, s, t));
    }
    return m;
  }

  // [docs:ch10_varlen_span]
  // Full when one sequence holds the whole range and the W-1 inputs before it: the sequence of
  // the first input it reads ends after the range (and, in the backward with final states'
  // gradients, not within W-1 of its end).
  template <int W, int kOwn, int kAhead>
  __device__ __forceinline__ Span span(int64_t, int64_t lo) const {
    if (lo < W - 1) return Span::mixed;
    const int64_t hi = lo + kOwn + kAhead < total ? lo + kOwn + kAhead : total;
    const int64_t end = cu_seqlens[sequence_of(cu_seqlens, sequences, lo - (W - 1)) + 1];
    if (end < hi || (dfinal_states && hi > end - (W - 1))) return Span::mixed;
    return Span::full;
  }
  // [/docs:ch10_varlen_span]
  template <int W, int kOwn, int kAhead, int kLanes>
  __device__ __forceinline__ Span span_by(int64_t b, int64_t lo, int) const {
    return span<W, kOwn, kAhead>(b, lo);
  }

  // A mixed tile's batches (chapter 08's cl_staged), asked in order: the sequence of the first
  // input the batch reads is remembered from the batch before, so a batch reads one bound where
  // the tile's span searched, and a mixed batch's flags start from that sequence.
  template <int W, int kBatch>
  struct Batches {
    const Varlen& v;
    int32_t n;  // the sequence of input t - (W-1) of the last batch asked (t: its first output)
    __device__ __forceinline__ Span span(int64_t t) {
      if (t < W - 1) return Span::mixed;
      if (t - (W - 1) >= v.total) return Span::full;  // (past the end: nothing to write)
      while (v.cu_seqlens[n + 1] <= t - (W - 1)) ++n;
      const int64_t end = v.cu_seqlens[n + 1], hi = t + kBatch < v.total ? t + kBatch : v.total;
      if (end < hi || (v.dfinal_states && hi > end - (W - 1))) return Span::mixed;
      return Span::full;
    }
    __device__ __forceinline__ TokenFlags<kBatch> flags(int64_t t) const {
      return v.template flags_from<W, kBatch>(t, n);
    }
  };
  template <int W, int kBatch>
  __device__ __forceinline__ Batches<W, kBatch> batches(int64_t, int64_t t0, Span tile) const {
    const int64_t first = t0 - (W - 1) > 0 ? t0 - (W - 1) : 0;
    return {*this, tile == Span::mixed ? sequence_of(cu_seqlens, sequences, first) : 0};
  }

  // Channel-last tiles (chapter 09's backward): a tile owns the sequences that start in it (the
  // last tile also those of length 0 at the very end). A full tile owns none but the last one
  // (checked inline: the work itself is out of line).
  __device__ __forceinline__ bool owns_edges(int64_t t0, int rows, bool full) const {
    return !full || t0 + rows >= total;
  }

  // The channel-last forward's edge work, first in its grid as the rows' (PackedRows::edge_work),
  // a unit each sequence: its first W-1 outputs when it starts from its cache row (the walk left
  // them alone), then its final state written back into that row. One thread reads the row and
  // then writes it: in place is safe.
  __host__ __device__ int64_t edge_units(int64_t) const { return states_out ? sequences : 0; }
  template <int W, int N>
  __device__ __noinline__ void edge_work(const DirectArgs<T> a, int64_t n, int64_t d0) const {
    // [docs:ch10_varlen_cache_row]
    const int32_t s = slot(int32_t(n));
    if (s < 0) return;
    const int64_t start = cu_seqlens[n], end = cu_seqlens[n + 1];
    const T* x = a.x + d0;
    Vec<T, N> head[W - 1], tail[W - 1];  // the sequence's first W-1 inputs, and its last
#pragma unroll
    for (int j = 0; j < W - 1; ++j) {
      const int64_t p = end - (W - 1) + j;
      head[j] = start + j < end ? *reinterpret_cast<const Vec<T, N>*>(x + (start + j) * dim)
                                : zero_vec<T, N>();
      tail[j] = p >= start ? *reinterpret_cast<const Vec<T, N>*>(x + p * dim) : zero_vec<T, N>();
    }
    T st[N][W - 1];  // its cache row, channels d0 .. d0+N-1 (zeros: none read)
    load_states<T, N, W>(states_in, (s * dim + d0) * (W - 1), st);
    Filter<W> f[N];
    ch08::load_filters<W, N>(a, d0, f);
    // [/docs:ch10_varlen_cache_row]

    if (states_in)
#pragma unroll
      for (int j = 0; j < W - 1; ++j) {
        if (start + j >= end) break;
        Vec<T, N> o;
#pragma unroll
        for (int i = 0; i < N; ++i) {
          float in[W];
          edge_window<W>(head, st[i], i, j, in);
          o.v[i] = from_float<T>(conv_output<W>(f[i], in, kAllTaps<W>, a.silu));
        }
        *reinterpret_cast<Vec<T, N>*>(a.out + (start + j) * dim + d0) = o;
      }
    T fin[N][W - 1];
#pragma unroll
    for (int i = 0; i < N; ++i)
#pragma unroll
      for (int j = 0; j < W - 1; ++j)  // (input end - (W-1) + j, a state value before `start`)
        fin[i][j] = end - (W - 1) + j >= start ? tail[j].v[i] : pick(st[i], end - start + j);
    store_states<T, N, W>(states_out, (s * dim + d0) * (W - 1), fin);
  }

  // ---- Backward (chapter 09's kernels).
  // The cache rows of output t's sequence (out of line: a search), channel d's at + d (W-1).
  template <int W>
  __device__ __noinline__ const T* states_of(int64_t, int64_t t) const {
    return states_in + int64_t(slot(sequence_of(cu_seqlens, sequences, t))) * dim * (W - 1);
  }
  template <int W>
  __device__ __noinline__ const float* dfinals_of(int64_t, int64_t t) const {
    return dfinal_states + int64_t(slot(sequence_of(cu_seqlens, sequences, t))) * dim * (W - 1);
  }

  // Channel-last tiles: for each sequence that starts in this tile (as tile_edges) and has a cache
  // row, that row's gradient: dz at the sequence's first W-1 positions again (they may lie in the
  // next tile), every value asked first as in PackedRows::tile_dinit, and what the final state's
  // gradient passes straight back (a sequence shorter than W-1; all of it for one of length 0).
  template <int W, int N, class Args>
  __device__ __noinline__ void tile_dinit(const Args a, int64_t, int64_t d0, int64_t t0, int rows,
                                          bool full) const {
    const int64_t t_end = t0 + rows;
    if (!dstates || (full && t_end < total)) return;
    Filter<W> f[N];
#pragma unroll
    for (int i = 0; i < N; ++i) f[i] = load_filter<W>(a.weight, a.bias, d0 + i);
    for (int32_t n = first_starting_at(cu_seqlens, sequences, t0); n < sequences; ++n) {
      const int64_t start = cu_seqlens[n], end = cu_seqlens[n + 1];
      if (start >= t_end && !(start == total && t_end >= total)) break;
      const int32_t s = slot(n);
      if (s < 0) continue;
      const int64_t row = (s * dim + d0) * (W - 1);  // channel d0+i's at row + i (W-1)
      Vec<T, N> head[W - 1], gs[W - 1];
      edge_rows<W>(a.x + d0, a.dout + d0, dim, start, end, head, gs);
      unsigned fl[W - 1];
#pragma unroll
      for (int m = 0; m < W - 1; ++m)
        fl[m] = start + m < end ? flags_at<W>(start, end, s, start + m) : 0u;
      T st[N][W - 1];
      load_states<T, N, W>(states_in, row, st);
      float dz[N][W - 1];
      edge_dz<W>(f, head, gs, st, fl, a.silu, dz);
#pragma unroll
      for (int i = 0; i < N; ++i)
#pragma unroll
        for (int j = 0; j < W - 1; ++j) {
          const int64_t p = start - (W - 1) + j;  // the input this state value stands for
          const float from_final = dfinal_states && p >= end - (W - 1)
                                       ? dfinal_states[row + i * (W - 1) + (p - (end - (W - 1)))]
                                       : 0.0f;
          dstates[row + i * (W - 1) + j] =
              state_gradient<W>(f[i], dz[i], j, from_final, [&](int m) { return start + m < end; });
        }
    }
  }
};

}  // namespace conv1d::ch10
