#!/usr/bin/env bash
# Call 4 (H100): the committed code: chapter 10 and its tests, the tests, then the GPU check's
# chapters step for chapter 10 (default shape, odd shapes in every dtype, --save-npy, the four
# sanitizers). Run from the repository root with OUT set; one run.tgz back.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
b=$root/${BUILD_DIR:-build/gpu-check}
res=$(mktemp -d); start=$SECONDS
trap 'grep -rl "$root" "$res" | xargs -r sed -i "s#$root/##g"; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"
cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure.log" 2>&1
cmake --build "$b" -j "$(nproc)" --target ch10_packed_sequences conv1d_tests_ch10 > "$res/build.log" 2>&1 || { tail -n 60 "$res/build.log"; exit 1; }
echo "build: $((SECONDS - start)) s, $(grep -c warning "$res/build.log") warning lines"
CONV1D_REQUIRE_GPU=1 ctest --test-dir "$b" -R 'Ch10|ch10' -j 4 --output-on-failure > "$res/ctest.txt" 2>&1
echo "ctest rc $?: $(grep -E 'tests passed' "$res/ctest.txt")"
GPU_CHECK_STEPS=chapters GPU_CHECK_CHAPTERS='ch1[0]_*' BUILD_DIR=$b scripts/gpu-check.sh "$res/check" --skip-build > "$res/check.log" 2>&1
echo "chapters step rc $?"; cat "$res/check/summary.md"
echo "done: $((SECONDS - start)) s"
