#!/usr/bin/env bash
# Third call: the working tree with span_later.patch as well (chapter 09's staged channel-last
# backward asks chapter 10's span of a tile after it has asked the filters and the rows before the
# tile, not before: its wait on the ids overlaps theirs) against the tree without it (edge_loads
# alone: a scratch copy, span_later.patch taken back out), rows of 8 documents and states, base and
# patched in turn, three times; chapter 09's and 10's tests on the patched build, and the GPU
# check's chapter-10 section on it in the time left.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
mkdir -p "$res/section_49b/logs"
trap 'exit 143' TERM
trap 'sed -i "s#$root/##g; s#/tmp/probe/##g" "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
p=/tmp/probe; rm -rf $p; mkdir -p $p
tar --exclude=./build --exclude=./.git -cf - . | tar -xf - -C $p
(cd $p && git init -q && git apply -R results/edge-loads/span_later.patch) && stamp "patch taken out of the base copy"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"; cat "$res/gpu.txt"
build() {  # build SRC DIR LOG TARGETS...
  cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$3.configure" 2>&1 &&
    cmake --build "$2" -j 8 --target "${@:4}" > "$3" 2>&1
}
build $p $p/build "$res/build_base.txt" ch10_packed_sequences &
build "$root" "$root/build/gpu-check" "$res/build_patched.txt" ch10_packed_sequences ch09_direct_backward \
  conv1d_tests_ch09 conv1d_tests_ch10 &
wait
stamp "builds: base $(grep -c 'error' "$res/build_base.txt") / patched $(grep -c 'error' "$res/build_patched.txt") error lines, $(cat "$res"/build_*.txt | grep -c warning) warning lines"
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --initial-states --direction backward
     --dtype bf16 --form rows --layout channel-last --seq-lens random:8)
for round in 1 2 3; do
  for b in base patched; do
    exe=$p/build/chapters/10_packed_sequences/ch10_packed_sequences
    [[ $b == patched ]] && exe=$root/build/gpu-check/chapters/10_packed_sequences/ch10_packed_sequences
    timeout 60 "$exe" "${big[@]}" --summary "$res/bench_${b}_$round.tsv" > "$res/ch10_rows8_${b}_$round.txt" 2>&1
    stamp "rows8 $b $round rc $?: $(awk '/^summary \(/ {s = 1; next} s && $2 ~ /^[0-9.]+$/ {printf "%s %s ms; ", $1, $4}' "$res/ch10_rows8_${b}_$round.txt")"
  done
done
(CONV1D_REQUIRE_GPU=1 timeout 170 ctest --test-dir build/gpu-check -R '[cC]h(09|10)' -j 12 --output-on-failure > "$res/ctest_patched.txt" 2>&1)
stamp "ctest ch09+ch10 patched rc $?: $(grep -E 'tests passed' "$res/ctest_patched.txt" | tail -1)"
left=$((590 - (SECONDS - start)))
GPU_CHECK_ARCHIVE=$res/section_49b.tgz BUILD_DIR=$root/build/gpu-check GPU_CHECK_STEPS=sections \
  GPU_CHECK_SECTIONS="49b-*" timeout "$left" scripts/gpu-check.sh "$res/section_49b" --skip-build \
  > "$res/section_49b/logs/check.log" 2>&1
stamp "section 49b rc $?"; cat "$res/section_49b/summary.md"
