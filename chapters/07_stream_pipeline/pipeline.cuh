// Chapter 07: the whole forward pass as a pipeline of chunks on several streams.
//
//   per run, on stream 0:   upload weight (and bias), expand Bw (chapter 02's kernel); fork
//   per chunk, round-robin on S streams:
//     h2d        2-D copy of x[b, :, t0-(W-1) .. t1) (channel-first, pitch L) into the stream's buffer
//     img2col_channel_first   -> A [n, W*D]                     (this chapter)
//     wmma_gemm_sparse        -> C [n, D] + bias + SiLU        (chapter 05)
//     time_to_channel_first   -> out chunk [D, n]              (this chapter)
//     d2h        2-D copy into out[b, :, t0 .. t1)
//   join the streams back into stream 0.
//
// A chunk's stages run in order on its stream; chunks on different streams overlap, so while chunk i
// computes, chunk i+1 can arrive and chunk i-1 leave (the H2D and D2H copy engines are separate).
// Each stream owns its buffers, allocated once: chunk i+S reuses chunk i's only after chunk i left.
//
// Variants: pipelined (S streams), serial (the same chunks on one stream: nothing overlaps), graph
// (the pipelined work captured once into a CUDA graph and replayed; pinned host memory only).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "chapters/02_gpu_preprocess/preprocess_kernels.cuh"
#include "chapters/05_wmma_gemm/wmma_sparse.cuh"
#include "chapters/07_stream_pipeline/layout_kernels.cuh"
#include "common/buffers.h"
#include "common/phases.h"
#include "common/runner.h"

namespace conv1d::ch07 {

// ---------------------------------------------------------------------------------------------
// The chunks.

struct Chunk {
  int64_t b, t0, t1;  // batch row, positions [t0, t1)
  int stream;         // index of the stream it runs on
};

struct ChunkPlan {
  int64_t per_row = 1;  // chunks per batch row along L
  int64_t len = 1;      // positions per chunk (the last of a row may be shorter)
  int streams = 1;
  std::vector<Chunk> chunks;
};

// `per_row` <= 0 picks enough chunks per row for at least 8 in all, so that 4 streams have work to
// overlap even at small batches. Chunks never come out empty: per_row is cut to what L allows.
inline ChunkPlan plan_chunks(int64_t batch, int64_t seqlen, int streams, int64_t per_row) {
  ChunkPlan p;
  if (per_row <= 0) per_row = ceil_div(8, batch);
  per_row = std::clamp<int64_t>(per_row, 1, seqlen);
  p.len = ceil_div(seqlen, per_row);
  p.per_row = ceil_div(seqlen, p.len);
  p.streams = std::max(1, streams);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t j = 0; j < p.per_row; ++j) {
      const int64_t t0 = j * p.len;
      p.chunks.push_back(
          {b, t0, std::min(seqlen, t0 + p.len), static_cast<int>(p.chunks.size() % p.streams)});
    }
  return p;
}

// ---------------------------------------------------------------------------------------------
// Streams and events, owned.

class Streams {
 public:
  explicit Streams(int n) : s_(n), join_(n) {
    for (int i = 0; i < n; ++i) {
      // Non-blocking: the streams do not wait for the legacy default stream, nor it for them.
      GPU_CHECK(cudaStreamCreateWithFlags(&s_[i], cudaStreamNonBlocking));
      GPU_CHECK(cudaEventCreateWithFlags(&join_[i], cudaEventDisableTiming));
    }
    GPU_CHECK(cudaEventCreateWithFlags(&fork_, cudaEventDisableTiming));
  }
  ~Streams() {
    for (cudaStream_t s : s_) cudaStreamDestroy(s);
    for (cudaEvent_t e : join_) cudaEventDestroy(e);
    cudaEventDestroy(fork_);
  }
  Streams(const Streams&) = delete;
  Streams& operator=(const Streams&) = delete;
  int size() const { return static_cast<int>(s_.size()); }
  cudaStream_t operator[](int i) const { return s_[i]; }
  // Streams 1.. wait for what stream 0 has enqueued so far.
  void fork() const {
    GPU_CHECK(cudaEventRecord(fork_, s_[0]));
    for (int i = 1; i < size(); ++i) GPU_CHECK(cudaStreamWaitEvent(s_[i], fork_, 0));
  }
  // Stream 0 waits for everything enqueued on the others (a captured graph must end joined).
  void join() const {
    for (int i = 1; i < size(); ++i) {
      GPU_CHECK(cudaEventRecord(join_[i], s_[i]));
      GPU_CHECK(cudaStreamWaitEvent(s_[0], join_[i], 0));
    }
  }

 private:
  std::vector<cudaStream_t> s_;
  std::vector<cudaEvent_t> join_;
  cudaEvent_t fork_ = nullptr;
};

// ---------------------------------------------------------------------------------------------
// One pipeline: its plan, its streams, its device buffers (allocated at first use, then reused).

struct Slot {  // one stream's buffers, sized for the longest chunk
  DeviceBuffer x, a, c, out;
};

