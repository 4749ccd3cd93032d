#!/usr/bin/env bash
# Call 2 (H100): where the packed channel-last forward's time goes, block by block. The edge-first
# code of call 1 with ../trace.patch applied (experiment only: each block of chapter 08's cl_tiled
# records its start and end on the global timer, its clocks, its SM and how many of its threads
# left the full path; the chapter writes the last plain and packed launches' records to
# $CONV1D_TRACE). The forward, channel-last, 8 x 4096 x 4096 bf16 W 4: rows with 8 documents and
# states, the states alone, no states, the varlen batch. Run from the repository root with OUT
# set; everything comes back as one run.tgz.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'sed -i "s#$root/##g" "$res"/*.log "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"
git apply results/ch10-edge-first/trace.patch || exit 1
b=$root/build/exp-trace
cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native -DCMAKE_CUDA_FLAGS=-DCONV1D_EXP_TRACE=1 > "$res/configure.log" 2>&1
cmake --build "$b" -j "$(nproc)" --target ch10_packed_sequences > "$res/build.log" 2>&1 || { tail -n 40 "$res/build.log"; exit 1; }
stamp build
E=$b/chapters/10_packed_sequences/ch10_packed_sequences
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --layout channel-last --dtype bf16)
run() {  # run TAG ARGS...
  local tag=$1; shift
  CONV1D_TRACE=$res/trace_$tag.csv "$E" "${big[@]}" "$@" --summary "$res/$tag.tsv" > "$res/$tag.log" 2>&1; stamp "$tag rc $?"
}
run rows --direction forward --form rows --seq-lens random:8 --initial-states
run states --direction forward --form rows --seq-lens none --initial-states
run nostates --direction forward --form rows --seq-lens none
run varlen --direction forward --form varlen --seq-lens random:64 --initial-states
for f in "$res"/*.log; do grep -H 'against\|= .*% of the copy' "$f" | tail -n 2; done | sed "s#$res/##"
git apply -R results/ch10-edge-first/trace.patch
