#!/usr/bin/env bash
# The third GPU call behind results/ch10-split/: chapter 10's section of the GPU check (benchmarks,
# resources, Nsight Compute, sanitizers) with the rows' edges in their own kernel. Its result files
# replace results/gpu-check/bench_10*.tsv, ch10_resources.* and ch10_ncu.*.
set -uo pipefail
out=${OUT:?set OUT}
b=${BUILD_DIR:-build/gpu-check}
start=$SECONDS
cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$out/configure.log" 2>&1
cmake --build "$b" -j "$(nproc)" --target ch10_packed_sequences > "$out/build.log" 2>&1 || { tail -n 60 "$out/build.log"; exit 1; }
echo "build: $((SECONDS - start)) s"
BUILD_DIR=$b GPU_CHECK_STEPS=sections GPU_CHECK_SECTIONS='49b*' scripts/gpu-check.sh "$out/gc" --skip-build > "$out/gc.log" 2>&1
echo "gpu-check rc $?"
cat "$out/gc/summary.md"
cd "$out" && tar czf gc.tgz gc && rm -rf gc
echo "total: $((SECONDS - start)) s"
