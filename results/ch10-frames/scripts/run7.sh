#!/usr/bin/env bash
# The twentieth version as committed (__grid_constant__ on cl_staged only, every other kernel as in
# the nineteenth): chapter 10's kernel library and unit tests built and run, then its varlen and
# rows forward at 8x4096x4096 bf16 if there is time (the device budget had about four minutes left).
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'exit 143' TERM
trap 'sed -i "s#$root/##g" "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
b=$root/build/gpu-check
nvidia-smi --query-gpu=name --format=csv,noheader > "$res/gpu.txt"; cat "$res/gpu.txt"
cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure.txt" 2>&1
cmake --build "$b" -j "$(nproc)" --target conv1d_tests_ch10 ch10_packed_sequences -- -k 0 > "$res/build.txt" 2>&1 || { grep -B2 -A12 "error" "$res/build.txt" | head -60; }
stamp "build: $(grep -c warning "$res/build.txt") warning lines"
CONV1D_REQUIRE_GPU=1 ctest --test-dir "$b" -R 'unit\.Ch10' -j 6 --output-on-failure > "$res/ctest.txt" 2>&1
stamp "ctest rc $?: $(grep -E 'tests passed' "$res/ctest.txt")"
exe=$b/chapters/10_packed_sequences/ch10_packed_sequences
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --initial-states --direction forward --dtype bf16)
"$exe" "${big[@]}" --form varlen --seq-lens random:64 --summary "$res/bench_10.tsv" > "$res/varlen.txt" 2>&1; stamp "varlen rc $?: $(grep -h 'main kernel' "$res/varlen.txt")"
"$exe" "${big[@]}" --form rows --layout channel-last --seq-lens random:8 --summary "$res/bench_10.tsv" > "$res/rows.txt" 2>&1; stamp "rows rc $?: $(grep -h 'main kernel' "$res/rows.txt" | tr '\n' ' ')"
