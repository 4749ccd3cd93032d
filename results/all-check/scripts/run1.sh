#!/usr/bin/env bash
# Every target built; every test with CONV1D_REQUIRE_GPU=1; then, in the time the call has left,
# the GPU check's chapter-09 section whole (benchmarks, sweeps, resources, Nsight Compute,
# sanitizers on awkward shapes), archived as it goes (GPU_CHECK_ARCHIVE).
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
mkdir -p "$res/section_49/logs"
trap 'exit 143' TERM
trap 'sed -i "s#$root/##g" "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"; cat "$res/gpu.txt"
cmake -S . -B build/gpu-check -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
  > "$res/configure.txt" 2>&1 && cmake --build build/gpu-check -j "$(nproc)" -- -k 0 > "$res/build.txt" 2>&1
stamp "build rc $?: $(grep -c warning "$res/build.txt") warning lines"
CONV1D_REQUIRE_GPU=1 timeout 300 ctest --test-dir build/gpu-check -j 8 --output-on-failure > "$res/ctest.txt" 2>&1
stamp "ctest rc $?: $(grep -E 'tests passed' "$res/ctest.txt" | tail -1); $(grep -cE '\*\*\*Skipped|Not Run' "$res/ctest.txt") skipped"
grep -E "\(Failed\)|\*\*\*Failed|\*\*\*Skipped|Not Run|Timeout" "$res/ctest.txt" | head
left=$((585 - (SECONDS - start)))
GPU_CHECK_ARCHIVE=$res/section_49.tgz BUILD_DIR=$root/build/gpu-check GPU_CHECK_STEPS=sections \
  GPU_CHECK_SECTIONS="49-*" timeout "$left" scripts/gpu-check.sh "$res/section_49" --skip-build \
  > "$res/section_49/logs/check.log" 2>&1
stamp "section 49 rc $?"; cat "$res/section_49/summary.md" 2>/dev/null | tail -30
