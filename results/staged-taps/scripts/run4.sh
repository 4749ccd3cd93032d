#!/usr/bin/env bash
# The words' kernel with SiLU compiled in or out and two stages for chapter 10's policies (cur, the
# tree as it is: chapter 09's own kernel keeps three stages and its code), against the same with a
# warp vote (vote.patch) and with three stages again (stages3.patch), each built in the same call.
# The tests of chapters 09, 10 and 11 on cur; chapter 10's channel-first rows backward at
# 8 x 4096 x 4096: bf16 with 8 and 64 documents a row, the states alone, 8 documents with bias and
# SiLU, and fp32 on cur; 8 documents and SiLU on the other two. Results under $OUT/run.tgz.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'exit 143' TERM
trap 'sed -i "s#$root/##g; s#/tmp/probe-[a-z0-9]*/##g" "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"; cat "$res/gpu.txt"
declare -A src=([cur]=$root [vote]=/tmp/probe-vote4 [s3]=/tmp/probe-s34)
declare -A patch=([vote]="vote.patch" [s3]="stages3.patch")
for t in vote s3; do
  rm -rf "${src[$t]}"; mkdir -p "${src[$t]}"
  tar --exclude=./build --exclude=./.git -cf - . | tar -xf - -C "${src[$t]}"
  (cd "${src[$t]}" && git init -q && git apply "results/staged-taps/${patch[$t]}") || stamp "$t: patch FAILED"
done
build() {
  local s=${src[$1]}
  cmake -S "$s" -B "$s/build/probe" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
    > "$res/configure_$1.txt" 2>&1 && cmake --build "$s/build/probe" -j "$2" --target "${@:3}" > "$res/build_$1.txt" 2>&1
}
build cur 8 ch10_packed_sequences conv1d_tests_ch09 conv1d_tests_ch10 conv1d_tests_ch11 &
build vote 4 ch10_packed_sequences &
build s3 4 ch10_packed_sequences &
wait
stamp "builds done: $(for t in cur vote s3; do printf '%s %s error lines, %s warning lines; ' $t "$(grep -c 'error' "$res/build_$t.txt")" "$(grep -c 'warning' "$res/build_$t.txt")"; done)"
CONV1D_REQUIRE_GPU=1 timeout 200 ctest --test-dir "$root/build/probe" -R 'Ch09|Ch10|Ch11' -j 8 --output-on-failure \
  > "$res/ctest_cur.txt" 2>&1
stamp "ctest cur rc $?: $(grep -E 'tests passed' "$res/ctest_cur.txt" | tail -1)"
exe() { echo "${src[$1]}/build/probe/chapters/10_packed_sequences/ch10_packed_sequences"; }
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --initial-states --form rows
     --layout channel-first --direction backward)
bench() {  # bench TAG DTYPE "ARGS" TREES...
  local tag=$1 dt=$2 args; read -r -a args <<< "$3"
  for t in "${@:4}"; do
    timeout 120 "$(exe $t)" "${big[@]}" --dtype "$dt" "${args[@]}" --summary "$res/bench_${tag}_$t.tsv" \
      > "$res/ch10_${tag}_$t.txt" 2>&1
    stamp "$tag $t rc $?: $(awk '/^summary \(/ {s = 1; next} s && $2 ~ /^[0-9.]+$/ {printf "%s %s ms; ", $1, $4}' "$res/ch10_${tag}_$t.txt")"
  done
}
bench rows8 bf16 "--seq-lens random:8" cur vote s3
bench silu8 bf16 "--seq-lens random:8 --bias --silu" cur vote s3
bench states bf16 "--seq-lens none" cur
bench rows64 bf16 "--seq-lens random:64" cur
bench fp32rows8 fp32 "--seq-lens random:8" cur
