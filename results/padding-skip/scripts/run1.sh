#!/usr/bin/env bash
# First call of the thirty-seventh version (padding's warps skip the backward's arithmetic): the
# tree with the change (build/pad) and the same tree without it (padding-skip.patch reversed,
# build/base8) built side by side; chapter 10's tests on the changed tree; the channel-first rows
# backward timed in both, in turn, three rounds (8 documents, 64 documents, the states alone);
# then the GPU check's chapter-10 section whole on the changed tree. Written straight under $OUT.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}; start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
mkdir -p "$out/section_49b/logs" "$out/ab"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$out/gpu.txt"; cat "$out/gpu.txt"
base=$(mktemp -d); tar cf - --exclude=./build --exclude=./results . | tar xf - -C "$base"
(cd "$base" && git apply -R "$root/results/padding-skip/padding-skip.patch") && stamp "base: patch reversed"
build() {  # dir, source, targets...
  local dir=$1 src=$2; shift 2
  cmake -S "$src" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
    > "$out/build_$(basename "$dir").txt.configure" 2>&1 &&
    cmake --build "$dir" -j 8 --target "$@" > "$out/build_$(basename "$dir").txt" 2>&1
}
build "$root/build/gpu-check" . ch10_packed_sequences conv1d_tests_ch10 & build "$root/build/base8" "$base" ch10_packed_sequences & wait
stamp "builds: $(cat "$out"/build_*.txt | grep -c ' error') error lines, $(cat "$out"/build_*.txt | grep -c warning) warning lines"
CONV1D_REQUIRE_GPU=1 timeout 120 build/gpu-check/tests/conv1d_tests_ch10 > "$out/tests_ch10.txt" 2>&1
stamp "tests ch10 rc $?: $(grep -E '^\[  PASSED  \]|^\[  FAILED  \]|SKIPPED \]' "$out/tests_ch10.txt" | tr '\n' ' ')"
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --initial-states --direction backward
     --form rows --layout channel-first --dtype bf16)
for round in 1 2 3; do
  for cfg in rows8 rows64 states; do
    case $cfg in rows8) lens=random:8 ;; rows64) lens=random:64 ;; states) lens=none ;; esac
    for v in base8 gpu-check; do
      log="$out/ab/ch10_${cfg}_${v}_$round.txt"
      timeout 60 build/$v/chapters/10_packed_sequences/ch10_packed_sequences "${big[@]}" --seq-lens $lens \
        --summary "$out/ab/bench_${cfg}_${v}_$round.tsv" > "$log" 2>&1
      stamp "$cfg $v $round rc $?: $(awk '/^summary \(/ {s = 1; next} s && $2 ~ /^[0-9.]+$/ {printf "%s %s ms; ", $1, $4}' "$log")"
    done
  done
done
sed -i "s#$root/##g; s#$base/#<base>/#g" "$out"/ab/*.txt; tar czf "$out/ab.tgz" -C "$out" ab && rm -rf "$out/ab"
GPU_CHECK_ARCHIVE=$out/section_49b.tgz BUILD_DIR=$root/build/gpu-check GPU_CHECK_STEPS=sections \
  GPU_CHECK_SECTIONS="49b-*" timeout $((${LIMIT:-590} - (SECONDS - start))) scripts/gpu-check.sh "$out/section_49b" \
  --skip-build > "$out/section_49b/logs/check.log" 2>&1
stamp "section 49b rc $?"; cat "$out/section_49b/summary.md" 2>/dev/null
rm -rf "$out/section_49b/logs"  # (in the archive)
sed -i "s#$root/##g; s#$base/#<base>/#g" "$out"/*.txt "$out"/*.configure "$out"/section_49b/*.md 2>/dev/null
