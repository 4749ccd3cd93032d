#!/usr/bin/env bash
# The twenty-third version as committed under Nsight Compute: chapter 09's staged kernel in chapter
# 10's channel-first rows backward, bf16 8 x 4096 x 4096, 8 documents a row and states, without
# and with bias and SiLU: the packed launches (the words) and the plain ones, instructions, issue
# slots and each stall reason (as ../staged-taps/run2 for the first form).
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'exit 143' TERM
trap 'sed -i "s#$root/##g" "$res"/*.txt "$res"/*.csv 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"; cat "$res/gpu.txt"
b=$root/build/probe
cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > /dev/null &&
  cmake --build "$b" -j 16 --target ch10_packed_sequences > "$res/build.txt" 2>&1
stamp "build rc $?: $(grep -c warning "$res/build.txt") warning lines"
m=$(sed -n 's/^m=//p' results/staged-taps/scripts/run2.sh)
for c in "rows8|" "silu8|--bias --silu"; do
  IFS='|' read -r tag rest <<< "$c"; read -r -a args <<< "$rest"
  ncu --csv --page raw --clock-control none --kernel-name regex:'conv_bwd_cf_staged' --launch-count 6 --metrics "$m" \
    --log-file "$res/ncu_$tag.csv" "$b/chapters/10_packed_sequences/ch10_packed_sequences" \
    --batch 8 --dim 4096 --seqlen 4096 --width 4 --dtype bf16 --initial-states --form rows --layout channel-first \
    --direction backward --seq-lens random:8 "${args[@]}" --iters 1 --warmup 0 > "$res/ncu_$tag.txt" 2>&1
  rc=$?; sed -i '/^==[A-Z]*==/d' "$res/ncu_$tag.csv"; stamp "ncu $tag rc $rc"
done
