#!/usr/bin/env bash
# Calls 5 (H100) and 6 (H200): the code as committed (flipped stage for runs of 4 chunks, blocks of
# 128 for the big steps): chapter 11's tests, then the goal shapes and steps of 2 and 8 tokens with
# the launch's own choices, and on the H100 the block sizes at B = 256 (T = 4 and 1). Run from the
# repository root with OUT set; everything comes back as one run.tgz.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
b=$root/${BUILD_DIR:-build/gpu-check}
res=$(mktemp -d); start=$SECONDS
trap 'tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"
cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure.log" 2>&1
cmake --build "$b" -j "$(nproc)" --target ch11_decode_update conv1d_tests_ch11 > "$res/build.log" 2>&1 || { tail -n 60 "$res/build.log"; exit 1; }
echo "build: $((SECONDS - start)) s, $(grep -c warning "$res/build.log") warning lines" | tee "$res/build_summary.txt"
CONV1D_REQUIRE_GPU=1 ctest --test-dir "$b" -R 'Ch11|ch11' -j 4 --output-on-failure > "$res/ctest_ch11.txt" 2>&1
echo "ctest rc $?: $(grep -E 'tests passed' "$res/ctest_ch11.txt")"
sed -i "s#$root/##g" "$res/ctest_ch11.txt"
E=$b/chapters/11_decode_update/ch11_decode_update
bench() {  # bench TAG ARGS...
  local tag=$1; shift
  "$E" "$@" --summary "$res/bench_$tag.tsv" > /tmp/one.log 2>&1 || { echo "FAIL $tag $*"; tail -5 /tmp/one.log; }
  { echo "=== $tag $*"; cat /tmp/one.log; } >> "$res/bench.log"
}
base=(--dim 4096 --width 4 --silu --steps 64 --iters 20 --warmup 3 --dtype bf16 --launch graph)
for shape in "256 4" "256 1" "64 1" "1 1" "256 2" "256 8" "64 4"; do
  read -r bb t <<< "$shape"
  bench goal "${base[@]}" --batch "$bb" --seqlen "$t"
done
if [[ ${SWEEP:-1} == 1 ]]; then
  for t in 4 1; do for th in 64 128 256; do
    bench threads "${base[@]}" --buffer linear --batch 256 --seqlen $t --threads $th
  done; done
fi
sed -i "s#$root/##g" "$res/bench.log"
echo "done: $((SECONDS - start)) s"
