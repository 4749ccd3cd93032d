#!/usr/bin/env bash
# A probe (timing only, not committed code): chapter 09's packed channel-first backward held to 3
# blocks of an SM in 16-bit storage instead of 4 (at most 168 registers instead of 128; ptxas: no
# spills instead of 78-104 bytes). Built in a scratch copy with probe/regs3.patch; the rows with 8
# documents and the states alone, bf16, channel-first, backward, at 8x4096x4096 (chapter 09's plain
# kernel, unchanged, in the same run as the baseline), with SiLU too if there is time.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'exit 143' TERM
trap 'sed -i "s#$root/##g" "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
p=/tmp/probe; rm -rf $p; mkdir -p $p
tar --exclude=./build --exclude=./.git -cf - . | tar -xf - -C $p
cd $p && git init -q && git apply results/final-check/probe/regs3.patch && stamp "patch applied"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"; cat "$res/gpu.txt"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure.txt" 2>&1
cmake --build build -j "$(nproc)" --target ch10_packed_sequences -- -k 0 > "$res/build.txt" 2>&1 || { grep -B2 -A12 "error" "$res/build.txt" | head -40; }
stamp "build"
exe=build/chapters/10_packed_sequences/ch10_packed_sequences
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --initial-states --dtype bf16 --layout channel-first --direction backward)
for args in "--seq-lens random:8" "--seq-lens none" "--seq-lens random:8 --bias --silu"; do
  tag=$(echo "$args" | tr -c 'a-z0-9\n' '_'); tag=${tag%_}
  "$exe" "${big[@]}" --form rows $args --summary "$res/bench_regs3.tsv" > "$res/bwd_$tag.txt" 2>&1
  stamp "$args rc $?: $(awk '/^summary \(/ {s = 1; next} s && $2 ~ /^[0-9.]+$/ {printf "%s %s ms; ", $1, $4}' "$res/bwd_$tag.txt")"
done
