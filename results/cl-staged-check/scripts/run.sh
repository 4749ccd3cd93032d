#!/usr/bin/env bash
# The thirtieth version as committed (chapter 10's channel-last backward on chapter 09's staged
# kernel, its walk with flags a loop): chapters 09 and 10 and their tests built; their tests with
# CONV1D_REQUIRE_GPU=1; then the GPU check's chapter-10 section whole (GPU_CHECK_ARCHIVE); then, as
# time allows, chapter 09's channel-last report at 8 x 4096 x 4096 bf16.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
mkdir -p "$res/section_49b/logs"
trap 'exit 143' TERM
trap 'sed -i "s#$root/##g" "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"; cat "$res/gpu.txt"
cmake -S . -B build/gpu-check -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
  > "$res/configure.txt" 2>&1 &&
  cmake --build build/gpu-check -j "$(nproc)" --target ch09_direct_backward conv1d_tests_ch09 ch10_packed_sequences \
  conv1d_tests_ch10 > "$res/build.txt" 2>&1
stamp "build rc $?: $(grep -c warning "$res/build.txt") warning lines"
CONV1D_REQUIRE_GPU=1 timeout 170 ctest --test-dir build/gpu-check -R 'Ch09|Ch10|ch09|ch10' -j 12 --output-on-failure \
  > "$res/ctest.txt" 2>&1
stamp "ctest rc $?: $(grep -E 'tests passed' "$res/ctest.txt" | tail -1); $(grep -cE '\*\*\*Skipped|Not Run' "$res/ctest.txt") skipped"
GPU_CHECK_ARCHIVE=$res/section_49b.tgz BUILD_DIR=$root/build/gpu-check GPU_CHECK_STEPS=sections \
  GPU_CHECK_SECTIONS="49b-*" timeout 250 scripts/gpu-check.sh "$res/section_49b" --skip-build \
  > "$res/section_49b/logs/check.log" 2>&1
stamp "section 49b rc $?"; cat "$res/section_49b/summary.md"
for dt in bf16 fp32; do
  [ $((SECONDS - start)) -lt 540 ] || break
  timeout 40 build/gpu-check/chapters/09_direct_backward/ch09_direct_backward --batch 8 --dim 4096 --seqlen 4096 \
    --width 4 --iters 20 --warmup 3 --dtype "$dt" --layout channel-last --reduction deterministic \
    --summary "$res/bench_09_$dt.tsv" > "$res/ch09_$dt.txt" 2>&1
  stamp "ch09 $dt rc $?: $(grep -c PASS "$res/ch09_$dt.txt") PASS, $(grep -c FAIL "$res/ch09_$dt.txt") FAIL"
done
