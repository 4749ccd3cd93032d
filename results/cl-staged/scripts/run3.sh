#!/usr/bin/env bash
# cl_staged with one 16-byte store a row (run2's kernel wrote four 4-byte stores a row: cuobjdump).
# Rebuilds chapters 08 and 10 and their tests; the unit tests of both; chapter 08 at its big shapes
# (both layouts) twice. run.tgz comes back.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'sed -i "s#$root/##g" "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
b=$root/build/gpu-check
nvidia-smi --query-gpu=name --format=csv,noheader > "$res/gpu.txt"; cat "$res/gpu.txt"
cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure.txt" 2>&1
cmake --build "$b" -j "$(nproc)" --target ch08_direct_forward conv1d_tests_ch08 ch10_packed_sequences \
  conv1d_tests_ch10 -- -k 0 > "$res/build.txt" 2>&1 || { grep -B2 -A12 "error" "$res/build.txt" | head -60; }
stamp "build: $(grep -c warning "$res/build.txt") warning lines"
exe8=$b/chapters/08_direct_forward/ch08_direct_forward
for pass in 1 2; do
  for dt in bf16 fp16 fp32; do
    "$exe8" --batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --dtype "$dt" \
      --summary "$res/bench_08_$pass.tsv" > "$res/ch08_${dt}_$pass.txt" 2>&1 || echo "ch08 $dt FAIL"
  done
  "$exe8" --batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --dtype bf16 --bias --silu \
    --summary "$res/bench_08_$pass.tsv" > "$res/ch08_bf16_silu_$pass.txt" 2>&1 || echo "ch08 silu FAIL"
  for sh in "32 2048 512" "1 4096 16384" "8 1024 4096"; do
    set -- $sh
    "$exe8" --batch "$1" --dim "$2" --seqlen "$3" --width 4 --iters 20 --warmup 3 --dtype bf16 \
      --summary "$res/bench_08_$pass.tsv" > "$res/ch08_${1}_${2}_${3}_$pass.txt" 2>&1 || echo "ch08 $sh FAIL"
  done
done
stamp "ch08 runs"
CONV1D_REQUIRE_GPU=1 ctest --test-dir "$b" -R 'unit\.Ch08|unit\.Ch10' -j 4 --output-on-failure > "$res/ctest.txt" 2>&1
stamp "ctest rc $?: $(grep -E 'tests passed' "$res/ctest.txt")"
awk -F'\t' '/cl_/' "$res"/bench_08_1_kernels.tsv "$res"/bench_08_2_kernels.tsv 2>/dev/null | cut -f3,5,8,11
