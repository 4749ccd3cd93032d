// Chapter 08's channel-last tiled kernel with chapter 10's two packed policies (W 4, 32 rows a
// thread, 16-byte accesses: 4 channels in fp32, 8 in bf16), compiled alone to read its registers
// and stack frame (collect.sh).
#include "chapters/10_packed_sequences/forward.cuh"
#define CL_TILED(T, N, Seqs)                                                                    \
  template __global__ void conv1d::ch08::conv_fwd_cl_tiled<T, 4, N, 32, conv1d::ch10::Seqs<T>>( \
      conv1d::ch08::DirectArgs<T>, conv1d::FastDivmod, conv1d::FastDivmod, conv1d::ch10::Seqs<T>);
CL_TILED(float, 4, Varlen)
CL_TILED(float, 4, PackedRows)
CL_TILED(__nv_bfloat16, 8, Varlen)
CL_TILED(__nv_bfloat16, 8, PackedRows)
