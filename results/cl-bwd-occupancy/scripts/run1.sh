#!/usr/bin/env bash
# The channel-last rows backward's second launch (the warps that walk with flags), three builds of
# one tree side by side (the probe's macros in cl_tiled.cuh, set through CMAKE_CUDA_FLAGS):
#   base   the code as committed (a batch of 8 rows, 3 blocks a multiprocessor)
#   b4m4   the walk with flags a batch of 4 rows, the second launch held to 4 blocks (127 registers)
#   empty  the second launch returns after its vote: what its empty warps cost (timing only, wrong)
# The tests of chapters 09 and 10 on b4m4; chapter 10's channel-last backward at 8 x 4096 x 4096 W 4
# on all three; Nsight Compute on each tree's launches (8 documents a row, and the states alone).
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'exit 143' TERM
trap 'sed -i "s#$root/##g" "$res"/*.txt "$res"/*.csv 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"; cat "$res/gpu.txt"
declare -A flags=([base]="" [b4m4]="-DCL_FLAGS_BATCH=4 -DCL_MIXED_MINB=4" [empty]="-DCL_MIXED_EMPTY")
build() {  # build TREE JOBS TARGETS...
  cmake -S "$root" -B "$root/build/probe-$1" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
    -DCMAKE_CUDA_FLAGS="${flags[$1]}" > "$res/configure_$1.txt" 2>&1 &&
    cmake --build "$root/build/probe-$1" -j "$2" --target "${@:3}" > "$res/build_$1.txt" 2>&1
}
build b4m4 8 ch10_packed_sequences conv1d_tests_ch09 conv1d_tests_ch10 &
build base 4 ch10_packed_sequences &
build empty 4 ch10_packed_sequences &
wait
stamp "builds done: $(for t in base b4m4 empty; do printf '%s %s error lines, %s warning lines; ' $t "$(grep -c 'error' "$res/build_$t.txt")" "$(grep -c 'warning' "$res/build_$t.txt")"; done)"
CONV1D_REQUIRE_GPU=1 timeout 200 ctest --test-dir "$root/build/probe-b4m4" -R 'Ch09|Ch10' -j 8 --output-on-failure \
  > "$res/ctest_b4m4.txt" 2>&1
stamp "ctest b4m4 rc $?: $(grep -E 'tests passed' "$res/ctest_b4m4.txt" | tail -1)"
exe() { echo "$root/build/probe-$1/chapters/10_packed_sequences/ch10_packed_sequences"; }
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --initial-states --layout channel-last
     --direction backward)
bench() {  # bench TAG DTYPE "ARGS" TREES...
  local tag=$1 dt=$2 args; read -r -a args <<< "$3"
  for t in "${@:4}"; do
    timeout 120 "$(exe $t)" "${big[@]}" --dtype "$dt" "${args[@]}" --summary "$res/bench_${tag}_$t.tsv" \
      > "$res/ch10_${tag}_$t.txt" 2>&1
    stamp "$tag $t rc $?: $(awk '/^summary \(/ {s = 1; next} s && $2 ~ /^[0-9.]+$/ {printf "%s %s ms; ", $1, $4}' "$res/ch10_${tag}_$t.txt")"
  done
}
bench rows8 bf16 "--form rows --seq-lens random:8" base b4m4 empty base b4m4
bench states bf16 "--form rows --seq-lens none" base b4m4 empty
bench silu8 bf16 "--form rows --seq-lens random:8 --bias --silu" base b4m4
bench fp32rows8 fp32 "--form rows --seq-lens random:8" base b4m4
bench varlen bf16 "--form varlen --seq-lens random:64" base b4m4
m=gpu__time_duration.sum,smsp__inst_executed.sum,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio,launch__registers_per_thread,launch__occupancy_limit_registers,smsp__issue_active.avg.pct_of_peak_sustained_active
for t in base b4m4 empty; do
  for sl in random:8 none; do
    tag=${sl%%:*}
    ncu --csv --page raw --clock-control none --kernel-name regex:'conv_bwd_cl' --launch-count 2 --metrics "$m" \
      --log-file "$res/ncu_${t}_$tag.csv" "$(exe $t)" --batch 8 --dim 4096 --seqlen 4096 --width 4 --dtype bf16 \
      --initial-states --form rows --layout channel-last --direction backward --seq-lens "$sl" --iters 1 --warmup 0 \
      > "$res/ncu_${t}_$tag.txt" 2>&1
    stamp "ncu $t $sl rc $?"; sed -i '/^==[A-Z]*==/d' "$res/ncu_${t}_$tag.csv"
  done
done
