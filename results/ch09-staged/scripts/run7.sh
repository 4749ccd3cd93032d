#!/usr/bin/env bash
# Seventh call: the packed staged backward with a flagged vector's row-edge loads (the row's state
# at its start, the final states' gradient at its end) issued before the tile's barrier with its
# flags. run6 (the same steps; most of its files were not fetched back) gave the states alone
# 1.66x the plain kernel's time: the two flagged vectors of each tile loaded those after the
# barrier, and the block waited for them. Builds chapter 10 and the tests of chapters 09 and 10;
# their unit tests; the GPU check's section 49b (benchmark report, resources, Nsight Compute, the
# four sanitizers at awkward packings). Everything comes back as run.tgz.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'sed -i "s#$root/##g" "$res"/*.txt "$res"/gpu-check/*.md 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
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
