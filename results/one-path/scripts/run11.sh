#!/usr/bin/env bash
# The words with the tiles, read from shared memory before the next tile's copies are asked for
# rather than after (run10's profile: after the barrier every warp waited longer on memory): the
# tree as committed (base), on three stages (tile_words_3stages_read_first.patch, twr3) and on
# four (tile_words_read_first.patch, twr4), each in a scratch copy but the first, all built in the
# same call. Otherwise as run9.sh.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'exit 143' TERM
trap 'sed -i "s#$root/##g; s#/tmp/probe-[a-z0-9]*/##g" "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"; cat "$res/gpu.txt"
declare -A src=([base]=$root [twr3]=/tmp/probe-twr3 [twr4]=/tmp/probe-twr4)
declare -A patch=([twr3]=tile_words_3stages_read_first.patch [twr4]=tile_words_read_first.patch)
for t in twr3 twr4; do
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
build twr3 ch08_direct_forward ch10_packed_sequences conv1d_tests_ch08 conv1d_tests_ch10 &
build twr4 ch08_direct_forward ch10_packed_sequences &
wait
stamp "builds done: $(for t in base twr3 twr4; do printf '%s %s error lines; ' $t "$(grep -c 'error' "$res/build_$t.txt")"; done)"
exe() { echo "${src[$1]}/build/probe/chapters/$2"; }
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --initial-states --dtype bf16 --form rows
     --layout channel-first --direction forward)
for c in "rows8|--seq-lens random:8" "rows64|--seq-lens random:64" "states|--seq-lens none"; do
  tag=${c%%|*}; read -r -a args <<< "${c#*|}"
  for t in base twr3 twr4; do
    "$(exe $t 10_packed_sequences/ch10_packed_sequences)" "${big[@]}" "${args[@]}" --summary "$res/bench_$t.tsv" \
      > "$res/ch10_${tag}_$t.txt" 2>&1
    stamp "$tag $t rc $?: $(awk '/^summary \(/ {s = 1; next} s && $2 ~ /^[0-9.]+$/ {printf "%s %s ms; ", $1, $4}' "$res/ch10_${tag}_$t.txt")"
  done
done
for t in base twr3 twr4; do
  "$(exe $t 08_direct_forward/ch08_direct_forward)" --batch 8 --dim 4096 --seqlen 4096 --width 4 --dtype bf16 \
    --layout channel-first --iters 20 --warmup 3 --summary "$res/bench08_$t.tsv" > "$res/ch08_bf16_$t.txt" 2>&1
  stamp "ch08 bf16 $t rc $?: $(awk '/^summary \(/ {s = 1; next} s && $2 ~ /^[0-9.]+$/ {printf "%s %s ms; ", $1, $4}' "$res/ch08_bf16_$t.txt")"
done
for tool in memcheck racecheck; do
  compute-sanitizer --tool $tool --error-exitcode 1 "$(exe twr3 10_packed_sequences/ch10_packed_sequences)" --batch 2 \
    --dim 256 --seqlen 8192 --width 4 --dtype bf16 --initial-states --form rows --layout channel-first \
    --direction forward --seq-lens random:8 --bias --silu --iters 1 --warmup 0 > "$res/sanitizer_${tool}_twr3.txt" 2>&1
  stamp "twr3 $tool rc $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$res/sanitizer_${tool}_twr3.txt")"
done
CONV1D_REQUIRE_GPU=1 timeout 200 ctest --test-dir "${src[twr3]}/build/probe" -R 'Ch08|Ch10Rows\.|Ch10Chunks\.' -j 6 \
  --output-on-failure > "$res/ctest_twr3.txt" 2>&1
stamp "ctest twr3 rc $?: $(grep -E 'tests passed' "$res/ctest_twr3.txt" | tail -1)"
