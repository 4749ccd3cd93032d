#!/usr/bin/env bash
# The second GPU call behind results/ch10-split/: the packed channel-first kernel held to 48
# registers (10 blocks of 128 threads a multiprocessor, chapter 08's occupancy) against the
# committed 64 (8 blocks), interleaved, at the goal shape. Needs run1.sh's build in build/gpu-check.
set -uo pipefail
out=${OUT:?set OUT}
b=${BUILD_DIR:-build/gpu-check}
start=$SECONDS
rm -rf /tmp/v10 && mkdir -p /tmp/v10 && cp -r CMakeLists.txt CMakePresets.json cmake common chapters tests profiling /tmp/v10/ 2>/dev/null
sed -i 's/constexpr int kPackedCfMinBlocks = 8;/constexpr int kPackedCfMinBlocks = 10;/' /tmp/v10/chapters/08_direct_forward/cf_chunked.cuh
grep -n "kPackedCfMinBlocks = " /tmp/v10/chapters/08_direct_forward/cf_chunked.cuh
cmake -S /tmp/v10 -B build/v10 -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$out/configure_v10.log" 2>&1
cmake --build build/v10 -j "$(nproc)" --target ch10_packed_sequences > "$out/build_v10.log" 2>&1 || { tail -n 40 "$out/build_v10.log"; exit 1; }
echo "build: $((SECONDS - start)) s"
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --initial-states --dtype bf16
     --form rows --layout channel-first --direction forward)
for round in 1 2; do
  for v in gpu-check v10; do
    for lens in random:8 none; do
      exe=build/$v/chapters/10_packed_sequences/ch10_packed_sequences
      [[ $v == gpu-check ]] && exe=$b/chapters/10_packed_sequences/ch10_packed_sequences
      "$exe" "${big[@]}" --seq-lens "$lens" > "$out/r${round}_${v}_${lens%%:*}.log" 2>&1
      echo "round $round $v $lens rc $?: $(grep -E 'packed rows:|main kernel|cf_row_edges:|whole' "$out/r${round}_${v}_${lens%%:*}.log" | grep -oE '[0-9]+ registers|[0-9.]+ ms per run' | tr '\n' ' ')"
    done
  done
done
echo "total: $((SECONDS - start)) s"
