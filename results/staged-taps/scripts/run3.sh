#!/usr/bin/env bash
# Where the rest of the words' kernel's time goes (run2's profile: 58 % more instructions than the
# plain kernel, fewer warps waiting on memory, more on fixed-latency dependencies). Three changes
# against the tree as it is (new), each in a scratch copy built in the same call:
#   pf    prefetch.patch: each tile's rows' states and final states' gradients asked into the L2
#         when the tile's copies are asked for (the states alone, no words, took 1.11 x the plain
#         kernel's time in run1: the suspect is the wait on those loads after the barrier)
#   s2    stages2.patch: two stages instead of three, so that more blocks fit a multiprocessor
#         (five: Nsight Compute in ../taps-check/run2)
#         instead of four (more warps to hide the masked arithmetic's latencies)
#   pfs2  both
# Chapter 10's channel-first rows backward at 8 x 4096 x 4096 bf16: 8 documents a row, the states
# alone, and 8 documents with bias and SiLU, on all four. Results under $OUT/run.tgz.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'exit 143' TERM
trap 'sed -i "s#$root/##g; s#/tmp/probe-[a-z0-9]*/##g" "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"; cat "$res/gpu.txt"
declare -A src=([new]=$root [pf]=/tmp/probe-pf [s2]=/tmp/probe-s2 [pfs2]=/tmp/probe-pfs2)
declare -A patch=([pf]="prefetch.patch" [s2]="stages2.patch" [pfs2]="prefetch.patch stages2.patch")
for t in pf s2 pfs2; do
  if [[ ! -d ${src[$t]}/build/probe ]]; then
    rm -rf "${src[$t]}"; mkdir -p "${src[$t]}"
    tar --exclude=./build --exclude=./.git -cf - . | tar -xf - -C "${src[$t]}"
    for p in ${patch[$t]}; do (cd "${src[$t]}" && git init -q 2>/dev/null; git apply "results/staged-taps/$p") || stamp "$t: $p FAILED"; done
  fi
done
build() {
  local s=${src[$1]}
  cmake -S "$s" -B "$s/build/probe" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
    > "$res/configure_$1.txt" 2>&1 && cmake --build "$s/build/probe" -j 4 --target ch10_packed_sequences > "$res/build_$1.txt" 2>&1
}
for t in new pf s2 pfs2; do build $t & done
wait
stamp "builds done: $(for t in new pf s2 pfs2; do printf '%s %s error lines; ' $t "$(grep -c 'error' "$res/build_$t.txt")"; done)"
exe() { echo "${src[$1]}/build/probe/chapters/10_packed_sequences/ch10_packed_sequences"; }
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --initial-states --form rows
     --layout channel-first --direction backward --dtype bf16)
for c in "rows8|--seq-lens random:8" "states|--seq-lens none" "silu8|--seq-lens random:8 --bias --silu"; do
  IFS='|' read -r tag rest <<< "$c"; read -r -a args <<< "$rest"
  for t in new pf s2 pfs2; do
    timeout 120 "$(exe $t)" "${big[@]}" "${args[@]}" --summary "$res/bench_${tag}_$t.tsv" > "$res/ch10_${tag}_$t.txt" 2>&1
    stamp "$tag $t rc $?: $(awk '/^summary \(/ {s = 1; next} s && $2 ~ /^[0-9.]+$/ {printf "%s %s ms; ", $1, $4}' "$res/ch10_${tag}_$t.txt")"
  done
done
