#!/usr/bin/env bash
# Fourth call: the code as committed (the thirty-second version): chapter 11, which links chapter
# 10's library, built with its tests, and its tests run (the calls before ran chapters 09 and 10's).
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'exit 143' TERM
trap 'sed -i "s#$root/##g" "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"; cat "$res/gpu.txt"
cmake -S . -B build/gpu-check -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
  > "$res/configure.txt" 2>&1 && cmake --build build/gpu-check -j "$(nproc)" --target ch11_decode_update \
  conv1d_tests_ch11 > "$res/build.txt" 2>&1
stamp "build rc $?: $(grep -c warning "$res/build.txt") warning lines"
CONV1D_REQUIRE_GPU=1 timeout 60 ctest --test-dir build/gpu-check -R '[cC]h11' -j 8 --output-on-failure \
  > "$res/ctest_ch11.txt" 2>&1
stamp "ctest ch11 rc $?: $(grep -E 'tests passed' "$res/ctest_ch11.txt" | tail -1)"
