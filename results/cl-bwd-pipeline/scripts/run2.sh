#!/usr/bin/env bash
# run2: ../rolled.patch (the plain walk rolled, a batch ahead; the walk with flags as committed)
# against the tree before it (base: the patch taken back out), and the same in one launch for
# chapter 10's rows (one: ../one_launch_probe.patch, -DCL_ONE_LAUNCH=1). Tests of chapters 09 and
# 10 on rolled; the channel-last backward at 8 x 4096 x 4096 W 4; chapter 09's own channel-last
# report; Nsight Compute on the plain and packed kernels of base and rolled.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'exit 143' TERM
trap 'sed -i "s#$root/##g; s#/tmp/base-tree/##g" "$res"/*.txt "$res"/*.csv 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"; cat "$res/gpu.txt"
rm -rf /tmp/base-tree && mkdir /tmp/base-tree && git ls-files -z | xargs -0 cp --parents -t /tmp/base-tree &&
  (cd /tmp/base-tree && git apply -R "$root/results/cl-bwd-pipeline/rolled.patch" &&
   git apply -R "$root/results/cl-bwd-pipeline/one_launch_probe.patch")
stamp "base tree rc $?"
build() {  # build TAG SOURCE "CUDA FLAGS" TARGETS...
  local tag=$1 src=$2 flags=$3; shift 3
  cmake -S "$src" -B "$root/build/$tag" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
    -DCMAKE_CUDA_FLAGS="$flags" > "$res/configure_$tag.txt" 2>&1 &&
    cmake --build "$root/build/$tag" -j 6 --target "$@" > "$res/build_$tag.txt" 2>&1
  stamp "build $tag rc $?"
}
build rolled . "" ch10_packed_sequences ch09_direct_backward conv1d_tests_ch09 conv1d_tests_ch10 &
build one . "-DCL_ONE_LAUNCH=1" ch10_packed_sequences &
build base /tmp/base-tree "" ch10_packed_sequences ch09_direct_backward &
wait
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --initial-states --layout channel-last
     --direction backward)
bench() {  # bench BUILD TAG DTYPE "ARGS"
  local args; read -r -a args <<< "$4"
  timeout 120 "build/$1/chapters/10_packed_sequences/ch10_packed_sequences" "${big[@]}" --dtype "$3" "${args[@]}" \
    --summary "$res/bench_$1_$2.tsv" > "$res/ch10_$1_$2.txt" 2>&1
  stamp "$1 $2 rc $?: $(awk '/^summary \(/ {s = 1; next} s && $2 ~ /^[0-9.]+$/ {printf "%s %s ms; ", $1, $4}' "$res/ch10_$1_$2.txt")"
}
for b in rolled one base; do
  bench "$b" rows8 bf16 "--form rows --seq-lens random:8"
  bench "$b" states bf16 "--form rows --seq-lens none"
  [ "$b" != one ] && bench "$b" varlen bf16 "--form varlen --seq-lens random:64"
  bench "$b" silu8 bf16 "--form rows --seq-lens random:8 --bias --silu"
  bench "$b" fp32rows8 fp32 "--form rows --seq-lens random:8"
done
for b in rolled base; do
  timeout 120 "build/$b/chapters/09_direct_backward/ch09_direct_backward" --layout channel-last --variant tiled \
    --summary "$res/bench09_$b.tsv" > "$res/ch09_$b.txt" 2>&1
  stamp "ch09 $b rc $?"
  ncu --csv --page raw --clock-control none --kernel-name regex:'conv_bwd_cl' \
    --metrics gpu__time_duration.sum,launch__registers_per_thread,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio,dram__throughput.avg.pct_of_peak_sustained_elapsed \
    --log-file "$res/ncu_$b.csv" "build/$b/chapters/10_packed_sequences/ch10_packed_sequences" --batch 8 --dim 4096 \
    --seqlen 4096 --width 4 --dtype bf16 --initial-states --seq-lens random:8 --layout channel-last \
    --direction backward --form rows --iters 1 --warmup 0 > "$res/ncu_$b.log" 2>&1
  stamp "ncu $b rc $?"; sed -i '/^==PROF==/d; /^==WARNING==/d' "$res/ncu_$b.csv"
done
CONV1D_REQUIRE_GPU=1 timeout 200 ctest --test-dir build/rolled -R 'Ch09|Ch10' -j 8 --output-on-failure \
  > "$res/ctest.txt" 2>&1
stamp "ctest rc $?: $(grep -E 'tests passed' "$res/ctest.txt" | tail -1)"
for tool in memcheck initcheck; do
  timeout 150 compute-sanitizer --tool "$tool" --error-exitcode 9 build/rolled/chapters/09_direct_backward/ch09_direct_backward \
    --layout channel-last --variant tiled --batch 2 --dim 264 --seqlen 300 --iters 1 --warmup 0 > "$res/san09_$tool.txt" 2>&1
  stamp "ch09 $tool rc $?: $(grep -E 'ERROR SUMMARY' "$res/san09_$tool.txt" | tail -1)"
  timeout 150 compute-sanitizer --tool "$tool" --error-exitcode 9 build/rolled/chapters/10_packed_sequences/ch10_packed_sequences \
    --layout channel-last --direction backward --form both --batch 3 --dim 264 --seqlen 300 --seq-lens random:5 \
    --initial-states --iters 1 --warmup 0 > "$res/san10_$tool.txt" 2>&1
  stamp "ch10 $tool rc $?: $(grep -E 'ERROR SUMMARY' "$res/san10_$tool.txt" | tail -1)"
done
