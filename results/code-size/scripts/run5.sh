#!/usr/bin/env bash
# Fifth call: the GPU check's chapter-10 section whole (benchmarks verified against fp64, goals,
# resources, Nsight Compute, four sanitizers) on the committed thirty-fifth version. Written
# straight under $OUT (no archive), so that a call cut short by the device budget still returns
# what it finished.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}; start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
mkdir -p "$out/section_49b/logs"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$out/gpu.txt"; cat "$out/gpu.txt"
echo "${COMMIT:-unknown}" > "$out/commit.txt"
cmake -S . -B build/gpu-check -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
  > "$out/configure.txt" 2>&1 && cmake --build build/gpu-check -j "$(nproc)" --target ch10_packed_sequences \
  > "$out/build.txt" 2>&1
stamp "build rc $?: $(grep -c warning "$out/build.txt") warning lines"
GPU_CHECK_ARCHIVE=$out/section_49b.tgz BUILD_DIR=$root/build/gpu-check GPU_CHECK_STEPS=sections \
  GPU_CHECK_SECTIONS="49b-*" timeout $((${LIMIT:-380} - (SECONDS - start))) scripts/gpu-check.sh "$out/section_49b" \
  --skip-build > "$out/section_49b/logs/check.log" 2>&1
stamp "section 49b rc $?"; cat "$out/section_49b/summary.md" 2>/dev/null
sed -i "s#$root/##g" "$out"/*.txt "$out"/section_49b/logs/*.log "$out"/section_49b/*.md 2>/dev/null
