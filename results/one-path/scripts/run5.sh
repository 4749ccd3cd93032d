#!/usr/bin/env bash
# The words asked for a tile ahead (words_ahead.patch, the working tree; run4's take-apart found
# the word loads, not the masked form, to hold most of the rows' excess): chapters 08, 09 and 10
# built; the channel-first rows forward at 8 x 4096 x 4096 bf16 (8 and 64 documents, bias and
# SiLU, the states alone), each against chapter 08's plain kernel in the same run; chapters 08,
# 09 and 10's tests; memcheck and racecheck on a packing with more tiles than the grid has blocks
# (each block takes several tiles, so the words asked ahead are used).
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'exit 143' TERM
trap 'sed -i "s#$root/##g" "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
b=$root/build/gpu-check
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"; cat "$res/gpu.txt"
cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure.txt" 2>&1
cmake --build "$b" -j "$(nproc)" --target ch08_direct_forward ch09_direct_backward ch10_packed_sequences \
  conv1d_tests_ch08 conv1d_tests_ch09 conv1d_tests_ch10 -- -k 0 > "$res/build.txt" 2>&1 || tail -30 "$res/build.txt"
stamp "build: $(grep -c warning "$res/build.txt") warning lines"
E=$b/chapters/10_packed_sequences/ch10_packed_sequences
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --initial-states --dtype bf16 --form rows
     --layout channel-first --direction forward)
for c in "rows8|--seq-lens random:8" "rows64|--seq-lens random:64" "rows8_silu|--seq-lens random:8 --bias --silu" \
         "states|--seq-lens none" "rows8|--seq-lens random:8"; do
  tag=${c%%|*}; read -r -a args <<< "${c#*|}"
  "$E" "${big[@]}" "${args[@]}" --summary "$res/bench.tsv" > "$res/$tag.txt" 2>&1
  stamp "$tag rc $?: $(awk '/^summary \(/ {s = 1; next} s && $2 ~ /^[0-9.]+$/ {printf "%s %s ms; ", $1, $4}' "$res/$tag.txt")"
done
for tool in memcheck racecheck; do
  compute-sanitizer --tool $tool --error-exitcode 1 "$E" --batch 2 --dim 256 --seqlen 8192 --width 4 --dtype bf16 \
    --initial-states --form rows --layout channel-first --direction forward --seq-lens random:8 --bias --silu \
    --iters 1 --warmup 0 > "$res/sanitizer_$tool.txt" 2>&1
  stamp "$tool rc $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$res/sanitizer_$tool.txt")"
done
CONV1D_REQUIRE_GPU=1 timeout 200 ctest --test-dir "$b" -R '[cC]h(08|09|10)' -j 4 --output-on-failure > "$res/ctest.txt" 2>&1
stamp "ctest rc $?: $(grep -E 'tests passed' "$res/ctest.txt" | tail -1)"
