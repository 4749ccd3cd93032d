#!/usr/bin/env bash
# Fourth call: the committed tree, no change. How far apart the goal ratios of the channel-first
# rows land in runs of the same kernels: 8 x 4096 x 4096 bf16, rows with 8 documents and states,
# forward and backward, channel-first, six processes in a row; and the varlen forward beside them.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'exit 143' TERM
trap 'sed -i "s#$root/##g" "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"; cat "$res/gpu.txt"
git log -1 --format=%h > "$res/commit.txt" 2>/dev/null
cmake -S . -B build/head -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/build.txt.configure" 2>&1 &&
  cmake --build build/head -j 16 --target ch10_packed_sequences > "$res/build.txt" 2>&1
stamp "build rc $?: $(grep -c warning "$res/build.txt") warning lines"
exe=build/head/chapters/10_packed_sequences/ch10_packed_sequences
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --initial-states --dtype bf16)
for round in 1 2 3 4 5 6; do
  timeout 90 "$exe" "${big[@]}" --form rows --layout channel-first --direction both --seq-lens random:8 \
    --summary "$res/bench_rows_$round.tsv" > "$res/ch10_rows_$round.txt" 2>&1
  stamp "rows $round rc $?: $(awk '/^summary \(/ {s = 1; next} s && $2 ~ /^[0-9.]+$/ {printf "%s %s ms; ", $1, $4}' "$res/ch10_rows_$round.txt")"
  timeout 90 "$exe" "${big[@]}" --form varlen --direction forward --seq-lens random:64 \
    --summary "$res/bench_varlen_$round.tsv" > "$res/ch10_varlen_$round.txt" 2>&1
  stamp "varlen $round rc $?: $(awk '/^summary \(/ {s = 1; next} s && $2 ~ /^[0-9.]+$/ {printf "%s %s ms; ", $1, $4}' "$res/ch10_varlen_$round.txt")"
done
