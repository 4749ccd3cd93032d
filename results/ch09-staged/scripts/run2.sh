#!/usr/bin/env bash
# Second call: the staged backward with whole rows a tile (rows of at most half a tile that fill
# whole warps: run1's 32x2048x512 gave each tile one row of 64 vectors, half the threads idle, 30 %
# of the copy ceiling). Chapter 09's unit tests; the four sanitizers on the staged tests and on
# the chapter at a whole-rows shape and a two-pieces shape; chapter 09's channel-first steps at
# the GPU-check section's shapes. Run from the repository root with OUT set; results in run.tgz.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'sed -i "s#$root/##g" "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
b=$root/build/gpu-check
cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure.txt" 2>&1
cmake --build "$b" -j "$(nproc)" --target ch09_direct_backward conv1d_tests_ch09 > "$res/build.txt" 2>&1 || { tail -n 40 "$res/build.txt"; exit 1; }
stamp "build: $(grep -c warning "$res/build.txt") warning lines"
nvidia-smi --query-gpu=name --format=csv,noheader > "$res/gpu.txt"
E9=$b/chapters/09_direct_backward/ch09_direct_backward
common=(--width 4 --iters 20 --warmup 3 --layout channel-first --reduction deterministic)
for c in "big_bf16 8 4096 4096 --dtype bf16" "big_fp32 8 4096 4096 --dtype fp32" \
         "big_bf16_bias_silu 8 4096 4096 --dtype bf16 --bias --silu" "short_bf16 32 2048 512 --dtype bf16" \
         "short_fp32 32 2048 512 --dtype fp32" "mid_bf16 16 4096 2048 --dtype bf16" \
         "long_bf16 1 4096 16384 --dtype bf16" "tiny_bf16 4 64 1024 --dtype bf16"; do
  set -- $c
  "$E9" --batch "$2" --dim "$3" --seqlen "$4" "${common[@]}" "${@:5}" --summary "$res/bench_09_$1.tsv" > "$res/ch09_$1.txt" 2>&1
  stamp "ch09 $1 rc $?: $(grep -E 'main kernel' "$res/ch09_$1.txt" | head -2 | tr '\n' ' ')"
done
CONV1D_REQUIRE_GPU=1 ctest --test-dir "$b" -R 'unit\.Ch09' -j 4 --output-on-failure > "$res/ctest.txt" 2>&1
stamp "ctest rc $?: $(grep -E 'tests passed' "$res/ctest.txt")"
for tool in memcheck racecheck synccheck initcheck; do
  {
    compute-sanitizer --tool $tool --error-exitcode 9 "$b/tests/conv1d_tests_ch09" --gtest_filter='*Staged*'
    for shape in "--batch 2 --dim 9 --seqlen 4112 --width 3" "--batch 3 --dim 11 --seqlen 768 --width 4"; do
      compute-sanitizer --tool $tool --error-exitcode 9 "$E9" $shape --dtype bf16 --bias --silu \
        --layout channel-first --variant staged --iters 1 --warmup 0
    done
  } > "$res/sanitizer_$tool.txt" 2>&1
  stamp "$tool rc $?: $(grep -cE '(ERROR|RACECHECK|SYNCCHECK|INITCHECK) SUMMARY: 0 (errors|hazards)' "$res/sanitizer_$tool.txt") clean summaries of 3"
done
