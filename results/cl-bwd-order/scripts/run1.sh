#!/usr/bin/env bash
# run1: the channel-last rows backward's two launches in either order and at either priority of
# the side stream (order_probe.patch: CH10_CL_ORDER=full-first, CH10_SIDE_PRIORITY=least). Builds
# chapter 10, runs the tree's tests of chapters 09 and 10 once, then the channel-last backward at
# 8 x 4096 x 4096 W 4 in each of four settings, twice round.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'exit 143' TERM
trap 'sed -i "s#$root/##g" "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"; cat "$res/gpu.txt"
cmake -S . -B build/gpu-check -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
  > "$res/configure.txt" 2>&1 &&
  cmake --build build/gpu-check -j 16 --target ch10_packed_sequences conv1d_tests_ch10 \
  > "$res/build.txt" 2>&1
stamp "build rc $?: $(grep -c warning "$res/build.txt") warning lines"
exe=build/gpu-check/chapters/10_packed_sequences/ch10_packed_sequences
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --initial-states --layout channel-last
     --direction backward --form rows)
bench() {  # bench TAG ORDER PRIORITY DTYPE "ARGS"
  local args; read -r -a args <<< "$5"
  CH10_CL_ORDER=$2 CH10_SIDE_PRIORITY=$3 timeout 120 "$exe" "${big[@]}" --dtype "$4" "${args[@]}" \
    --summary "$res/bench_$1.tsv" > "$res/ch10_$1.txt" 2>&1
  stamp "$1 rc $?: $(awk '/^summary \(/ {s = 1; next} s && $2 ~ /^[0-9.]+$/ {printf "%s %s ms; ", $1, $4}' "$res/ch10_$1.txt")"
}
for round in 1 2; do
  for setting in "side-first greatest" "full-first greatest" "full-first least" "side-first least"; do
    read -r order prio <<< "$setting"
    bench "rows8_${order}_${prio}_$round" "$order" "$prio" bf16 "--seq-lens random:8"
    bench "states_${order}_${prio}_$round" "$order" "$prio" bf16 "--seq-lens none"
    [ "$round" = 1 ] && bench "silu8_${order}_${prio}_$round" "$order" "$prio" bf16 "--seq-lens random:8 --bias --silu"
    [ "$round" = 1 ] && bench "fp32rows8_${order}_${prio}_$round" "$order" "$prio" fp32 "--seq-lens random:8"
  done
done
CONV1D_REQUIRE_GPU=1 timeout 150 ctest --test-dir build/gpu-check -R 'Ch10' -j 8 --output-on-failure \
  > "$res/ctest.txt" 2>&1
stamp "ctest rc $?: $(grep -E 'tests passed' "$res/ctest.txt" | tail -1)"
