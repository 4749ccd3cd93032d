// Chapter 11: the decoding loop. N steps, each reading its own x and writing its own out, the
// cache carried from one step to the next on the device; launched one by one, or captured once
// into a CUDA graph (each launch a kernel node with its own arguments) and replayed with one call.
// The chapter and its tests both run loops through here.
#pragma once

#include <memory>

#include "chapters/11_decode_update/decode.h"
#include "chapters/11_decode_update/update.cuh"
#include "common/buffers.h"
#include "common/timing.h"

namespace conv1d::ch11 {

// Step k of a loop that starts with `first`: the k-th slices of x and out ([N, B, D, T]), and
// positions k*T further on.
template <class T>
StepArgs<T> step_of(StepArgs<T> first, int64_t k) {
  const int64_t one_step = first.batch * first.dim * first.tokens;
  first.x += k * one_step;
  first.out += k * one_step;
  first.position_offset = k * first.tokens;
  return first;
}

// [docs:ch11_loop]
template <class T>
void enqueue_loop(const StepArgs<T>& first, int64_t steps, int width, Kernel k, cudaStream_t s,
                  StepLaunch how = {}) {
  for (int64_t i = 0; i < steps; ++i)
    launch_decode_step(step_of(first, i), width, k, s, nullptr, how);
}
// [/docs:ch11_loop]

// A stream of our own: a graph cannot be captured on the legacy default stream. It is a blocking
// stream, so the synchronous copies of the legacy stream wait for what it has queued.
class Stream {
 public:
  Stream() { GPU_CHECK(cudaStreamCreate(&s_)); }
  ~Stream() { cudaStreamDestroy(s_); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

// Whatever `enqueue` puts on stream s, captured once into a graph and instantiated; launch()
// replays all of it with one call. The launches are recorded, not run, while capturing.
class CapturedGraph {
 public:
  template <class Enqueue>
  CapturedGraph(cudaStream_t s, Enqueue&& enqueue) {
    const int64_t t0 = host_now_ns();
    GPU_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    try {
      enqueue();
    } catch (...) {
      cudaGraph_t broken = nullptr;
      cudaStreamEndCapture(s, &broken);  // ends the capture; the error that matters is in flight
      if (broken) cudaGraphDestroy(broken);
      throw;
    }
    GPU_CHECK(cudaStreamEndCapture(s, &graph_));
    const int64_t t1 = host_now_ns();
    GPU_CHECK(cudaGraphInstantiateWithFlags(&exec_, graph_, 0));
    capture_ms_ = (t1 - t0) * 1e-6;
    instantiate_ms_ = (host_now_ns() - t1) * 1e-6;
  }
  ~CapturedGraph() {
    if (exec_) cudaGraphExecDestroy(exec_);
    if (graph_) cudaGraphDestroy(graph_);
  }
  CapturedGraph(const CapturedGraph&) = delete;
  CapturedGraph& operator=(const CapturedGraph&) = delete;

  void launch(cudaStream_t s) const { GPU_CHECK(cudaGraphLaunch(exec_, s)); }
  double capture_ms() const { return capture_ms_; }
  double instantiate_ms() const { return instantiate_ms_; }

 private:
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
  double capture_ms_ = 0, instantiate_ms_ = 0;
};

// A problem on the device: every step's x and out, the filters, the positions and indices, and
// per buffer layout the cache the loop updates and its state before the loop (restore()).
struct DecodeDevice {
  DeviceBuffer x, out, weight, bias, seqlens, indices;
  DeviceBuffer cache[2], before[2];

  DecodeDevice(const Decode& p, bool linear, bool circular) {
    auto upload = [](const void* h, size_t bytes) {
      DeviceBuffer d(bytes);
      if (bytes) GPU_CHECK(cudaMemcpy(d.get(), h, bytes, cudaMemcpyHostToDevice));
      return d;
    };
    x = upload(p.x_steps.data(), p.x_steps.bytes());
    out = DeviceBuffer(p.x_steps.bytes());
    weight = upload(p.in.weight.data(), p.in.weight.bytes());
    bias = upload(p.in.bias.data(), p.in.bias.bytes());
    seqlens = upload(p.seqlens.data(), p.seqlens.size() * sizeof(int32_t));
    indices = upload(p.indices.data(), p.indices.size() * sizeof(int32_t));
    for (Buffer b : {Buffer::linear, Buffer::circular}) {
      if (!(b == Buffer::linear ? linear : circular)) continue;
      const HostArray& h = p.cache_before[int(b)];
      before[int(b)] = upload(h.data(), h.bytes());
      cache[int(b)] = upload(h.data(), h.bytes());
    }
  }

  // The first step of a loop over `buffer` (step_of gives the others).
  template <class T>
  StepArgs<T> first_step(const Decode& p, Buffer buffer) const {
    const Options& o = p.opt;
    return StepArgs<T>{x.get<const T>(),
                       out.get<T>(),
                       cache[int(buffer)].get<T>(),
                       weight.get<const T>(),
                       o.bias ? bias.get<const T>() : nullptr,
                       buffer == Buffer::circular ? seqlens.get<const int32_t>() : nullptr,
                       p.indices.empty() ? nullptr : indices.get<const int32_t>(),
                       o.batch,
                       o.dim,
                       static_cast<int>(o.seqlen),
                       static_cast<int>(p.state_len),
                       0,
                       o.silu};
  }

  // The cache as it was before the loop, so the next loop decodes from the same state.
  void restore(Buffer b, cudaStream_t s) {
    GPU_CHECK(cudaMemcpyAsync(cache[int(b)].get(), before[int(b)].get(), before[int(b)].bytes(),
                              cudaMemcpyDeviceToDevice, s));
  }

  // What a loop left (waits for the device): its outputs as rows [B, D, N*T], and a cache.
  HostArray out_rows(const Decode& p) const {
    HostArray steps(p.opt.dtype, p.x_steps.size());
    steps.fill_nan();
    GPU_CHECK(cudaDeviceSynchronize());
    GPU_CHECK(cudaMemcpy(steps.data(), out.get(), steps.bytes(), cudaMemcpyDeviceToHost));
    return rows_of_steps(steps, p.opt, p.steps);
  }
  HostArray cache_of(const Decode& p, Buffer b) const {
    HostArray h(p.opt.dtype, p.cache_before[int(b)].size());
    GPU_CHECK(cudaDeviceSynchronize());
    GPU_CHECK(cudaMemcpy(h.data(), cache[int(b)].get(), h.bytes(), cudaMemcpyDeviceToHost));
    return h;
  }
};

}  // namespace conv1d::ch11
