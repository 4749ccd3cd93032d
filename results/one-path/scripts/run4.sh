#!/usr/bin/env bash
# The channel-first rows forward taken apart (the twenty-first version, e246aa3, in a scratch copy
# with results/one-path/probe.patch): CH10_PROBE bits switch parts off at run time (1 every warp
# takes the full form, 2 no word loads (all ones), 4 no wait for the map kernel; wrong answers,
# for timing only). 8 x 4096 x 4096 bf16, channel-first, forward: 8 and 64 documents a row, and
# 8 with bias and SiLU; chapter 08's plain kernel in the same runs.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'exit 143' TERM
trap 'sed -i "s#$root/##g; s#/tmp/probe/##g" "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
p=/tmp/probe; rm -rf $p; mkdir -p $p
tar --exclude=./build --exclude=./.git -cf - . | tar -xf - -C $p
(cd $p && git init -q && git apply results/one-path/probe.patch) && stamp "probe.patch applied"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"; cat "$res/gpu.txt"
cmake -S $p -B $p/build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure.txt" 2>&1
cmake --build $p/build -j "$(nproc)" --target ch10_packed_sequences > "$res/build.txt" 2>&1 || tail -30 "$res/build.txt"
stamp "build"
E=$p/build/chapters/10_packed_sequences/ch10_packed_sequences
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --initial-states --dtype bf16 --form rows
     --layout channel-first --direction forward)
for c in "rows8|--seq-lens random:8" "rows64|--seq-lens random:64" "rows8_silu|--seq-lens random:8 --bias --silu"; do
  tag=${c%%|*}; read -r -a args <<< "${c#*|}"
  for k in 0 1 2 4 7 0; do
    CH10_PROBE=$k "$E" "${big[@]}" "${args[@]}" --summary "$res/bench_${tag}_p$k.tsv" > "$res/${tag}_p$k.txt" 2>&1
    stamp "$tag probe $k: $(awk '/^summary \(/ {s = 1; next} s && $2 ~ /^[0-9.]+$/ {printf "%s %s ms; ", $1, $4}' "$res/${tag}_p$k.txt")"
  done
done
