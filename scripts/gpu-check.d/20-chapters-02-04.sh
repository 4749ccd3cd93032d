# shellcheck shell=bash disable=SC2154  # out, build, row and step come from scripts/gpu-check.sh
# Chapters 02-04: the benchmark report behind docs/02_gpu_preprocess.md,
# docs/03_batch_fusion.md and docs/04_bias_epilogue.md, and sanitizer runs on the paths the generic
# per-chapter runs do not reach (bias and SiLU, odd D).
#
# Result files (all under $out/results):
#   bench_02_04.tsv          one row per variant and run (runner's --summary format)
#   bench_02_04_kernels.tsv  one row per kernel: time, GB/s, share of the copy ceiling of that run
#   ch0N_<name>_<tag>_stats.csv  phase tables (launch counts per run) of the small shapes and of
#                                chapter 04 with --bias --silu
# Runs: chapters 01-04 at the default shape and at B=8 D=1024 L=4096 W=4, fp32 and fp16 (chapter 04
# also with --bias --silu, and with --bias alone at the default shape); chapters 02 and 03 at the
# seed notes' tiny (1x32x64) and small (2x64x256) configurations and at a launch-bound shape with many
# batches (512x64x64), all W=4.

bench_tsv=$out/results/bench_02_04.tsv
rm -f "$bench_tsv" "${bench_tsv%.tsv}_kernels.tsv"  # the docs read one run of this section, not several

# bench FOLDER TAG ARGS...: runs chapters/FOLDER's executable with ARGS, appends to bench_02_04.tsv and
# records a row with the end-to-end and kernel times, and the preprocessing bandwidth when reported.
bench() {
  local folder=$1 tag=$2
  shift 2
  local name=ch$folder
  local exe=$build/chapters/$folder/$name log=$out/logs/bench_${name}_${tag}.log
  step "bench $name $tag"
  if [[ ! -x $exe ]]; then
    row "$name" "bench $tag" FAIL "$exe not built"
    return
  fi
  if "$exe" "$@" --summary "$bench_tsv" > "$log" 2>&1; then
    local note
    note=$(awk '/^summary \(/ {s = 1; next}
                s && $2 ~ /^[0-9.]+$/ {printf "%s: e2e %s ms, kernels %s ms; ", $1, $2, $4}' "$log")
    note+=$(grep -o 'kernel preprocess_input: .* of the copy ceiling' "$log" | head -n1 |
            sed 's/.*= /preprocess_input /')
    row "$name" "bench $tag" pass "$note"
  else
    row "$name" "bench $tag" FAIL "see logs/$(basename "$log")"
  fi
}

big=(--batch 8 --dim 1024 --seqlen 4096 --width 4 --iters 5 --warmup 1)
for dt in fp32 fp16; do
  for folder in 01_host_img2col 02_gpu_preprocess 03_batch_fusion 04_bias_epilogue; do
    bench "$folder" "default_$dt" --dtype "$dt"
    bench "$folder" "big_$dt" "${big[@]}" --dtype "$dt"
  done
  bench 04_bias_epilogue "default_bias_$dt" --dtype "$dt" --bias
  bench 04_bias_epilogue "default_bias_silu_$dt" --dtype "$dt" --bias --silu \
    --profile-csv "$out/results/ch04_bias_epilogue_bias_silu_$dt"
  bench 04_bias_epilogue "big_bias_silu_$dt" "${big[@]}" --dtype "$dt" --bias --silu
  for folder in 02_gpu_preprocess 03_batch_fusion; do
    for shape in "tiny:--batch 1 --dim 32 --seqlen 64 --width 4" "small:--batch 2 --dim 64 --seqlen 256 --width 4" \
                 "many:--batch 512 --dim 64 --seqlen 64 --width 4"; do
      tag=${shape%%:*}
      # shellcheck disable=SC2086  # the shape is a list of flags
      bench "$folder" "${tag}_$dt" ${shape#*:} --dtype "$dt" --profile-csv "$out/results/ch${folder}_${tag}_$dt"
    done
  done
done

# The generic sanitizer runs use the default flags: add bias + SiLU (both epilogues) and an odd D
# (the element-wise fallback of every preprocessing kernel and of add_bias).
for folder in 02_gpu_preprocess 03_batch_fusion 04_bias_epilogue; do
  name=ch$folder
  flags=(--batch 2 --dim 37 --seqlen 45 --width 3 --iters 1 --warmup 0)
  [[ $folder == 04_* ]] && flags+=(--bias --silu)
  for tool in memcheck initcheck; do
    for dt in fp32 fp16; do
      step "$name compute-sanitizer $tool odd D $dt"
      log=$out/logs/sanitizer_${name}_${tool}_odd_$dt.log
      what="compute-sanitizer $tool, ${flags[*]} --dtype $dt"
      if compute-sanitizer --tool "$tool" --error-exitcode 99 "$build/chapters/$folder/$name" "${flags[@]}" \
           --dtype "$dt" > "$log" 2>&1; then
        row "$name" "$what" pass "$(grep -E 'ERROR SUMMARY' "$log" | tail -n1)"
      else
        row "$name" "$what" FAIL "$(grep -E 'ERROR SUMMARY' "$log" | tail -n1)"
      fi
    done
  done
done

# The host transpose of chapters 01-04 on this machine's CPU (tests/bench_host_transpose.cpp): the
# library's loop against the earlier one with its values on the stack, which made chapters 02 and 03
# twice as slow in the results kept at ef6ca0a:results/before-transpose-fix/ (git history).
step "host transpose benchmark"
if "$build/tests/conv1d_bench_host_transpose" --section code > "$out/results/host_transpose_code.txt" 2>&1; then
  row host_transpose "conv1d_bench_host_transpose --section code" pass \
    "$(awk '/library/ {printf "%s: %s ms; ", $4 " " $5 " " $6, $7}' "$out/results/host_transpose_code.txt")"
else
  row host_transpose "conv1d_bench_host_transpose --section code" FAIL "see results/host_transpose_code.txt"
fi
