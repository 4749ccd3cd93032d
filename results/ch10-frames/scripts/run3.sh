#!/usr/bin/env bash
# The twentieth version, final code: builds chapters 05 (for section 48), 08, 10, 11 and their
# tests, then the GPU check's chapter-10 section (benchmarks, resources, ncu, four sanitizers).
# run4.sh follows on the same machine: the tests and section 48.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'sed -i "s#$root/##g" "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
b=$root/build/gpu-check
nvidia-smi --query-gpu=name --format=csv,noheader > "$res/gpu.txt"; cat "$res/gpu.txt"
cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure.txt" 2>&1
cmake --build "$b" -j "$(nproc)" --target ch05_wmma_gemm ch08_direct_forward conv1d_tests_ch08 ch10_packed_sequences \
  conv1d_tests_ch10 ch11_decode_update conv1d_tests_ch11 -- -k 0 > "$res/build.txt" 2>&1 || { grep -B2 -A12 "error" "$res/build.txt" | head -60; }
stamp "build: $(grep -c warning "$res/build.txt") warning lines"
BUILD_DIR=$b GPU_CHECK_STEPS=sections GPU_CHECK_SECTIONS='49b*' timeout 420 scripts/gpu-check.sh "$res/gpu-check" --skip-build > "$res/gpu-check49b.txt" 2>&1
stamp "section 49b rc $?"; cat "$res/gpu-check/summary.md"
awk -F'\t' 'NR==1 || /cl_|cf_/' "$res/gpu-check/results/bench_10_kernels.tsv" | cut -f3,4,5,8,11
