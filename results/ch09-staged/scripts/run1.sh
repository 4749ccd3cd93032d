#!/usr/bin/env bash
# First call: chapter 09's staged backward (cf_staged.cuh). Builds chapters 08 to 11 and their
# tests (08, 10 and 11 for the store16 refactor of the last session, which no GPU had run yet);
# the unit tests of all four; compute-sanitizer (memcheck, racecheck, synccheck, initcheck) on the
# staged tests and on chapter 09 at a shape the staged kernel takes; chapter 09's channel-first
# steps at the shapes of its GPU-check section; Nsight Compute on the staged and fused kernels at
# 8x4096x4096 bf16. Run from the repository root with OUT set; everything comes back as run.tgz.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'sed -i "s#$root/##g" "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
b=$root/build/gpu-check
cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure.txt" 2>&1
cmake --build "$b" -j "$(nproc)" --target ch09_direct_backward conv1d_tests_ch08 conv1d_tests_ch09 \
  conv1d_tests_ch10 conv1d_tests_ch11 > "$res/build.txt" 2>&1 || { tail -n 40 "$res/build.txt"; exit 1; }
stamp "build: $(grep -c warning "$res/build.txt") warning lines"
nvidia-smi --query-gpu=name --format=csv,noheader > "$res/gpu.txt"
E9=$b/chapters/09_direct_backward/ch09_direct_backward
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --layout channel-first)
for c in "big_bf16 --dtype bf16" "big_fp32 --dtype fp32" "big_bf16_bias_silu --dtype bf16 --bias --silu" \
         "big_fp16_w2 --dtype fp16 --width 2"; do
  set -- $c
  "$E9" "${big[@]}" "${@:2}" --summary "$res/bench_09_$1.tsv" > "$res/ch09_$1.txt" 2>&1
  stamp "ch09 $1 rc $?: $(grep -E 'against|^  cf_' "$res/ch09_$1.txt" | head -12 | tr '\n' ' ')"
done
for c in "short_bf16 --batch 32 --dim 2048 --seqlen 512" "long_bf16 --batch 1 --dim 4096 --seqlen 16384"; do
  set -- $c
  "$E9" "${@:2}" --width 4 --iters 20 --warmup 3 --dtype bf16 --layout channel-first --reduction deterministic \
    --summary "$res/bench_09_$1.tsv" > "$res/ch09_$1.txt" 2>&1
  stamp "ch09 $1 rc $?"
done
CONV1D_REQUIRE_GPU=1 ctest --test-dir "$b" -R 'unit\.Ch0[89]|unit\.Ch1[01]' -j 4 --output-on-failure > "$res/ctest.txt" 2>&1
stamp "ctest rc $?: $(grep -E 'tests passed' "$res/ctest.txt")"
for tool in memcheck racecheck synccheck initcheck; do
  {
    compute-sanitizer --tool $tool --error-exitcode 9 "$b/tests/conv1d_tests_ch09" --gtest_filter='*Staged*'
    compute-sanitizer --tool $tool --error-exitcode 9 "$E9" --batch 2 --dim 9 --seqlen 4112 --width 3 \
      --dtype bf16 --bias --silu --layout channel-first --variant staged --iters 1 --warmup 0
  } > "$res/sanitizer_$tool.txt" 2>&1
  stamp "$tool rc $?: $(grep -cE '(ERROR|RACECHECK|SYNCCHECK|INITCHECK) SUMMARY: 0 (errors|hazards)' "$res/sanitizer_$tool.txt") clean summaries of 2"
done
ncu --csv --page raw --clock-control none --kernel-name regex:'conv_bwd_cf' \
  --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,launch__registers_per_thread \
  --log-file "$res/ncu.csv" "$E9" "${big[@]}" --dtype bf16 --reduction deterministic --iters 1 --warmup 0 > "$res/ncu_log.txt" 2>&1
sed -i '/^==PROF==/d' "$res/ncu.csv"
stamp "ncu rc $?"
