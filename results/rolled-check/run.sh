#!/usr/bin/env bash
# The rolled walk (chapter 09's channel-last backward a batch ahead) as committed: chapters 09 and
# 10 built, chapter 09's channel-last backward at 8 x 4096 x 4096 in bf16 and fp32, then the GPU
# check's chapter-10 section whole, its every file packed into one archive (GPU_CHECK_ARCHIVE).
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d)/section_49b; mkdir -p "$res/logs"
cmake -S . -B build/gpu-check -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
  > "$res/logs/configure.log" 2>&1 &&
  cmake --build build/gpu-check -j "$(nproc)" --target ch10_packed_sequences ch09_direct_backward \
  > "$res/logs/build.log" 2>&1
echo "build rc $?: $(grep -c warning "$res/logs/build.log") warning lines"
for dt in bf16 fp32; do
  timeout 60 build/gpu-check/chapters/09_direct_backward/ch09_direct_backward --batch 8 --dim 4096 --seqlen 4096 \
    --width 4 --iters 20 --warmup 3 --dtype "$dt" --layout channel-last --variant tiled \
    --summary "$out/bench_09_$dt.tsv" > "$out/ch09_$dt.txt" 2>&1
  echo "ch09 $dt rc $?: $(grep -c PASS "$out/ch09_$dt.txt") PASS, $(grep -c FAIL "$out/ch09_$dt.txt") FAIL"
done
sed -i "s#$root/##g" "$out"/ch09_*.txt
GPU_CHECK_ARCHIVE=$out/section_49b.tgz BUILD_DIR=$root/build/gpu-check GPU_CHECK_STEPS=sections \
  GPU_CHECK_SECTIONS="49b-*" timeout 400 scripts/gpu-check.sh "$res" --skip-build > "$res/logs/check.log" 2>&1
echo "section 49b rc $?"; cat "$res/summary.md"
