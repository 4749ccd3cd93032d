#!/usr/bin/env bash
# run1: the channel-last backward's rolled walks ask for their next batch's rows before they
# compute this one's (../pipeline.patch). Three builds side by side: b4 (the walk with flags
# pipelined, held to 4 blocks a multiprocessor, as committed), b3 (the same held to 3:
# -DCL_MIXED_MIN_BLOCKS=3), plain (b4, and the plain walk rolled and pipelined too:
# -DCL_BWD_PIPE_PLAIN=1). Then the channel-last backward at 8 x 4096 x 4096 W 4 in each.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'exit 143' TERM
trap 'sed -i "s#$root/##g" "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"; cat "$res/gpu.txt"
build() {  # build TAG "CUDA FLAGS"
  cmake -S . -B "build/$1" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
    -DCMAKE_CUDA_FLAGS="$2" > "$res/configure_$1.txt" 2>&1 &&
    cmake --build "build/$1" -j 6 --target ch10_packed_sequences > "$res/build_$1.txt" 2>&1
  stamp "build $1 rc $?"
}
build b4 "" & build b3 "-DCL_MIXED_MIN_BLOCKS=3" & build plain "-DCL_BWD_PIPE_PLAIN=1" & wait
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --initial-states --layout channel-last
     --direction backward)
bench() {  # bench BUILD TAG DTYPE "ARGS"
  local args; read -r -a args <<< "$4"
  timeout 120 "build/$1/chapters/10_packed_sequences/ch10_packed_sequences" "${big[@]}" --dtype "$3" "${args[@]}" \
    --summary "$res/bench_$1_$2.tsv" > "$res/ch10_$1_$2.txt" 2>&1
  stamp "$1 $2 rc $?: $(awk '/^summary \(/ {s = 1; next} s && $2 ~ /^[0-9.]+$/ {printf "%s %s ms; ", $1, $4}' "$res/ch10_$1_$2.txt")"
}
for b in b4 b3 plain; do
  bench "$b" rows8 bf16 "--form rows --seq-lens random:8"
  bench "$b" states bf16 "--form rows --seq-lens none"
  bench "$b" varlen bf16 "--form varlen --seq-lens random:64"
done
for b in b4 b3 plain; do
  bench "$b" silu8 bf16 "--form rows --seq-lens random:8 --bias --silu"
  bench "$b" fp32rows8 fp32 "--form rows --seq-lens random:8"
done
