// Chapter 08's staged channel-first kernel, bf16, W 4, with chapter 10's tap words and with chapter
// 08's own (every tap), compiled alone for their registers and SASS (collect.sh).
#include "chapters/10_packed_sequences/forward.cuh"
template __global__ void
    conv1d::ch08::conv_fwd_cf_staged<__nv_bfloat16, 4, conv1d::ch10::TapWords<__nv_bfloat16>>(
        conv1d::ch08::DirectArgs<__nv_bfloat16>, conv1d::ch08::StagedTiles,
        conv1d::ch10::TapWords<__nv_bfloat16>, int64_t);
template __global__ void
    conv1d::ch08::conv_fwd_cf_staged<__nv_bfloat16, 4, conv1d::ch08::EveryTap<__nv_bfloat16>>(
        conv1d::ch08::DirectArgs<__nv_bfloat16>, conv1d::ch08::StagedTiles,
        conv1d::ch08::EveryTap<__nv_bfloat16>, int64_t);
