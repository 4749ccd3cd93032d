#!/usr/bin/env bash
# The first GPU call behind results/ch10-split/: builds chapter 10 (and chapter 11, which links its
# kernel library) with the rows' edges in their own kernel, runs their tests, and times the
# channel-first and channel-last forward at the goal shape against chapter 08's kernels.
# Run from the repository root with OUT set (the device tool's output folder).
set -uo pipefail
out=${OUT:?set OUT}
b=${BUILD_DIR:-build/gpu-check}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$out/gpu.txt"
start=$SECONDS
cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$out/configure.log" 2>&1
cmake --build "$b" -j "$(nproc)" --target ch10_packed_sequences conv1d_tests_ch10 ch11_decode_update \
  conv1d_tests_ch11 > "$out/build.log" 2>&1 || { tail -n 60 "$out/build.log"; exit 1; }
echo "build: $((SECONDS - start)) s, $(grep -c warning "$out/build.log") warning lines"
CONV1D_REQUIRE_GPU=1 ctest --test-dir "$b" -R 'ch10|Ch10|ch11|Ch11' -j 4 --output-on-failure \
  > "$out/ctest.log" 2>&1
echo "ctest rc $?: $(grep -E 'tests passed' "$out/ctest.log")"
exe=$b/chapters/10_packed_sequences/ch10_packed_sequences
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --initial-states --dtype bf16
     --form rows --direction forward)
for lens in random:8 none; do
  "$exe" "${big[@]}" --seq-lens "$lens" --summary "$out/bench_rows.tsv" > "$out/rows_${lens%%:*}.log" 2>&1
  echo "rows $lens rc $?"
done
grep -E "conv_fwd|cf_row_edges|whole|registers" "$out"/rows_*.log | cut -c1-200
echo "total: $((SECONDS - start)) s"
