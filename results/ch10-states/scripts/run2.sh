#!/usr/bin/env bash
# After a type-only change (an int vector index in the staged kernel's edge loads, from the AMD
# compile check): chapter 10's tests built and the ones that take the staged kernel's edge code
# run (the rows without seq_idx, and the chunks). Results in run.tgz.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'sed -i "s#$root/##g" "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
b=$root/build/gpu-check
cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure.txt" 2>&1
cmake --build "$b" -j "$(nproc)" --target conv1d_tests_ch10 > "$res/build.txt" 2>&1 || { tail -n 40 "$res/build.txt"; exit 1; }
stamp "build: $(grep -c warning "$res/build.txt") warning lines"
nvidia-smi --query-gpu=name --format=csv,noheader > "$res/gpu.txt"
CONV1D_REQUIRE_GPU=1 "$b/tests/conv1d_tests_ch10" \
  --gtest_filter='Ch10RowsBackward.RowsWithoutSeqIdxOnTheStagedKernel:Ch10ChunksBackward.*:Ch10RowsBackward.MatchesReference' > "$res/tests.txt" 2>&1
stamp "tests rc $?: $(grep -E 'PASSED|FAILED' "$res/tests.txt" | tr '\n' ' ')"
