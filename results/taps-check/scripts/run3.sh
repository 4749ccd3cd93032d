#!/usr/bin/env bash
# The tree as it stands after the check (the same kernels' SASS, compiled here and compared; one
# test helper shared by two tests): the tests of chapters 09, 10 and 11 again on the GPU.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'exit 143' TERM
trap 'sed -i "s#$root/##g" "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
b=$root/build/gpu-check
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"; cat "$res/gpu.txt"
cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure.txt" 2>&1
cmake --build "$b" -j "$(nproc)" --target conv1d_tests_ch09 conv1d_tests_ch10 conv1d_tests_ch11 -- -k 0 \
  > "$res/build.txt" 2>&1
stamp "build: $(grep -c warning "$res/build.txt") warning lines, $(grep -c error "$res/build.txt") error lines"
CONV1D_REQUIRE_GPU=1 timeout 400 ctest --test-dir "$b" -R 'Ch09|Ch10|Ch11' -j 8 --output-on-failure \
  > "$res/ctest.txt" 2>&1
stamp "ctest chapters 09-11 rc $?: $(grep -E 'tests passed' "$res/ctest.txt" | tail -1)"
