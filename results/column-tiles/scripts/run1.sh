#!/usr/bin/env bash
# First call: the working tree with column_tiles.patch (chapter 08's channel-first staged forward
# takes chapter 10's rows with a map of taps in column tiles: a warp's lanes at the same positions
# of 32 channels) against the tree without it (a scratch copy, the patch taken back out), at
# 8 x 4096 x 4096, base and patched in turn; then chapters 08's and 10's tests and two sanitizers
# on the patched build.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'exit 143' TERM
trap 'sed -i "s#$root/##g; s#/tmp/probe/##g" "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
p=/tmp/probe; rm -rf $p; mkdir -p $p
tar --exclude=./build --exclude=./.git -cf - . | tar -xf - -C $p
(cd $p && git init -q && git apply -R results/column-tiles/column_tiles.patch) && stamp "patch taken out of the base copy"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"; cat "$res/gpu.txt"
build() {  # build SRC DIR LOG TARGETS...
  cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$3.configure" 2>&1 &&
    cmake --build "$2" -j 8 --target "${@:4}" > "$3" 2>&1
}
build $p $p/build "$res/build_base.txt" ch10_packed_sequences &
build "$root" "$root/build/probe" "$res/build_patched.txt" ch10_packed_sequences ch08_direct_forward \
  conv1d_tests_ch08 conv1d_tests_ch10 &
wait
stamp "builds: base $(grep -c 'error' "$res/build_base.txt") / patched $(grep -c 'error' "$res/build_patched.txt") error lines, $(cat "$res"/build_*.txt | grep -c warning) warning lines"
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --initial-states --direction forward
     --form rows --layout channel-first)
configs=("rows8|--dtype bf16 --seq-lens random:8"
         "states|--dtype bf16 --seq-lens none"
         "rows64|--dtype bf16 --seq-lens random:64"
         "rows8_silu|--dtype bf16 --seq-lens random:8 --bias --silu"
         "rows8_fp32|--dtype fp32 --seq-lens random:8")
for round in 1 2; do
  for c in "${configs[@]}"; do
    tag=${c%%|*}; read -r -a args <<< "${c#*|}"
    [[ $round == 2 && $tag != rows8 && $tag != states ]] && continue
    for b in base patched; do
      exe=$p/build/chapters/10_packed_sequences/ch10_packed_sequences
      [[ $b == patched ]] && exe=$root/build/probe/chapters/10_packed_sequences/ch10_packed_sequences
      timeout 60 "$exe" "${big[@]}" "${args[@]}" --summary "$res/bench_${b}_$round.tsv" > "$res/ch10_${tag}_${b}_$round.txt" 2>&1
      stamp "$tag $b $round rc $?: $(awk '/^summary \(/ {s = 1; next} s && $2 ~ /^[0-9.]+$/ {printf "%s %s ms; ", $1, $4}' "$res/ch10_${tag}_${b}_$round.txt")"
    done
  done
done
(CONV1D_REQUIRE_GPU=1 timeout 200 ctest --test-dir build/probe -R '[cC]h(08|10)' -j 12 --output-on-failure > "$res/ctest_patched.txt" 2>&1)
stamp "ctest ch08+ch10 patched rc $?: $(grep -E 'tests passed' "$res/ctest_patched.txt" | tail -1)"
exe=$root/build/probe/chapters/10_packed_sequences/ch10_packed_sequences
for tool in memcheck racecheck; do
  for c in "rows|--batch 3 --dim 37 --seqlen 200 --width 4 --seq-lens random:5"
           "long|--batch 2 --dim 40 --seqlen 1040 --width 3 --seq-lens random:9"; do
    tag=${c%%|*}; read -r -a args <<< "${c#*|}"
    timeout 90 compute-sanitizer --tool $tool --error-exitcode 9 "$exe" --dtype bf16 --initial-states \
      --direction forward --form rows --layout channel-first --iters 1 --warmup 0 "${args[@]}" \
      > "$res/sanitizer_${tool}_$tag.txt" 2>&1
    stamp "$tool $tag rc $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$res/sanitizer_${tool}_$tag.txt" | tail -1)"
  done
done
