#!/usr/bin/env bash
# The fourth GPU call behind results/ch10-split/: chapters 08 and 09 after the change to chapter
# 08's channel-first kernel (its body became a device function with two kernels): their tests and
# their default runs, and chapter 08's kernels against the committed figures.
set -uo pipefail
out=${OUT:?set OUT}
b=${BUILD_DIR:-build/gpu-check}
start=$SECONDS
cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$out/configure.log" 2>&1
cmake --build "$b" -j "$(nproc)" --target ch08_direct_forward ch09_direct_backward conv1d_tests_ch08 \
  conv1d_tests_ch09 > "$out/build.log" 2>&1 || { tail -n 60 "$out/build.log"; exit 1; }
echo "build: $((SECONDS - start)) s, $(grep -c warning "$out/build.log") warning lines"
CONV1D_REQUIRE_GPU=1 ctest --test-dir "$b" -R 'ch08|Ch08|ch09|Ch09' -j 4 --output-on-failure > "$out/ctest.log" 2>&1
echo "ctest rc $?: $(grep -E 'tests passed' "$out/ctest.log")"
sed -i "s#$(pwd)/##g" "$out/ctest.log"
"$b/chapters/08_direct_forward/ch08_direct_forward" > "$out/ch08_default.log" 2>&1; echo "ch08 default rc $?"
"$b/chapters/08_direct_forward/ch08_direct_forward" --batch 8 --dim 4096 --seqlen 4096 --width 4 \
  --iters 20 --warmup 3 > "$out/ch08_big.log" 2>&1; echo "ch08 8x4096x4096 rc $?"
grep -E "main kernel" "$out/ch08_big.log"
compute-sanitizer --tool memcheck "$b/chapters/08_direct_forward/ch08_direct_forward" --batch 2 \
  --dim 37 --seqlen 13 --width 3 --iters 1 --warmup 0 > "$out/memcheck_ch08.log" 2>&1
echo "memcheck rc $?: $(grep 'ERROR SUMMARY' "$out/memcheck_ch08.log")"
echo "total: $((SECONDS - start)) s"
