#!/usr/bin/env bash
# The channel-last backward's mixed tiles walked as one sequence and then amended (the tree as it
# is, `cur`: two launches, the mixed one on the side stream), and the same in one launch for the
# rows (`one`: one_launch.patch), built side by side. The tests of chapters 09 and 10 on cur; the
# channel-last backward at 8 x 4096 x 4096 W 4 on both (rows with 8 documents, the states alone,
# bias and SiLU, fp32, varlen), and on `one` the tests of chapter 10's backward too.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'exit 143' TERM
trap 'sed -i "s#$root/##g; s#/tmp/probe-[a-z0-9]*/##g" "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"; cat "$res/gpu.txt"
declare -A src=([cur]=$root [one]=/tmp/probe-one)
rm -rf "${src[one]}"; mkdir -p "${src[one]}"
tar --exclude=./build --exclude=./.git -cf - . | tar -xf - -C "${src[one]}"
(cd "${src[one]}" && git init -q && git apply results/cl-bwd-amend/one_launch.patch) || stamp "one: patch FAILED"
build() {
  local s=${src[$1]}
  cmake -S "$s" -B "$s/build/gpu-check" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
    > "$res/configure_$1.txt" 2>&1 && cmake --build "$s/build/gpu-check" -j "$2" --target "${@:3}" > "$res/build_$1.txt" 2>&1
}
build cur 10 ch10_packed_sequences conv1d_tests_ch09 conv1d_tests_ch10 &
build one 6 ch10_packed_sequences conv1d_tests_ch10 &
wait
stamp "builds done: $(for t in cur one; do printf '%s %s error lines, %s warning lines; ' $t "$(grep -c 'error' "$res/build_$t.txt")" "$(grep -c 'warning' "$res/build_$t.txt")"; done)"
CONV1D_REQUIRE_GPU=1 timeout 150 ctest --test-dir "$root/build/gpu-check" -R 'Ch09|Ch10' -j 8 --output-on-failure \
  > "$res/ctest_cur.txt" 2>&1
stamp "ctest cur rc $?: $(grep -E 'tests passed' "$res/ctest_cur.txt" | tail -1)"
exe() { echo "${src[$1]}/build/gpu-check/chapters/10_packed_sequences/ch10_packed_sequences"; }
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
bench rows8 bf16 "--form rows --seq-lens random:8" cur one cur one
bench states bf16 "--form rows --seq-lens none" cur one
bench silu8 bf16 "--form rows --seq-lens random:8 --bias --silu" cur one
bench fp32rows8 fp32 "--form rows --seq-lens random:8" cur one
bench varlen bf16 "--form varlen --seq-lens random:64" cur
bench varlensilu bf16 "--form varlen --seq-lens random:64 --bias --silu" cur
CONV1D_REQUIRE_GPU=1 timeout $((570 - (SECONDS - start))) ctest --test-dir "${src[one]}/build/gpu-check" -R 'Ch10' -j 8 \
  --output-on-failure > "$res/ctest_one.txt" 2>&1
stamp "ctest one rc $?: $(grep -E 'tests passed' "$res/ctest_one.txt" | tail -1)"
