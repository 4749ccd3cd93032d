#!/usr/bin/env bash
# The one-division lead (one_division.patch: a tile that is a piece of one row finds its batch row
# once, not once a vector) and the same with the words asked a tile ahead
# (one_division_ahead.patch), each in a scratch copy, against the tree as committed, all three built
# in the same call. Then the channel-first rows forward at 8 x 4096 x 4096 bf16 (8 and 64 documents,
# bias and SiLU, the states alone) on the three, back to back, each against chapter 08's plain
# kernel in the same run, and chapter 08's own benchmark; memcheck and racecheck on a packing with
# more tiles than the grid has blocks; chapters 08, 09 and 10's tests on both patched trees.
# Written for the twenty-first version's tree (the commit before one_division.patch went in): on a later
# tree take the patch back out first (git apply -R) or it will not apply.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'exit 143' TERM
trap 'sed -i "s#$root/##g; s#/tmp/probe-[a-z]*/##g" "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"; cat "$res/gpu.txt"
declare -A src=([base]=$root [od]=/tmp/probe-od [oda]=/tmp/probe-oda)
declare -A patch=([od]=one_division.patch [oda]=one_division_ahead.patch)
for t in od oda; do
  rm -rf "${src[$t]}"; mkdir -p "${src[$t]}"
  tar --exclude=./build --exclude=./.git -cf - . | tar -xf - -C "${src[$t]}"
  (cd "${src[$t]}" && git init -q && git apply "results/one-path/${patch[$t]}") && stamp "$t: ${patch[$t]} applied"
done
build() {  # build TREE TARGETS...
  local s=${src[$1]}
  cmake -S "$s" -B "$s/build/probe" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
    > "$res/configure_$1.txt" 2>&1 && cmake --build "$s/build/probe" -j 6 --target "${@:2}" > "$res/build_$1.txt" 2>&1
}
build base ch08_direct_forward ch10_packed_sequences &
for t in od oda; do
  build $t ch08_direct_forward ch09_direct_backward ch10_packed_sequences conv1d_tests_ch08 conv1d_tests_ch09 \
    conv1d_tests_ch10 &
done
wait
stamp "builds done: $(for t in base od oda; do printf '%s %s error lines; ' $t "$(grep -c 'error' "$res/build_$t.txt")"; done)"
exe() { echo "${src[$1]}/build/probe/chapters/$2"; }
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --initial-states --dtype bf16 --form rows
     --layout channel-first --direction forward)
for c in "rows8|--seq-lens random:8" "rows64|--seq-lens random:64" "rows8_silu|--seq-lens random:8 --bias --silu" \
         "states|--seq-lens none"; do
  tag=${c%%|*}; read -r -a args <<< "${c#*|}"
  for t in base od oda; do
    "$(exe $t 10_packed_sequences/ch10_packed_sequences)" "${big[@]}" "${args[@]}" --summary "$res/bench_$t.tsv" \
      > "$res/ch10_${tag}_$t.txt" 2>&1
    stamp "$tag $t rc $?: $(awk '/^summary \(/ {s = 1; next} s && $2 ~ /^[0-9.]+$/ {printf "%s %s ms; ", $1, $4}' "$res/ch10_${tag}_$t.txt")"
  done
done
for c in "bf16|" "bf16_silu|--bias --silu"; do
  tag=${c%%|*}; read -r -a args <<< "${c#*|}"
  for t in base od oda; do
    "$(exe $t 08_direct_forward/ch08_direct_forward)" --batch 8 --dim 4096 --seqlen 4096 --width 4 --dtype bf16 \
      "${args[@]}" --layout channel-first --iters 20 --warmup 3 --summary "$res/bench08_$t.tsv" > "$res/ch08_${tag}_$t.txt" 2>&1
    stamp "ch08 $tag $t rc $?: $(awk '/^summary \(/ {s = 1; next} s && $2 ~ /^[0-9.]+$/ {printf "%s %s ms; ", $1, $4}' "$res/ch08_${tag}_$t.txt")"
  done
done
for t in od oda; do
  for tool in memcheck racecheck; do
    compute-sanitizer --tool $tool --error-exitcode 1 "$(exe $t 10_packed_sequences/ch10_packed_sequences)" --batch 2 \
      --dim 256 --seqlen 8192 --width 4 --dtype bf16 --initial-states --form rows --layout channel-first \
      --direction forward --seq-lens random:8 --bias --silu --iters 1 --warmup 0 > "$res/sanitizer_${tool}_$t.txt" 2>&1
    stamp "$t $tool rc $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$res/sanitizer_${tool}_$t.txt")"
  done
done
for t in od oda; do
  (CONV1D_REQUIRE_GPU=1 timeout 150 ctest --test-dir "${src[$t]}/build/probe" -R '[cC]h(08|09|10)' -j 4 \
    --output-on-failure > "$res/ctest_$t.txt" 2>&1; echo "rc $?" >> "$res/ctest_$t.txt") &
done
wait
for t in od oda; do stamp "ctest $t: $(grep -E 'tests passed' "$res/ctest_$t.txt" | tail -1) $(tail -1 "$res/ctest_$t.txt")"; done
