#!/usr/bin/env bash
# Call 5 (H100): the channel-last backward of rows in two launches, the full warps and then the
# warps with flags (chapter 09's cl_tiled, ClPass::full and ClPass::mixed): the tests of chapters 09
# and 10; the rows backward at 8 x 4096 x 4096 bf16 W 4 against chapter 09's kernel (8 documents a
# row with states, the states alone, no states); then the GPU check's chapter 10 section (its
# benchmarks, resources, Nsight Compute and sanitizers) into gpu-check/. Run from the repository
# root with OUT set; everything comes back as one run.tgz.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
b=$root/${BUILD_DIR:-build/gpu-check}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'sed -i "s#$root/##g" "$res"/*.log "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"
cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure.log" 2>&1
cmake --build "$b" -j "$(nproc)" --target ch10_packed_sequences conv1d_tests_ch10 ch09_direct_backward conv1d_tests_ch09 > "$res/build.log" 2>&1 || { tail -n 60 "$res/build.log"; exit 1; }
stamp "build: $(grep -c warning "$res/build.log") warning lines" | tee "$res/build_summary.txt"
E=$b/chapters/10_packed_sequences/ch10_packed_sequences
cuobjdump --dump-resource-usage "$E" | grep -A1 'conv_bwd_cl' | c++filt > "$res/resources.txt"
bench() {  # bench TAG ARGS...
  local tag=$1; shift
  "$E" "$@" --summary "$res/bench_$tag.tsv" > "$res/one.log" 2>&1 || { echo "FAIL $tag $*"; tail -5 "$res/one.log"; }
  { echo "=== $tag $*"; cat "$res/one.log"; } >> "$res/bench.log"
}
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --form rows --layout channel-last --direction backward --dtype bf16)
bench rows "${big[@]}" --initial-states --seq-lens random:8
bench states "${big[@]}" --initial-states --seq-lens none
bench nostates "${big[@]}" --seq-lens none
stamp "bench: $(grep -c FAIL "$res/bench.log") failures"
grep -E 'against' "$res/bench.log"
CONV1D_REQUIRE_GPU=1 ctest --test-dir "$b" -R 'Ch10|ch10|Ch09|ch09' -j 4 --output-on-failure > "$res/ctest.txt" 2>&1
stamp "ctest rc $?: $(grep -E 'tests passed' "$res/ctest.txt")"
GPU_CHECK_STEPS=sections GPU_CHECK_SECTIONS='49b*' scripts/gpu-check.sh "$res/gpu-check" --skip-build > "$res/gpu-check.log" 2>&1
stamp "gpu-check 49b rc $?"
cat "$res/gpu-check/summary.md"
