#!/usr/bin/env bash
# The walk with flags a batch of 4 rows and its launch 4 blocks a multiprocessor, as committed:
# build chapter 10 and the tests of chapters 09 and 10; the tests; then the GPU check's chapter-10
# section (benchmarks, goals, Nsight Compute, memcheck, racecheck, initcheck, synccheck).
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'exit 143' TERM
trap 'sed -i "s#$root/##g" "$res"/*.txt "$res"/*/*.md 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
b=$root/build/gpu-check
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"; cat "$res/gpu.txt"
cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure.txt" 2>&1
cmake --build "$b" -j "$(nproc)" --target ch10_packed_sequences conv1d_tests_ch09 conv1d_tests_ch10 > "$res/build.txt" 2>&1
stamp "build rc $?: $(grep -c warning "$res/build.txt") warning lines, $(grep -c error "$res/build.txt") error lines"
CONV1D_REQUIRE_GPU=1 timeout 150 ctest --test-dir "$b" -R 'Ch09|Ch10' -j 8 --output-on-failure > "$res/ctest.txt" 2>&1
stamp "ctest rc $?: $(grep -E 'tests passed' "$res/ctest.txt" | tail -1)"
BUILD_DIR=$b GPU_CHECK_STEPS=sections GPU_CHECK_SECTIONS="49b-*" scripts/gpu-check.sh "$res/section_49b" --skip-build \
  > "$res/section_49b.txt" 2>&1
stamp "section 49b rc $?: $(grep -c '| pass |' "$res/section_49b/summary.md") pass, $(grep -c '| FAIL |' "$res/section_49b/summary.md") FAIL"
