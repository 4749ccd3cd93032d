#!/usr/bin/env bash
# run1: chapter 09's channel-last staged backward (cl_staged.cuh), first run. Chapter 09 and its
# tests built; the tests; chapter 09's channel-last report at 8 x 4096 x 4096 W 4 (bf16, bf16 with
# bias and SiLU, fp32; the staged kernel at 32 and 64 rows a warp, cl_tiled beside it); Nsight
# Compute on both kernels in bf16; compute-sanitizer's four tools on the staged kernel at an
# awkward shape.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'exit 143' TERM
trap 'sed -i "s#$root/##g" "$res"/*.txt "$res"/*.csv 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"; cat "$res/gpu.txt"
cmake -S . -B build/cls -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
  > "$res/configure.txt" 2>&1 &&
  cmake --build build/cls -j "$(nproc)" --target ch09_direct_backward conv1d_tests_ch09 > "$res/build.txt" 2>&1
stamp "build rc $?: $(grep -c warning "$res/build.txt") warning lines"
exe=build/cls/chapters/09_direct_backward/ch09_direct_backward
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --layout channel-last)
bench() {  # bench TAG "ARGS"
  local args; read -r -a args <<< "$2"
  timeout 120 "$exe" "${big[@]}" "${args[@]}" --summary "$res/bench_$1.tsv" > "$res/ch09_$1.txt" 2>&1
  stamp "$1 rc $?: $(grep -c PASS "$res/ch09_$1.txt") PASS, $(grep -c FAIL "$res/ch09_$1.txt") FAIL; $(grep -E 'whole backward' "$res/ch09_$1.txt" | sed 's/.*: //' | tr '\n' ';')"
}
bench bf16 "--dtype bf16 --reduction deterministic"
bench bf16_r32 "--dtype bf16 --reduction deterministic --variant staged --rows 32"
bench bf16_silu "--dtype bf16 --reduction deterministic --bias --silu"
bench fp32 "--dtype fp32 --reduction deterministic"
bench bf16_atomic "--dtype bf16 --reduction atomic --variant staged"
ncu --csv --page raw --clock-control none --kernel-name regex:'conv_bwd_cl' \
  --metrics gpu__time_duration.sum,launch__registers_per_thread,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active \
  --log-file "$res/ncu.csv" "$exe" --batch 8 --dim 4096 --seqlen 4096 --width 4 --dtype bf16 --layout channel-last \
  --variant all --reduction deterministic --iters 1 --warmup 0 > "$res/ncu.txt" 2>&1
stamp "ncu rc $?"; sed -i '/^==PROF==/d; /^==WARNING==/d' "$res/ncu.csv"
CONV1D_REQUIRE_GPU=1 timeout 240 ctest --test-dir build/cls -R 'Ch09|ch09' -j 8 --output-on-failure \
  > "$res/ctest.txt" 2>&1
stamp "ctest rc $?: $(grep -E 'tests passed' "$res/ctest.txt" | tail -1)"
for tool in memcheck racecheck initcheck synccheck; do
  timeout 100 compute-sanitizer --tool "$tool" --error-exitcode 9 "$exe" --layout channel-last --variant staged \
    --batch 2 --dim 264 --seqlen 300 --width 3 --bias --silu --iters 1 --warmup 0 > "$res/san_$tool.txt" 2>&1
  stamp "$tool rc $?: $(grep -E 'ERROR SUMMARY' "$res/san_$tool.txt" | tail -1)"
done
