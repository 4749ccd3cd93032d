#!/usr/bin/env bash
# Call 3 (H100): the tests added with the fourteenth version, on the committed code: chapter 09's
# host test of the launch choices (Ch09Launch.*), chapter 10's rows backward tests with the new
# FourRowsAWarpWithRowsLeftOver (rows past the end of a warp's four), and that test under
# compute-sanitizer memcheck and racecheck. Run from the repository root with OUT set; everything
# comes back as one run.tgz.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'sed -i "s#$root/##g" "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"
b=$root/build/exp-tests
cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure.txt" 2>&1
cmake --build "$b" -j "$(nproc)" --target conv1d_tests_ch09 conv1d_tests_ch10 > "$res/build.txt" 2>&1 || { tail -n 40 "$res/build.txt"; exit 1; }
stamp "build: $(grep -c warning "$res/build.txt") warning lines"
export CONV1D_REQUIRE_GPU=1
"$b/tests/conv1d_tests_ch09" --gtest_filter='Ch09Launch.*' > "$res/ch09_launch.txt" 2>&1
stamp "Ch09Launch rc $?: $(grep -E '^\[  (PASSED|FAILED)' "$res/ch09_launch.txt" | tr '\n' ' ')"
"$b/tests/conv1d_tests_ch10" --gtest_filter='Ch10RowsBackward.*:Ch10ChunksBackward.*' > "$res/ch10_rows_backward.txt" 2>&1
stamp "Ch10RowsBackward rc $?: $(grep -E '^\[  (PASSED|FAILED)' "$res/ch10_rows_backward.txt" | tr '\n' ' ')"
for tool in memcheck racecheck; do
  compute-sanitizer --tool $tool --error-exitcode 9 "$b/tests/conv1d_tests_ch10" \
    --gtest_filter='Ch10RowsBackward.FourRowsAWarpWithRowsLeftOver' > "$res/sanitizer_$tool.txt" 2>&1
  stamp "$tool rc $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$res/sanitizer_$tool.txt" | tail -1)"
done
