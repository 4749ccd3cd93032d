#!/usr/bin/env bash
# Second call of the thirty-sixth version: on the committed SiLU split, chapter 08's and chapter 10's
# tests on the GPU, then the GPU check's chapter-10 section whole (benchmarks verified against fp64,
# goals, resources, Nsight Compute, four sanitizers). Written straight under $OUT.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}; start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
mkdir -p "$out/section_49b/logs"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$out/gpu.txt"; cat "$out/gpu.txt"
echo "${COMMIT:-unknown}" > "$out/commit.txt"
cmake -S . -B build/gpu-check -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
  > "$out/configure.txt" 2>&1 && cmake --build build/gpu-check -j "$(nproc)" --target ch10_packed_sequences \
  conv1d_tests_ch08 conv1d_tests_ch10 > "$out/build.txt" 2>&1
stamp "build rc $?: $(grep -c warning "$out/build.txt") warning lines"
for t in ch08 ch10; do
  CONV1D_REQUIRE_GPU=1 timeout 120 build/gpu-check/tests/conv1d_tests_$t > "$out/tests_$t.txt" 2>&1
  stamp "tests $t rc $?: $(grep -E '^\[  PASSED  \]|^\[  FAILED  \]|SKIPPED \]' "$out/tests_$t.txt" | tr '\n' ' ')"
done
GPU_CHECK_ARCHIVE=$out/section_49b.tgz BUILD_DIR=$root/build/gpu-check GPU_CHECK_STEPS=sections \
  GPU_CHECK_SECTIONS="49b-*" timeout $((${LIMIT:-580} - (SECONDS - start))) scripts/gpu-check.sh "$out/section_49b" \
  --skip-build > "$out/section_49b/logs/check.log" 2>&1
stamp "section 49b rc $?"; cat "$out/section_49b/summary.md" 2>/dev/null
sed -i "s#$root/##g" "$out"/*.txt "$out"/section_49b/logs/*.log "$out"/section_49b/*.md 2>/dev/null
