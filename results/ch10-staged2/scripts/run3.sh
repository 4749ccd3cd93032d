#!/usr/bin/env bash
# Three forms a group: the span map gains two words a group of 32 vectors (which take flags;
# which take a cut or hold a row edge); the staged backward takes a group by chapter 09's
# arithmetic, by the cut form (16-bit storage, no flags in it) or by the flags form. Tests of chapters 09 and
# 10, memcheck on chapter 10's backward tests, the benchmark cases of the sixteenth attempt, and
# Nsight Compute's instruction counts at 8 x 4096 x 4096 bf16.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'sed -i "s#$root/##g" "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
b=$root/build/gpu-check
cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure.txt" 2>&1
cmake --build "$b" -j "$(nproc)" --target ch10_packed_sequences conv1d_tests_ch09 conv1d_tests_ch10 > "$res/build.txt" 2>&1 || { tail -n 40 "$res/build.txt"; exit 1; }
stamp "build: $(grep -c warning "$res/build.txt") warning lines"
nvidia-smi --query-gpu=name --format=csv,noheader > "$res/gpu.txt"
E10=$b/chapters/10_packed_sequences/ch10_packed_sequences
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --initial-states --layout channel-first --form rows --direction backward)
for c in "rows_bf16 --dtype bf16 --seq-lens random:8" "states_bf16 --dtype bf16 --seq-lens none" \
         "rows_bf16_bias_silu --dtype bf16 --seq-lens random:8 --bias --silu" "rows_fp32 --dtype fp32 --seq-lens random:8" \
         "rows64_bf16 --dtype bf16 --seq-lens random:64"; do
  set -- $c
  "$E10" "${big[@]}" "${@:2}" --summary "$res/bench_10_$1.tsv" > "$res/ch10_$1.txt" 2>&1
  stamp "ch10 $1 rc $?: $(grep -E 'whole backward' "$res/ch10_$1.txt" | tr '\n' ' ')"
done
CONV1D_REQUIRE_GPU=1 ctest --test-dir "$b" -R 'unit\.Ch09|unit\.Ch10' -j 4 --output-on-failure > "$res/ctest.txt" 2>&1
stamp "ctest rc $?: $(grep -E 'tests passed' "$res/ctest.txt")"
{
  compute-sanitizer --tool memcheck --error-exitcode 9 "$b/tests/conv1d_tests_ch10" --gtest_filter='Ch10RowsBackward.*'
  for shape in "--batch 2 --dim 24 --seqlen 64 --width 2 --dtype bf16 --seq-lens 1,0,2,9,5" \
               "--batch 2 --dim 20 --seqlen 256 --width 4 --dtype bf16 --bias --silu --seq-lens random:6" \
               "--batch 3 --dim 10 --seqlen 4104 --width 3 --dtype fp16 --seq-lens random:9"; do
    compute-sanitizer --tool memcheck --error-exitcode 9 "$E10" $shape --initial-states --form rows \
      --layout channel-first --direction backward --iters 1 --warmup 0
  done
} > "$res/sanitizer_memcheck.txt" 2>&1
stamp "memcheck rc $?: $(grep -cE 'ERROR SUMMARY: 0 errors' "$res/sanitizer_memcheck.txt") clean summaries of 4"
m=gpu__time_duration.sum,smsp__inst_executed.sum,sm__inst_issued.avg.pct_of_peak_sustained_active,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,launch__registers_per_thread
small=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 1 --warmup 0 --layout channel-first --form rows --direction backward --dtype bf16 --initial-states)
for c in "rows --seq-lens random:8" "states --seq-lens none"; do
  set -- $c
  timeout 120 ncu --csv --page raw --clock-control none --kernel-name regex:conv_bwd_cf_staged -c 4 \
    --metrics $m "$E10" "${small[@]}" "${@:2}" > "$res/ncu_$1.csv" 2> "$res/ncu_$1.err"
  stamp "ncu $1 rc $?"
done
