#!/usr/bin/env bash
# Chapter 08's channel-last staged kernel (cl_staged.cuh) in the project: builds chapters 08, 10
# and 11 and their tests; runs their unit tests and chapter tests; then the GPU check's chapter-08
# section (benchmark report, sweeps, registers, Nsight Compute, sanitizers). run.tgz comes back.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'sed -i "s#$root/##g" "$res"/*.txt "$res"/gpu-check/*.md 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
b=$root/build/gpu-check
nvidia-smi --query-gpu=name --format=csv,noheader > "$res/gpu.txt"; cat "$res/gpu.txt"
cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure.txt" 2>&1
cmake --build "$b" -j "$(nproc)" --target ch08_direct_forward conv1d_tests_ch08 ch10_packed_sequences \
  conv1d_tests_ch10 ch11_decode_update conv1d_tests_ch11 ch05_wmma_gemm -- -k 0 > "$res/build.txt" 2>&1 ||
  { grep -B2 -A12 "error" "$res/build.txt" | head -60; }
stamp "build: $(grep -c warning "$res/build.txt") warning lines"
CONV1D_REQUIRE_GPU=1 ctest --test-dir "$b" -R 'unit\.Ch08|unit\.Ch10|unit\.Ch11|chapter\.ch08|chapter\.ch10' \
  -j 4 --output-on-failure > "$res/ctest.txt" 2>&1
stamp "ctest rc $?: $(grep -E 'tests passed' "$res/ctest.txt")"
grep -E "^\s*[0-9]+/[0-9]+ Test.*(Failed|Exception|Timeout)" "$res/ctest.txt" | head -20
GPU_CHECK_STEPS='sections' GPU_CHECK_SECTIONS='48*' scripts/gpu-check.sh "$res/gpu-check" --skip-build > "$res/gpu-check.txt" 2>&1
stamp "gpu-check rc $?"
grep -E "bench|sanitizer|registers|FAIL" "$res/gpu-check/summary.md" | cut -c1-300
awk -F'\t' 'NR==1 || /cl_|cf_staged/' "$res/gpu-check/results/bench_08_kernels.tsv" | cut -f3,4,5,8,11 | head -60
