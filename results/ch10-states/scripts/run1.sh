#!/usr/bin/env bash
# Chapter 10's eighteenth version: rows without seq_idx (the states alone, and chunks) on chapter
# 09's staged kernel, and the plain backward it is measured against on it too. Builds chapters 09
# and 10 and their tests; the unit tests of both chapters; then the GPU check's chapter-10 section
# (benchmark report at 8 x 4096 x 4096, registers, Nsight Compute, the four sanitizers at awkward
# shapes). Everything comes back as run.tgz.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'sed -i "s#$root/##g" "$res"/*.txt "$res"/gpu-check/*.md 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
b=$root/build/gpu-check
cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure.txt" 2>&1
cmake --build "$b" -j "$(nproc)" --target ch09_direct_backward ch10_packed_sequences conv1d_tests_ch09 conv1d_tests_ch10 > "$res/build.txt" 2>&1 || { tail -n 40 "$res/build.txt"; exit 1; }
stamp "build: $(grep -c warning "$res/build.txt") warning lines"
nvidia-smi --query-gpu=name --format=csv,noheader > "$res/gpu.txt"
CONV1D_REQUIRE_GPU=1 ctest --test-dir "$b" -R 'unit\.Ch09|unit\.Ch10' -j 4 --output-on-failure > "$res/ctest.txt" 2>&1
stamp "ctest rc $?: $(grep -E 'tests passed' "$res/ctest.txt")"
GPU_CHECK_STEPS='sections' GPU_CHECK_SECTIONS='49b*' scripts/gpu-check.sh "$res/gpu-check" --skip-build > "$res/gpu-check.txt" 2>&1
stamp "gpu-check rc $?"
grep -E "bench|sanitizer|registers" "$res/gpu-check/summary.md" | cut -c1-400
