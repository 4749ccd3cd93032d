# shellcheck shell=bash disable=SC2154  # out, build, row and step come from scripts/gpu-check.sh
# Chapter 06: the benchmark report behind docs/06_channel_last_backward.md, and sanitizer
# runs on the paths the generic per-chapter runs (bf16, no bias, no SiLU, D = 40) do not reach.
#
# Result files (all under $out/results):
#   bench_06.tsv          one row per variant and run (the runner's --summary format)
#   bench_06_kernels.tsv  one row per kernel and a "whole backward" row (every kernel of a run): ms,
#                         GB/s counting x and dout read and dx written, share of the copy ceiling of
#                         that run
#   ch06_bench_<dtype>_{deterministic,atomic}_stats.csv   phase tables at the benchmark shape
# Runs: B=8 D=4096 L=4096 W=4 in bf16 and fp32 (both reductions), bf16 with --bias --silu, bf16 with
# --tiles-per-block 1, 2, 4, 8 (deterministic only); the seed notes' six presets in bf16 (latency).

ch06_exe=$build/chapters/06_channel_last_backward/ch06_channel_last_backward
ch06_tsv=$out/results/bench_06.tsv
rm -f "$ch06_tsv" "${ch06_tsv%.tsv}_kernels.tsv"  # the docs read one run of this section

# bench06 TAG ARGS...: one run of chapter 06, appended to bench_06.tsv; the row's note has each
# variant's whole-backward time and its share of the copy ceiling.
bench06() {
  local tag=$1
  shift
  local log=$out/logs/bench_ch06_$tag.log
  step "bench ch06 $tag"
  if [[ ! -x $ch06_exe ]]; then
    row ch06_channel_last_backward "bench $tag" FAIL "$ch06_exe not built"
    return
  fi
  if "$ch06_exe" "$@" --summary "$ch06_tsv" > "$log" 2>&1; then
    row ch06_channel_last_backward "bench $tag" pass \
      "$(awk '/^== variant/ {v = $3} /whole backward/ {printf "%s: %s ms, %s of the ceiling; ", v, $5, $12}' "$log")"
  else
    row ch06_channel_last_backward "bench $tag" FAIL "see logs/$(basename "$log")"
  fi
}

big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3)
for dt in bf16 fp32; do
  bench06 "big_$dt" "${big[@]}" --dtype "$dt" --profile-csv "$out/results/ch06_bench_$dt"
done
bench06 big_bf16_bias_silu "${big[@]}" --dtype bf16 --bias --silu
for n in 1 2 4 8; do
  bench06 "big_bf16_tiles_per_block_$n" "${big[@]}" --dtype bf16 --reduction deterministic --tiles-per-block "$n"
done
for preset in tiny small medium large no-bias with-silu; do
  bench06 "preset_$preset" --preset "$preset" --dtype bf16 --iters 200 --warmup 20
done

# Sanitizers on what the generic runs miss: D not a multiple of the 16-byte chunk (element-wise
# loads and stores) with bias and SiLU, and blocks that work through several tiles.
for case in "odd_D:--batch 2 --dim 37 --seqlen 70 --width 3 --bias --silu" \
            "tiles:--batch 2 --dim 72 --seqlen 300 --width 4 --bias --silu --tiles-per-block 3 --dtype fp32"; do
  tag=${case%%:*}
  for tool in memcheck racecheck initcheck synccheck; do
    step "ch06 compute-sanitizer $tool $tag"
    log=$out/logs/sanitizer_ch06_channel_last_backward_${tool}_$tag.log
    # shellcheck disable=SC2086  # the case is a list of flags
    if [[ -x $ch06_exe ]] && compute-sanitizer --tool "$tool" --error-exitcode 99 "$ch06_exe" ${case#*:} \
         --iters 1 --warmup 0 > "$log" 2>&1; then
      row ch06_channel_last_backward "compute-sanitizer $tool, $tag" pass \
        "$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | tail -n1)"
    else
      row ch06_channel_last_backward "compute-sanitizer $tool, $tag" FAIL \
        "$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | tail -n1)"
    fi
  done
done