// Where one run reads and writes on the host: channel-first [B, D, L], fp16 bits.
struct HostIo {
  const uint16_t* x = nullptr;
  uint16_t* out = nullptr;
  const uint16_t* weight = nullptr;  // [D, W]
  const uint16_t* bias = nullptr;    // [D] or nullptr
};

class Pipeline {
 public:
  Pipeline(const ConvShape& shape, bool silu, int streams, int64_t per_row)
      : shape_(shape),
        silu_(silu),
        plan_(plan_chunks(shape.batch, shape.seqlen, streams, per_row)),
        streams_(plan_.streams) {}
  ~Pipeline() {
    if (exec_) cudaGraphExecDestroy(exec_);
    if (graph_) cudaGraphDestroy(graph_);
  }
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  const ChunkPlan& plan() const { return plan_; }

  // Device bytes the buffers take (for the memory check before anything is allocated).
  static int64_t device_bytes(const ConvShape& s, int streams, int64_t per_row) {
    const ChunkPlan p = plan_chunks(s.batch, s.seqlen, streams, per_row);
    const int64_t slot = s.dim * img2col_pitch(p.len) + p.len * s.width * s.dim + p.len * s.dim +
                         s.dim * out_pitch(p.len);
    return 2 * (p.streams * slot + s.width * s.dim * s.dim + s.dim * (s.width + 1));
  }

  // One run of the whole forward pass. With `rec`, every step is recorded (stage by stage, on its
  // stream); the first run also allocates, recorded as such. `graph`: replay the captured work.
  void run(const HostIo& io, PhaseRecorder& rec, bool poison, bool graph) {
    if (slots_.empty()) rec.alloc("allocate buffers (first run only)", [&] { allocate(); });
    if (graph && (!exec_ || captured_io_.x != io.x || captured_io_.out != io.out ||
                  captured_io_.weight != io.weight || captured_io_.bias != io.bias))
      rec.host("capture graph (first run only)", [&] { capture(io); });
    if (poison) poison_buffers();
    if (graph) {
      // The copies and kernels of a replay cannot be told apart by events from outside the graph:
      // one record for all of it.
      rec.async(Category::kernel, "graph replay (copies + kernels)", streams_[0], 0,
                [&] { GPU_CHECK(cudaGraphLaunch(exec_, streams_[0])); });
    } else {
      enqueue(io, &rec);
    }
  }

 private:
  void allocate() {
    const int64_t D = shape_.dim, W = shape_.width, n = plan_.len;
    for (int s = 0; s < plan_.streams; ++s) {
      Slot sl;
      sl.x = DeviceBuffer(2 * D *
                          img2col_pitch(n));  // rows padded so the layout kernels move 16 bytes
      sl.a = DeviceBuffer(2 * n * W * D);
      sl.c = DeviceBuffer(2 * n * D);
      sl.out = DeviceBuffer(2 * D * out_pitch(n));
      slots_.push_back(std::move(sl));
    }
    weight_ = DeviceBuffer(2 * D * W);
    bias_ = DeviceBuffer(2 * D);
    bw_ = DeviceBuffer(2 * W * D * D);
  }

  // Verification runs: NaN everywhere a stale value could hide (every byte 0xFF is an fp16 NaN).
  void poison_buffers() {
    for (Slot& sl : slots_)
      for (DeviceBuffer* b : {&sl.x, &sl.a, &sl.c, &sl.out}) b->poison(streams_[0]);
    bw_.poison(streams_[0]);
  }

  void capture(const HostIo& io) {
    if (exec_) GPU_CHECK(cudaGraphExecDestroy(exec_));
    if (graph_) GPU_CHECK(cudaGraphDestroy(graph_));
    exec_ = nullptr;
    graph_ = nullptr;
    GPU_CHECK(cudaStreamBeginCapture(streams_[0], cudaStreamCaptureModeThreadLocal));
    enqueue(io, nullptr);
    GPU_CHECK(cudaStreamEndCapture(streams_[0], &graph_));
    GPU_CHECK(cudaGraphInstantiateWithFlags(&exec_, graph_, 0));
    captured_io_ = io;
  }

  // A stage on stream `s`: recorded with device events when `rec` is given (not while capturing).
  template <class F>
  void stage(PhaseRecorder* rec, Category c, const char* name, int s, F&& f) {
    if (rec)
      rec->async(c, name, streams_[s], s, f);
    else
      f();
  }

