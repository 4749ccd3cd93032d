#!/usr/bin/env bash
# The fifth GPU call behind results/ch10-split/, after the review: cf_row_edges and the channel-last
# tiles' edges share one function (PackedRows::output_from_memory). Chapter 10's and 11's tests, then
# chapter 10's section of the GPU check (benchmarks, resources, Nsight Compute, sanitizers), whose
# result files are the ones in results/gpu-check/.
set -uo pipefail
out=${OUT:?set OUT}
b=${BUILD_DIR:-build/gpu-check}
start=$SECONDS
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$out/gpu.txt"
cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$out/configure.log" 2>&1
cmake --build "$b" -j "$(nproc)" --target ch10_packed_sequences conv1d_tests_ch10 ch11_decode_update \
  conv1d_tests_ch11 > "$out/build.log" 2>&1 || { tail -n 60 "$out/build.log"; exit 1; }
echo "build: $((SECONDS - start)) s, $(grep -c warning "$out/build.log") warning lines" | tee "$out/build_summary.txt"
CONV1D_REQUIRE_GPU=1 ctest --test-dir "$b" -R 'ch10|Ch10|ch11|Ch11' -j 4 --output-on-failure > "$out/ctest.log" 2>&1
echo "ctest rc $?: $(grep -E 'tests passed' "$out/ctest.log")"
sed -i "s#$(pwd)/##g" "$out/ctest.log"
BUILD_DIR=$b GPU_CHECK_STEPS=sections GPU_CHECK_SECTIONS='49b*' scripts/gpu-check.sh "$out/gc" --skip-build > "$out/gc.log" 2>&1
echo "gpu-check rc $?"
cat "$out/gc/summary.md"
cd "$out" && tar czf gc.tgz gc && rm -rf gc
echo "total: $((SECONDS - start)) s"
