#!/usr/bin/env bash
# The words with the tiles again, on three stages (run8: with four, the words' shared memory cost a
# block a multiprocessor): the tree as committed (base, four stages), three stages alone
# (stages3.patch, s3) and the words with the tiles on three stages (tile_words_3stages.patch, tw3),
# each in a scratch copy but the first, all built in the same call. Otherwise as run7.sh.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'exit 143' TERM
trap 'sed -i "s#$root/##g; s#/tmp/probe-[a-z0-9]*/##g" "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"; cat "$res/gpu.txt"
declare -A src=([base]=$root [s3]=/tmp/probe-s3 [tw3]=/tmp/probe-tw3)
declare -A patch=([s3]=stages3.patch [tw3]=tile_words_3stages.patch)
for t in s3 tw3; do
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
build s3 ch08_direct_forward ch10_packed_sequences &
build tw3 ch08_direct_forward ch10_packed_sequences conv1d_tests_ch08 conv1d_tests_ch10 &
wait
stamp "builds done: $(for t in base s3 tw3; do printf '%s %s error lines; ' $t "$(grep -c 'error' "$res/build_$t.txt")"; done)"
exe() { echo "${src[$1]}/build/probe/chapters/$2"; }
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --initial-states --dtype bf16 --form rows
     --layout channel-first --direction forward)
for c in "rows8|--seq-lens random:8" "rows64|--seq-lens random:64" "states|--seq-lens none"; do
  tag=${c%%|*}; read -r -a args <<< "${c#*|}"
  for t in base s3 tw3; do
    "$(exe $t 10_packed_sequences/ch10_packed_sequences)" "${big[@]}" "${args[@]}" --summary "$res/bench_$t.tsv" \
      > "$res/ch10_${tag}_$t.txt" 2>&1
    stamp "$tag $t rc $?: $(awk '/^summary \(/ {s = 1; next} s && $2 ~ /^[0-9.]+$/ {printf "%s %s ms; ", $1, $4}' "$res/ch10_${tag}_$t.txt")"
  done
done
for t in base s3 tw3; do
  "$(exe $t 08_direct_forward/ch08_direct_forward)" --batch 8 --dim 4096 --seqlen 4096 --width 4 --dtype bf16 \
    --layout channel-first --iters 20 --warmup 3 --summary "$res/bench08_$t.tsv" > "$res/ch08_bf16_$t.txt" 2>&1
  stamp "ch08 bf16 $t rc $?: $(awk '/^summary \(/ {s = 1; next} s && $2 ~ /^[0-9.]+$/ {printf "%s %s ms; ", $1, $4}' "$res/ch08_bf16_$t.txt")"
done
for tool in memcheck racecheck; do
  compute-sanitizer --tool $tool --error-exitcode 1 "$(exe tw3 10_packed_sequences/ch10_packed_sequences)" --batch 2 \
    --dim 256 --seqlen 8192 --width 4 --dtype bf16 --initial-states --form rows --layout channel-first \
    --direction forward --seq-lens random:8 --bias --silu --iters 1 --warmup 0 > "$res/sanitizer_${tool}_tw3.txt" 2>&1
  stamp "tw3 $tool rc $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$res/sanitizer_${tool}_tw3.txt")"
done
CONV1D_REQUIRE_GPU=1 timeout 200 ctest --test-dir "${src[tw3]}/build/probe" -R 'Ch08|Ch10Rows\.|Ch10Chunks\.' -j 6 \
  --output-on-failure > "$res/ctest_tw3.txt" 2>&1
stamp "ctest tw3 rc $?: $(grep -E 'tests passed' "$res/ctest_tw3.txt" | tail -1)"
