#!/usr/bin/env bash
# After the review: the new test also asserts which kernel each of its runs took (comments
# elsewhere). Chapter 10's tests built and all of them run; memcheck on the new test. Results in
# run.tgz.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'sed -i "s#$root/##g" "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
b=$root/build/gpu-check
cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure.txt" 2>&1
cmake --build "$b" -j "$(nproc)" --target conv1d_tests_ch10 > "$res/build.txt" 2>&1 || { tail -n 40 "$res/build.txt"; exit 1; }
stamp "build: $(grep -c warning "$res/build.txt") warning lines"
nvidia-smi --query-gpu=name --format=csv,noheader > "$res/gpu.txt"
CONV1D_REQUIRE_GPU=1 "$b/tests/conv1d_tests_ch10" > "$res/tests.txt" 2>&1
stamp "tests rc $?: $(grep -E '^\[  (PASSED|FAILED)' "$res/tests.txt" | tr '\n' ' ')"
compute-sanitizer --tool memcheck --error-exitcode 9 "$b/tests/conv1d_tests_ch10" \
  --gtest_filter='Ch10RowsBackward.RowsWithoutSeqIdxOnTheStagedKernel' > "$res/sanitizer_memcheck.txt" 2>&1
stamp "memcheck rc $?: $(grep -E 'ERROR SUMMARY' "$res/sanitizer_memcheck.txt")"
