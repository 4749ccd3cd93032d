# shellcheck shell=bash disable=SC2154  # out, build, row and step come from scripts/gpu-check.sh
# 64-bit offsets, proven: every chapter from 05 on runs at B=1 D=4096 L=524289, i.e. 2^31 + 4096
# elements per tensor (past what a 32-bit signed offset can reach), and verifies every output against
# the fp64 reference: the forward and the backward, chapter 10's packed rows and variable-length batch
# (in four runs, each holding on the host only what it checks), and chapter 11's decoding step
# against a state cache of more than 2^31 elements. And the fp64 reference's own time at that shape,
# forward and backward, on all host cores (what a chapter spends before it can check such a run;
# goal: forward <= 10 s, backward <= 20 s).
#
# Result files (under $out/results):
#   large_2e31.tsv, large_2e31_kernels.tsv   the chapters' --summary rows at that shape
#   reference_2e31.tsv                        conv1d_bench_reference: seconds for the inputs, the
#                                             forward and the backward, and the threads used
# Chapters 01-04 are left out: their host GEMM formulation needs W x D x D elements per batch on the
# host and days of naive GEMM; chapter 05 runs its sparse GEMM only. Each run's row says how long it
# took: the host's work (inputs, transposes, references and checks of 2^31 elements) takes minutes
# where the GPU's takes milliseconds, so the runs are split over three sections that each fit a
# ten-minute call. Estimated from runs of 1 warm-up + 2 timed runs measured on an H100 host of 16
# cores (chapter 05 215 s, 06 49 s, 07 39 s, 08 82 s, chapter 10's four 87, 107, 39 and 54 s): this
# section about 4 minutes, 61-large about 6, 62-large about 5. large_run is in scripts/gpu-check.sh.

rm -f "$out/results/large_2e31.tsv" "$out/results/large_2e31_kernels.tsv" "$out/results/reference_2e31.tsv"

ref_exe=$build/tests/conv1d_bench_reference
step "fp64 reference at 2^31 elements"
for layout in channel-first channel-last; do
  log=$out/logs/reference_2e31_$layout.log
  if [[ -x $ref_exe ]] && "$ref_exe" --batch 1 --dim 4096 --seqlen 524289 --width 4 --layout "$layout" --backward \
       --summary "$out/results/reference_2e31.tsv" > "$log" 2>&1; then
    # The goal: forward <= 10 s, backward <= 20 s (the last row is this run's).
    if tail -n 1 "$out/results/reference_2e31.tsv" | awk -F'\t' '{exit !($9 <= 10 && $10 <= 20)}'; then
      row reference "fp64 reference, 2^31 elements, $layout (goal: forward <= 10 s, backward <= 20 s)" pass \
        "$(grep -E 'forward|backward' "$log" | tr '\n' ' ')"
    else
      row reference "fp64 reference, 2^31 elements, $layout (goal: forward <= 10 s, backward <= 20 s)" FAIL \
        "goal missed: $(grep -E 'forward|backward' "$log" | tr '\n' ' ')"
    fi
  else
    row reference "fp64 reference, 2^31 elements, $layout" FAIL "see logs/$(basename "$log")"
  fi
done

large_run 05_wmma_gemm --variant sparse
large_run 06_channel_last_backward --reduction deterministic --dtype bf16
large_run 07_stream_pipeline --variant pipelined