  // [docs:enqueue_chunks]
  void enqueue(const HostIo& io, PhaseRecorder* rec) {
    const int64_t D = shape_.dim, L = shape_.seqlen, W = shape_.width;
    const int64_t x_pitch = img2col_pitch(plan_.len),
                  o_pitch = out_pitch(plan_.len);  // device rows
    const size_t e = sizeof(uint16_t);
    stage(rec, Category::h2d, "h2d weight", 0, [&] {
      GPU_CHECK(cudaMemcpyAsync(weight_.get(), io.weight, e * D * W, cudaMemcpyHostToDevice,
                                streams_[0]));
      if (io.bias)
        GPU_CHECK(
            cudaMemcpyAsync(bias_.get(), io.bias, e * D, cudaMemcpyHostToDevice, streams_[0]));
    });
    stage(rec, Category::kernel, "expand_weights", 0, [&] {
      launch_expand_weights(weight_.get<Half>(), bw_.get<Half>(), D, static_cast<int>(W),
                            streams_[0]);
    });
    streams_.fork();
    for (const Chunk& ch : plan_.chunks) {
      const Slot& sl = slots_[ch.stream];
      const cudaStream_t s = streams_[ch.stream];
      const int64_t n = ch.t1 - ch.t0;
      const int64_t halo = std::min<int64_t>(W - 1, ch.t0);  // inputs before t0 that exist
      const int skip = static_cast<int>(W - 1 - halo);       // buffer columns before t = 0
      // x[b, :, t0 - halo .. t1): D rows of n + halo elements, L apart on the host.
      stage(rec, Category::h2d, "h2d x chunk", ch.stream, [&] {
        GPU_CHECK(cudaMemcpy2DAsync(sl.x.get<uint16_t>() + skip, e * x_pitch,
                                    io.x + (ch.b * D) * L + ch.t0 - halo, e * L, e * (n + halo), D,
                                    cudaMemcpyHostToDevice, s));
      });
      stage(rec, Category::kernel, "img2col_channel_first", ch.stream, [&] {
        launch_img2col_channel_first(sl.x.get<uint16_t>(), x_pitch, skip, sl.a.get<uint16_t>(), n,
                                     D, static_cast<int>(W), s);
      });
      const ch05::GemmArgs g{sl.a.get<__half>(),
                             bw_.get<__half>(),
                             sl.c.get<__half>(),
                             io.bias ? bias_.get<__half>() : nullptr,
                             silu_,
                             n,
                             D,
                             W * D};
      stage(rec, Category::kernel, "wmma_gemm_sparse", ch.stream,
            [&] { ch05::launch_wmma_sparse(g, static_cast<int>(W), s); });
      stage(rec, Category::kernel, "time_to_channel_first", ch.stream, [&] {
        launch_time_to_channel_first(sl.c.get<uint16_t>(), sl.out.get<uint16_t>(), o_pitch, n, D,
                                     s);
      });
      // out chunk [D, n] (rows o_pitch apart on the device) into out[b, :, t0 .. t1).
      stage(rec, Category::d2h, "d2h out chunk", ch.stream, [&] {
        GPU_CHECK(cudaMemcpy2DAsync(io.out + (ch.b * D) * L + ch.t0, e * L, sl.out.get<uint16_t>(),
                                    e * o_pitch, e * n, D, cudaMemcpyDeviceToHost, s));
      });
    }
    streams_.join();
  }
  // [/docs:enqueue_chunks]

  ConvShape shape_;
  bool silu_;
  ChunkPlan plan_;
  Streams streams_;
  std::vector<Slot> slots_;
  DeviceBuffer weight_, bias_, bw_;
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
  HostIo captured_io_;
};

// ---------------------------------------------------------------------------------------------
// The host side of the problem, in the memory kind asked for. Weight and bias are tiny and always
// pinned (a captured graph cannot copy from pageable memory).

struct HostData {
  PinnedBuffer x_pinned, out_pinned, weight, bias;
  HostArray out_pageable;
  HostIo io;
  size_t out_bytes = 0;
};

inline std::unique_ptr<HostData> host_data(const FwdProblem& p, bool pinned) {
  auto h = std::make_unique<HostData>();
  h->out_bytes = p.x.bytes();
  h->weight = PinnedBuffer(p.weight.bytes());
  std::memcpy(h->weight.get(), p.weight.data(), p.weight.bytes());
  h->io.weight = h->weight.get<uint16_t>();
  if (p.opt.bias) {
    h->bias = PinnedBuffer(p.bias.bytes());
    std::memcpy(h->bias.get(), p.bias.data(), p.bias.bytes());
    h->io.bias = h->bias.get<uint16_t>();
  }
  if (pinned) {
    h->x_pinned = PinnedBuffer(p.x.bytes());
    std::memcpy(h->x_pinned.get(), p.x.data(), p.x.bytes());
    h->out_pinned = PinnedBuffer(p.x.bytes());
    h->io.x = h->x_pinned.get<uint16_t>();
    h->io.out = h->out_pinned.get<uint16_t>();
  } else {
    h->out_pageable = HostArray(Dtype::fp16, p.x.size());
    h->io.x = static_cast<const uint16_t*>(p.x.data());
    h->io.out = static_cast<uint16_t*>(h->out_pageable.data());
  }
  return h;
}

// The stages of one chunk, as named in the phase records, in the order they run.
inline const std::vector<std::string>& chunk_stages() {
  static const std::vector<std::string> names{"h2d x chunk", "img2col_channel_first",
                                              "wmma_gemm_sparse", "time_to_channel_first",
                                              "d2h out chunk"};
  return names;
}

}  // namespace conv1d::ch07
