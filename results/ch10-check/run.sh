#!/usr/bin/env bash
# Chapter 10 as committed (the twenty-fifth version), the GPU check's chapter-10 section whole, its
# every file packed into one archive (GPU_CHECK_ARCHIVE): builds the chapter, then the section.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d)/section_49b; mkdir -p "$res/logs"
cmake -S . -B build/gpu-check -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
  > "$res/logs/configure.log" 2>&1 &&
  cmake --build build/gpu-check -j "$(nproc)" --target ch10_packed_sequences > "$res/logs/build.log" 2>&1
echo "build rc $?: $(grep -c warning "$res/logs/build.log") warning lines"
GPU_CHECK_ARCHIVE=$out/section_49b.tgz BUILD_DIR=$root/build/gpu-check GPU_CHECK_STEPS=sections \
  GPU_CHECK_SECTIONS="49b-*" timeout 420 scripts/gpu-check.sh "$res" --skip-build > "$res/logs/check.log" 2>&1
echo "section 49b rc $?"; cat "$res/summary.md"
