#!/usr/bin/env bash
# One call (H200): chapter 11 as committed, with the launch's own choices. Builds chapter 11 and its
# tests, runs the tests, the goal shapes (graph and direct launches, linear and circular buffers),
# compute-sanitizer's four tools on the GPU check's awkward shapes and on a step big enough for
# blocks of 128 (T = 2, 4 and 8: runs of 2, 4 and 8 chunks), then the GPU check's chapters step for
# chapter 11 (its default shape, odd shapes in every dtype, the sanitizers at its small shape).
# Run from the repository root with OUT set; everything comes back as one run.tgz.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
b=$root/${BUILD_DIR:-build/gpu-check}
res=$(mktemp -d); start=$SECONDS
trap 'sed -i "s#$root/##g" "$res"/*.log "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"
cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure.log" 2>&1
cmake --build "$b" -j "$(nproc)" --target ch11_decode_update conv1d_tests_ch11 > "$res/build.log" 2>&1 || { tail -n 60 "$res/build.log"; exit 1; }
echo "build: $((SECONDS - start)) s, $(grep -c warning "$res/build.log") warning lines" | tee "$res/build_summary.txt"
CONV1D_REQUIRE_GPU=1 ctest --test-dir "$b" -R 'Ch11|ch11' -j 4 --output-on-failure > "$res/ctest_ch11.txt" 2>&1
echo "ctest rc $?: $(grep -E 'tests passed' "$res/ctest_ch11.txt")"
E=$b/chapters/11_decode_update/ch11_decode_update
bench() {  # bench TAG ARGS...
  local tag=$1; shift
  "$E" "$@" --summary "$res/bench_$tag.tsv" > "$res/one.log" 2>&1 || { echo "FAIL $tag $*"; tail -5 "$res/one.log"; }
  { echo "=== $tag $*"; cat "$res/one.log"; } >> "$res/bench.log"
}
base=(--dim 4096 --width 4 --silu --steps 64 --iters 20 --warmup 3 --dtype bf16)
for shape in "256 1" "64 1" "1 1" "256 4" "256 2" "256 8"; do
  read -r bb t <<< "$shape"
  bench goal "${base[@]}" --batch "$bb" --seqlen "$t"
done
echo "bench: $((SECONDS - start)) s"
: > "$res/sanitizers.txt"
for shape in "--batch 3 --dim 37 --seqlen 3 --width 3 --bias --silu --dtype fp32 --steps 5 --gather" \
             "--batch 2 --dim 16 --seqlen 5 --width 4 --dtype fp16 --steps 6 --state-len 7 --gather" \
             "--batch 5 --dim 1000 --seqlen 3 --width 4 --bias --silu --dtype bf16 --steps 3 --gather" \
             "--batch 80 --dim 4096 --seqlen 4 --width 4 --bias --silu --dtype bf16 --steps 2 --gather" \
             "--batch 80 --dim 4096 --seqlen 2 --width 4 --silu --dtype bf16 --steps 2" \
             "--batch 80 --dim 4096 --seqlen 8 --width 4 --silu --dtype fp16 --steps 2"; do
  for tool in memcheck racecheck initcheck synccheck; do
    # shellcheck disable=SC2086  # $shape is a list of flags
    compute-sanitizer --tool $tool --error-exitcode 99 "$E" $shape --iters 1 --warmup 0 > "$res/one.log" 2>&1
    rc=$?
    echo "$tool rc=$rc | $shape | $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$res/one.log" | tail -n1) | $(grep -m1 -o '[0-9]* registers, [0-9]* blocks of [0-9]* threads' "$res/one.log")" | tee -a "$res/sanitizers.txt"
    { echo "=== $tool $shape"; cat "$res/one.log"; } >> "$res/sanitizers.log"
  done
done
echo "sanitizers: $((SECONDS - start)) s"
GPU_CHECK_STEPS=chapters GPU_CHECK_CHAPTERS='ch11_*' BUILD_DIR=$b scripts/gpu-check.sh "$res/check" --skip-build > "$res/check.log" 2>&1
echo "chapters step rc $?"; cat "$res/check/summary.md"
echo "done: $((SECONDS - start)) s"
