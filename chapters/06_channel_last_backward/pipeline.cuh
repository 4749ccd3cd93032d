// Chapter 06: one backward on the device. The inputs are uploaded once and the buffers allocated once
// (in training they are already on the device); a run is the kernels alone:
//
//   deterministic:  conv_bwd_channel_last (dx + partial sums)  ->  reduce_weight_grads
//                   (a single launch when one block row covers all of B x L: it writes the sums itself)
//   atomic:         memset dweight, dbias  ->  conv_bwd_channel_last (dx + atomics)
#pragma once

#include <cstdint>
#include <vector>

#include "chapters/06_channel_last_backward/backward_kernel.cuh"
#include "chapters/06_channel_last_backward/backward_problem.h"
#include "common/buffers.h"
#include "common/phases.h"

namespace conv1d::ch06 {

struct BwdBuffers {
  DeviceBuffer x, dout, weight, bias, dx, partials, dweight, dbias;
};

// Device memory of one problem; `partial_floats` is the largest partial-sum buffer a plan will use.
inline int64_t problem_device_bytes(const Options& o, int64_t partial_floats) {
  const int64_t n = o.batch * o.dim * o.seqlen, e = dtype_bytes(o.dtype);
  return 3 * n * e + o.dim * (o.width + 1) * (e + 4) + partial_floats * 4;
}

inline BwdBuffers upload_problem(const BwdProblem& p, int64_t partial_floats) {
  BwdBuffers b;
  auto upload = [](DeviceBuffer& dst, const HostArray& src) {
    dst = DeviceBuffer(src.bytes());
    if (src.bytes())
      GPU_CHECK(cudaMemcpy(dst.get(), src.data(), src.bytes(), cudaMemcpyHostToDevice));
  };
  upload(b.x, p.x);
  upload(b.dout, p.dout);
  upload(b.weight, p.weight);
  upload(b.bias, p.bias);
  b.dx = DeviceBuffer(p.x.bytes());
  b.partials = DeviceBuffer(static_cast<size_t>(partial_floats) * sizeof(float));
  b.dweight = DeviceBuffer(static_cast<size_t>(p.shape.dim * p.shape.width) * sizeof(float));
  b.dbias = DeviceBuffer(static_cast<size_t>(p.shape.dim) * sizeof(float));
  return b;
}

// Every output and the partial sums to NaN: whatever a run does not write cannot pass.
inline void poison_outputs(BwdBuffers& b) {
  b.dx.poison();
  b.partials.poison();
  b.dweight.poison();
  b.dbias.poison();
}

inline void download_outputs(const BwdBuffers& b, BwdOutputs& out) {
  GPU_CHECK(cudaMemcpy(out.dx.data(), b.dx.get(), out.dx.bytes(), cudaMemcpyDeviceToHost));
  const size_t float_bytes = sizeof(float);
  GPU_CHECK(cudaMemcpy(out.dweight.data(), b.dweight.get(), out.dweight.size() * float_bytes,
                       cudaMemcpyDeviceToHost));
  GPU_CHECK(cudaMemcpy(out.dbias.data(), b.dbias.get(), out.dbias.size() * float_bytes,
                       cudaMemcpyDeviceToHost));
}

// [docs:ch06_run]
template <class HostT, class TileT = DefaultTile>  // host storage type: float, Half or BFloat16
void run_backward(const BwdBuffers& b, const ConvShape& s, bool silu, bool has_bias,
                  const BwdPlan& plan, PhaseRecorder& rec, cudaStream_t stream = 0) {
  using T = device_t<HostT>;
  BwdArgs<T> a{};
  a.x = b.x.get<const T>();
  a.dout = b.dout.get<const T>();
  a.weight = b.weight.get<const T>();
  a.bias = has_bias ? b.bias.get<const T>() : nullptr;
  a.dx = b.dx.get<T>();
  a.partials = b.partials.get<float>();
  a.dweight = b.dweight.get<float>();
  a.dbias = b.dbias.get<float>();
  a.sink = plan.sink;
  a.batch = s.batch;
  a.seqlen = s.seqlen;
  a.dim = s.dim;
  a.tiles_per_seq = plan.tiles_per_seq;
  a.tiles_per_block = plan.tiles_per_block;
  a.vectorized = s.dim % kPer16<T> == 0 && aligned_to(a.x, 16) && aligned_to(a.dout, 16) &&
                 aligned_to(a.dx, 16);

  if (plan.sink == GradSink::atomics)
    rec.kernel(
        "memset dweight, dbias",
        [&] {
          GPU_CHECK(cudaMemsetAsync(a.dweight, 0, b.dweight.bytes(), stream));
          GPU_CHECK(cudaMemsetAsync(a.dbias, 0, b.dbias.bytes(), stream));
        },
        stream);
  rec.kernel(
      "conv_bwd_channel_last", [&] { launch_conv_bwd<T, TileT>(a, s.width, silu, plan, stream); },
      stream);
  if (plan.sink == GradSink::partials)
    rec.kernel(
        "reduce_weight_grads",
        [&] {
          launch_reduce_weight_grads(a.partials, plan.blocks_y, s.dim, s.width, a.dweight, a.dbias,
                                     stream);
        },
        stream);
}
// [/docs:ch06_run]

// One run with the problem's options, dispatched on its storage type.
template <class TileT = DefaultTile>
void run_backward(const BwdBuffers& b, const BwdProblem& p, const BwdPlan& plan,
                  PhaseRecorder& rec) {
  dispatch_storage(p.opt.dtype, [&](auto tag) {
    run_backward<typename decltype(tag)::type, TileT>(b, p.shape, p.opt.silu, p.opt.bias, plan,
                                                      rec);
  });
}

}  // namespace conv1d::ch06
