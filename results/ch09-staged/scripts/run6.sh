#!/usr/bin/env bash
# Sixth call: the packed staged backward after two changes. run5's rows took 1.68x the plain
# kernel's time, the states alone 1.54x (two flagged vectors a row): each tile loaded its vectors'
# span-map bytes before its barrier and waited for them after it, and a vector that was not full
# left the loop early, so the compiler no longer interleaved the four. Now the bytes are loaded a
# tile ahead, the flagged list is made and each lane's first entry's flags loaded before the
# barrier, and every vector takes the unmasked arithmetic (its terms kept only when full).
# Builds chapter 10 and the tests of chapters 09 and 10; their unit tests; then the GPU check's
# section 49b (chapter 10's benchmark report, resources, Nsight Compute, the four sanitizers at
# awkward packings). Writes straight into $OUT (what is there comes back even after a timeout).
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$out; start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'sed -i "s#$root/##g" "$res"/*.txt "$res"/gpu-check/*.md 2>/dev/null' EXIT
b=$root/build/gpu-check
cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure.txt" 2>&1
cmake --build "$b" -j "$(nproc)" --target ch10_packed_sequences conv1d_tests_ch09 conv1d_tests_ch10 > "$res/build.txt" 2>&1 || { tail -n 40 "$res/build.txt"; exit 1; }
stamp "build: $(grep -c warning "$res/build.txt") warning lines"
nvidia-smi --query-gpu=name --format=csv,noheader > "$res/gpu.txt"
CONV1D_REQUIRE_GPU=1 ctest --test-dir "$b" -R 'unit\.Ch09|unit\.Ch10' -j 4 --output-on-failure > "$res/ctest.txt" 2>&1
stamp "ctest rc $?: $(grep -E 'tests passed' "$res/ctest.txt")"
GPU_CHECK_STEPS='sections' GPU_CHECK_SECTIONS='49b*' scripts/gpu-check.sh "$res/gpu-check" --skip-build > "$res/gpu-check.txt" 2>&1
stamp "gpu-check rc $?"
cat "$res/gpu-check/summary.md"
grep -h 'whole' "$res"/gpu-check/logs/*10*.log 2>/dev/null | head -60
