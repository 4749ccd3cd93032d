# shellcheck shell=bash disable=SC2154  # out, build, row, step and large_run come from scripts/gpu-check.sh
# 2^31 + 4096 elements, continued (60-large.sh says why and what): chapter 10.
# Chapter 10 in four runs (its host holds x, the references and the results of what it checks: the
# rows form's forward in both layouts needs about 82 GB at this size, the backward about 110 GB).
for form in rows varlen; do
  for direction in forward backward; do
    large_run 10_packed_sequences --form "$form" --direction "$direction" --layout both \
      --seq-lens random:8 --initial-states --dtype bf16
  done
done
