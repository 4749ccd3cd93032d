# shellcheck shell=bash disable=SC2154  # out, build, row and step come from scripts/gpu-check.sh
# 64-bit offsets, proven: every chapter that can hold it runs at B=1 D=4096 L=524289, i.e. 2^31 + 4096
# elements per tensor (past what a 32-bit signed offset can reach), and verifies every output against
# the fp64 reference. And the fp64 reference's own time at that shape, forward and backward, on all
# host cores (what a chapter spends before it can check such a run).
#
# Result files (under $out/results):
#   large_2e31.tsv, large_2e31_kernels.tsv   the chapters' --summary rows at that shape
#   reference_2e31.tsv                        conv1d_bench_reference: seconds for the inputs, the
#                                             forward and the backward, and the threads used
# Chapters 01-04 are left out: their host GEMM formulation needs W x D x D elements per batch on the
# host and days of naive GEMM; chapter 05 runs its sparse GEMM only.

large=(--batch 1 --dim 4096 --seqlen 524289 --width 4 --iters 2 --warmup 1)
large_tsv=$out/results/large_2e31.tsv
rm -f "$large_tsv" "${large_tsv%.tsv}_kernels.tsv" "$out/results/reference_2e31.tsv"

ref_exe=$build/tests/conv1d_bench_reference
step "fp64 reference at 2^31 elements"
for layout in channel-first channel-last; do
  log=$out/logs/reference_2e31_$layout.log
  if [[ -x $ref_exe ]] && "$ref_exe" --batch 1 --dim 4096 --seqlen 524289 --width 4 --layout "$layout" --backward \
       --summary "$out/results/reference_2e31.tsv" > "$log" 2>&1; then
    row reference "fp64 reference, 2^31 elements, $layout" pass "$(grep -E 'forward|backward' "$log" | tr '\n' ' ')"
  else
    row reference "fp64 reference, 2^31 elements, $layout" FAIL "see logs/$(basename "$log")"
  fi
done

# large NAME EXTRA_FLAGS...: one chapter at the large shape; passes when it verifies every output.
large_run() {
  local folder=$1
  shift
  local name=ch$folder exe=$build/chapters/$folder/ch$folder
  local tag="2^31 elements${*:+ $*}"
  local log=$out/logs/large_${name}${1:+_${1#--}}.log
  step "$name at $tag"
  if [[ ! -x $exe ]]; then
    row "$name" "$tag" FAIL "$exe not built"
    return
  fi
  if "$exe" "${large[@]}" "$@" --summary "$large_tsv" > "$log" 2>&1; then
    row "$name" "$tag" pass "$(grep -E '^  (PASS|FAIL)' "$log" | head -n 1 | cut -c1-120)"
  else
    row "$name" "$tag" FAIL "see logs/$(basename "$log")"
    tail -n 15 "$log"
  fi
}

large_run 05_wmma_gemm --variant sparse
large_run 06_channel_last_backward --reduction deterministic --dtype bf16
large_run 07_stream_pipeline --variant pipelined
for folder in 08_direct_forward 09_direct_backward; do
  [[ -d $build/chapters/$folder ]] && large_run "$folder" --layout both --dtype bf16
done
