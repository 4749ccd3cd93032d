#!/usr/bin/env bash
# cl_staged: in chapter 10's mixed tiles, a batch that one sequence holds whole takes the full form
# (run4: every batch of a mixed tile took the flags). Rebuilds chapters 08 and 10 and their tests;
# the unit tests of both; chapter 10's forward at 8x4096x4096 bf16 (rows, states alone, varlen,
# varlen with bias and SiLU); memcheck on two packed channel-last shapes. run.tgz comes back.
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
exe=$b/chapters/10_packed_sequences/ch10_packed_sequences
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --initial-states --direction forward --dtype bf16)
"$exe" "${big[@]}" --form rows --layout channel-last --seq-lens random:8 --summary "$res/bench_10.tsv" > "$res/rows.txt" 2>&1 || echo "rows FAIL"
"$exe" "${big[@]}" --form rows --layout channel-last --seq-lens none --summary "$res/bench_10.tsv" > "$res/states.txt" 2>&1 || echo "states FAIL"
"$exe" "${big[@]}" --form varlen --seq-lens random:64 --summary "$res/bench_10.tsv" > "$res/varlen.txt" 2>&1 || echo "varlen FAIL"
"$exe" "${big[@]}" --form varlen --seq-lens random:64 --bias --silu --summary "$res/bench_10.tsv" > "$res/varlen_silu.txt" 2>&1 || echo "varlen silu FAIL"
stamp "bench"
awk -F'\t' '/cl_/' "$res/bench_10_kernels.tsv" | cut -f3,4,5,8,11
n=0
for args in "--batch 2 --dim 16 --seqlen 150 --width 4 --dtype bf16 --silu --initial-states --form rows --layout channel-last --direction forward --seq-lens 1,0,70,3,50" \
            "--batch 1 --dim 40 --seqlen 90 --width 4 --dtype bf16 --initial-states --form varlen --direction forward --seq-lens 1,0,2,3,0,84"; do
  compute-sanitizer --tool memcheck "$exe" $args --iters 1 --warmup 0 > "$res/memcheck_$((++n)).txt" 2>&1
  grep "ERROR SUMMARY" "$res/memcheck_$n.txt"
done
CONV1D_REQUIRE_GPU=1 ctest --test-dir "$b" -R 'unit\.Ch08|unit\.Ch10' -j 4 --output-on-failure > "$res/ctest.txt" 2>&1
stamp "ctest rc $?: $(grep -E 'tests passed' "$res/ctest.txt")"
