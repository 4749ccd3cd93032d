#!/usr/bin/env bash
# The words of taps fetched with the tiles (tile_words.patch, in a scratch copy, against the tree as
# committed, the twenty-second version; both built in the same call): where every tile lies in one
# row and the map's rows are on 16-byte boundaries, each stage holds its tile's 512 words after
# its vectors, one 16-byte cp.async a thread in the tile's own group, so the barrier that waits for
# the tile waits for the words and no thread waits on a load of its own. Then the channel-first
# rows forward at 8 x 4096 x 4096 bf16 (8 and 64 documents, bias and SiLU, the states alone) on
# both, back to back, each against chapter 08's plain kernel in the same run, and chapter 08's own
# benchmark; memcheck, racecheck and initcheck on a packing with more tiles than the grid has
# blocks; chapter 08's and chapter 10's forward tests on the patched tree.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'exit 143' TERM
trap 'sed -i "s#$root/##g; s#/tmp/probe-[a-z]*/##g" "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"; cat "$res/gpu.txt"
declare -A src=([base]=$root [tw]=/tmp/probe-tw)
rm -rf "${src[tw]}"; mkdir -p "${src[tw]}"
tar --exclude=./build --exclude=./.git -cf - . | tar -xf - -C "${src[tw]}"
(cd "${src[tw]}" && git init -q && git apply results/one-path/tile_words.patch) && stamp "tw: tile_words.patch applied"
build() {  # build TREE TARGETS...
  local s=${src[$1]}
  cmake -S "$s" -B "$s/build/probe" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
    > "$res/configure_$1.txt" 2>&1 && cmake --build "$s/build/probe" -j 8 --target "${@:2}" > "$res/build_$1.txt" 2>&1
}
build base ch08_direct_forward ch10_packed_sequences &
build tw ch08_direct_forward ch10_packed_sequences conv1d_tests_ch08 conv1d_tests_ch10 &
wait
stamp "builds done: $(for t in base tw; do printf '%s %s error lines; ' $t "$(grep -c 'error' "$res/build_$t.txt")"; done)"
exe() { echo "${src[$1]}/build/probe/chapters/$2"; }
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --initial-states --dtype bf16 --form rows
     --layout channel-first --direction forward)
for c in "rows8|--seq-lens random:8" "rows64|--seq-lens random:64" "rows8_silu|--seq-lens random:8 --bias --silu" \
         "states|--seq-lens none"; do
  tag=${c%%|*}; read -r -a args <<< "${c#*|}"
  for t in base tw; do
    "$(exe $t 10_packed_sequences/ch10_packed_sequences)" "${big[@]}" "${args[@]}" --summary "$res/bench_$t.tsv" \
      > "$res/ch10_${tag}_$t.txt" 2>&1
    stamp "$tag $t rc $?: $(awk '/^summary \(/ {s = 1; next} s && $2 ~ /^[0-9.]+$/ {printf "%s %s ms; ", $1, $4}' "$res/ch10_${tag}_$t.txt")"
  done
done
for t in base tw; do
  "$(exe $t 08_direct_forward/ch08_direct_forward)" --batch 8 --dim 4096 --seqlen 4096 --width 4 --dtype bf16 \
    --layout channel-first --iters 20 --warmup 3 --summary "$res/bench08_$t.tsv" > "$res/ch08_bf16_$t.txt" 2>&1
  stamp "ch08 bf16 $t rc $?: $(awk '/^summary \(/ {s = 1; next} s && $2 ~ /^[0-9.]+$/ {printf "%s %s ms; ", $1, $4}' "$res/ch08_bf16_$t.txt")"
done
for tool in memcheck racecheck initcheck; do
  compute-sanitizer --tool $tool --error-exitcode 1 "$(exe tw 10_packed_sequences/ch10_packed_sequences)" --batch 2 \
    --dim 256 --seqlen 8192 --width 4 --dtype bf16 --initial-states --form rows --layout channel-first \
    --direction forward --seq-lens random:8 --bias --silu --iters 1 --warmup 0 > "$res/sanitizer_${tool}_tw.txt" 2>&1
  stamp "tw $tool rc $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$res/sanitizer_${tool}_tw.txt")"
done
CONV1D_REQUIRE_GPU=1 timeout 200 ctest --test-dir "${src[tw]}/build/probe" -R 'Ch08|Ch10Rows\.|Ch10Chunks\.' -j 6 \
  --output-on-failure > "$res/ctest_tw.txt" 2>&1
stamp "ctest tw rc $?: $(grep -E 'tests passed' "$res/ctest_tw.txt" | tail -1)"
