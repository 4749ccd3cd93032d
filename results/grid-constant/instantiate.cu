// One instantiation of chapter 08's channel-first chunked kernel (bf16, W 4, VECS vectors a
// thread, chapter 08's own policy), compiled alone to read its registers and PTX (collect.sh).
#include "chapters/08_direct_forward/cf_chunked.cuh"
#ifndef VECS
#define VECS 1
#endif
template __global__ void conv1d::ch08::conv_fwd_cf_chunked<__nv_bfloat16, 4, VECS>(
    conv1d::ch08::DirectArgs<__nv_bfloat16>, conv1d::FastDivmod, conv1d::FastDivmod,
    conv1d::ch08::OneSequencePerRow);
