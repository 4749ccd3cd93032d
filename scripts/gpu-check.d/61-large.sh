# shellcheck shell=bash disable=SC2154  # out, build, row, step and large_run come from scripts/gpu-check.sh
# 2^31 + 4096 elements, continued (60-large.sh says why and what): chapters 08 and 09 in both
# layouts, and chapter 11's decoding step against a cache of that size.
for folder in 08_direct_forward 09_direct_backward; do
  [[ -d $build/chapters/$folder ]] && large_run "$folder" --layout both --dtype bf16
done
# Chapter 11: one decoding step of 65535 sequences, each a random row of a state cache of 174763
# rows x 4096 channels x 3 inputs = 2^31 + 4096 elements, in both cache layouts.
large_run 11_decode_update \
  --shape "--batch 65535 --dim 4096 --seqlen 1 --width 4 --iters 1 --warmup 0" \
  --state-len 3 --cache-rows 174763 --gather --steps 1 --dtype bf16
