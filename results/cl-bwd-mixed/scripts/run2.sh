#!/usr/bin/env bash
# The walk with flags loading its batch with no branch (rows out of range read from a row of zeros:
# zero_row.patch, the tree as it is, `cur`) against the committed code (`base`, the patch taken
# back), built side by side in one call. The tests of chapters 09 and 10 on cur; chapter 10's
# channel-last backward at 8 x 4096 x 4096 W 4 (bf16: 8 documents a row, the states alone, bias +
# SiLU; fp32; the varlen batch of 64) on both; Nsight Compute on cur's two launches of the rows.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'exit 143' TERM
trap 'sed -i "s#$root/##g; s#/tmp/probe-[a-z0-9]*/##g" "$res"/*.txt "$res"/*.csv 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"; cat "$res/gpu.txt"
declare -A src=([cur]=$root [base]=/tmp/probe-base)
rm -rf "${src[base]}"; mkdir -p "${src[base]}"
tar --exclude=./build --exclude=./.git -cf - . | tar -xf - -C "${src[base]}"
(cd "${src[base]}" && git init -q && git apply -R results/cl-bwd-mixed/zero_row.patch) || stamp "base: patch FAILED"
build() {
  local s=${src[$1]}
  cmake -S "$s" -B "$s/build/probe" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
    > "$res/configure_$1.txt" 2>&1 && cmake --build "$s/build/probe" -j "$2" --target "${@:3}" > "$res/build_$1.txt" 2>&1
}
build cur 10 ch10_packed_sequences conv1d_tests_ch09 conv1d_tests_ch10 &
build base 6 ch10_packed_sequences &
wait
stamp "builds done: $(for t in cur base; do printf '%s %s error lines, %s warning lines; ' $t "$(grep -c 'error' "$res/build_$t.txt")" "$(grep -c 'warning' "$res/build_$t.txt")"; done)"
CONV1D_REQUIRE_GPU=1 timeout 200 ctest --test-dir "$root/build/probe" -R 'Ch09|Ch10' -j 8 --output-on-failure \
  > "$res/ctest_cur.txt" 2>&1
stamp "ctest cur rc $?: $(grep -E 'tests passed' "$res/ctest_cur.txt" | tail -1)"
exe() { echo "${src[$1]}/build/probe/chapters/10_packed_sequences/ch10_packed_sequences"; }
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
bench rows8 bf16 "--form rows --seq-lens random:8" base cur base cur
bench states bf16 "--form rows --seq-lens none" base cur
bench silu8 bf16 "--form rows --seq-lens random:8 --bias --silu" base cur
bench fp32rows8 fp32 "--form rows --seq-lens random:8" base cur
bench varlen bf16 "--form varlen --seq-lens random:64" base cur
m=gpu__time_duration.sum,smsp__inst_executed.sum,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio,launch__registers_per_thread
ncu --csv --page raw --clock-control none --kernel-name regex:'conv_bwd_cl' --launch-count 3 --metrics "$m" \
  --log-file "$res/ncu_cur.csv" "$(exe cur)" --batch 8 --dim 4096 --seqlen 4096 --width 4 --dtype bf16 --initial-states \
  --form rows --layout channel-last --direction backward --seq-lens random:8 --iters 1 --warmup 0 > "$res/ncu_cur.txt" 2>&1
stamp "ncu rc $?"; sed -i '/^==[A-Z]*==/d' "$res/ncu_cur.csv"
