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
# took; the whole section takes several minutes (the host's work, not the GPU's: inputs, transposes,
# references and checks of 2^31 elements).

large=(--batch 1 --dim 4096 --seqlen 524289 --width 4 --iters 2 --warmup 1)
large_tsv=$out/results/large_2e31.tsv
rm -f "$large_tsv" "${large_tsv%.tsv}_kernels.tsv" "$out/results/reference_2e31.tsv"

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

# large_run FOLDER [--shape "FLAGS"] EXTRA_FLAGS...: one chapter at the large shape (or at FLAGS);
# passes when it verifies every output. Its row says how long it took.
large_run() {
  local folder=$1
  shift
  local shape=("${large[@]}")
  if [[ ${1:-} == --shape ]]; then
    read -r -a shape <<< "$2"
    shift 2
  fi
  local name=ch$folder exe=$build/chapters/$folder/ch$folder
  local tag="2^31 elements${*:+ $*}"
  local log=$out/logs/large_${name}$(printf '_%s' "$@" | tr -c 'A-Za-z0-9_.\n-' '_').log
  local start=$SECONDS
  step "$name at $tag"
  if [[ ! -x $exe ]]; then
    row "$name" "$tag" FAIL "$exe not built"
    return
  fi
  if "$exe" "${shape[@]}" "$@" --summary "$large_tsv" > "$log" 2>&1 && grep -q '^VERIFIED' "$log"; then
    row "$name" "$tag" pass "$((SECONDS - start)) s; $(grep -E '^  (PASS|FAIL)' "$log" | head -n 1 | cut -c1-100)"
  else
    row "$name" "$tag" FAIL "$((SECONDS - start)) s; see logs/$(basename "$log")"
    tail -n 15 "$log"
  fi
}

large_run 05_wmma_gemm --variant sparse
large_run 06_channel_last_backward --reduction deterministic --dtype bf16
large_run 07_stream_pipeline --variant pipelined
for folder in 08_direct_forward 09_direct_backward; do
  [[ -d $build/chapters/$folder ]] && large_run "$folder" --layout both --dtype bf16
done
# Chapter 10 in four runs (its host holds x, the references and the results of what it checks: the
# rows form's forward in both layouts needs about 82 GB at this size, the backward about 110 GB).
for form in rows varlen; do
  for direction in forward backward; do
    large_run 10_packed_sequences --form "$form" --direction "$direction" --layout both \
      --seq-lens random:8 --initial-states --dtype bf16
  done
done
# Chapter 11: one decoding step of 65535 sequences, each a random row of a state cache of 174763
# rows x 4096 channels x 3 inputs = 2^31 + 4096 elements, in both cache layouts.
large_run 11_decode_update \
  --shape "--batch 65535 --dim 4096 --seqlen 1 --width 4 --iters 2 --warmup 1" \
  --state-len 3 --cache-rows 174763 --gather --steps 1 --dtype bf16
