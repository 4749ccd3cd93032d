#!/usr/bin/env bash
# Eighth call: the committed chapter 09 after a type-only change found by the AMD compile check
# (the loop over a row's groups counts with an int, not threadIdx.x's unsigned). Builds chapter 09
# and its tests; the unit tests; memcheck on the staged tests; the chapter's channel-first steps
# at 8x4096x4096 bf16. Everything comes back as run.tgz.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'sed -i "s#$root/##g" "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
b=$root/build/gpu-check
cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure.txt" 2>&1
cmake --build "$b" -j "$(nproc)" --target ch09_direct_backward conv1d_tests_ch09 > "$res/build.txt" 2>&1 || { tail -n 40 "$res/build.txt"; exit 1; }
stamp "build: $(grep -c warning "$res/build.txt") warning lines"
nvidia-smi --query-gpu=name --format=csv,noheader > "$res/gpu.txt"
CONV1D_REQUIRE_GPU=1 ctest --test-dir "$b" -R 'unit\.Ch09' -j 4 --output-on-failure > "$res/ctest.txt" 2>&1
stamp "ctest rc $?: $(grep -E 'tests passed' "$res/ctest.txt")"
compute-sanitizer --tool memcheck --error-exitcode 9 "$b/tests/conv1d_tests_ch09" --gtest_filter='*Staged*' > "$res/sanitizer_memcheck.txt" 2>&1
stamp "memcheck rc $?: $(grep -c 'ERROR SUMMARY: 0 errors' "$res/sanitizer_memcheck.txt") clean"
"$b/chapters/09_direct_backward/ch09_direct_backward" --batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 \
  --layout channel-first --dtype bf16 --reduction deterministic --summary "$res/bench_09_big_bf16.tsv" > "$res/ch09_big_bf16.txt" 2>&1
stamp "ch09 rc $?: $(grep -E 'main kernel' "$res/ch09_big_bf16.txt" | head -2 | tr '\n' ' ')"
