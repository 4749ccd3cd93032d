#!/usr/bin/env bash
# The twentieth version, second form, after run5.sh on the same machine (its build kept): the unit
# and CLI tests of chapters 08 to 11, then the GPU check's chapter-08 section.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'sed -i "s#$root/##g" "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
b=$root/build/gpu-check
nvidia-smi --query-gpu=name --format=csv,noheader > "$res/gpu.txt"; cat "$res/gpu.txt"
cmake --build "$b" -j "$(nproc)" --target ch05_wmma_gemm ch08_direct_forward conv1d_tests_ch08 ch09_direct_backward conv1d_tests_ch09 ch10_packed_sequences \
  conv1d_tests_ch10 ch11_decode_update conv1d_tests_ch11 -- -k 0 > "$res/build.txt" 2>&1 || { grep -B2 -A12 "error" "$res/build.txt" | head -60; }
stamp "build (up to date?): $(grep -c 'Building' "$res/build.txt") objects rebuilt"
CONV1D_REQUIRE_GPU=1 ctest --test-dir "$b" -R 'unit\.Ch0[89]|unit\.Ch1[01]|chapter\.ch0[89]|chapter\.ch1[01]' -j 4 \
  --output-on-failure > "$res/ctest.txt" 2>&1
stamp "ctest rc $?: $(grep -E 'tests passed' "$res/ctest.txt")"
BUILD_DIR=$b GPU_CHECK_STEPS=sections GPU_CHECK_SECTIONS='48*' timeout 330 scripts/gpu-check.sh "$res/gpu-check" --skip-build > "$res/gpu-check48.txt" 2>&1
stamp "section 48 rc $?"; cat "$res/gpu-check/summary.md"
