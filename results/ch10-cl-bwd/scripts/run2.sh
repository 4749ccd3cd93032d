#!/usr/bin/env bash
# Call 2 (H100): an experiment, not committed code. The same sources built twice: as they are, and
# with the channel-last tile walks rolled (-DCONV1D_EXP_CL_ROLLED=1 for chapter 09's backward walk,
# -DCONV1D_EXP_CL_FWD_ROLLED=1 for chapter 08's forward tile: one batch of 8 rows in the code,
# run as a loop, instead of every row unrolled). Chapter 10, channel-last, both directions, at
# 8 x 4096 x 4096 W 4 with the states: 8 documents a row, the states alone, varlen (64 sequences),
# fp32, bias + SiLU. Each run also times chapter 08's and 09's kernels on the same x.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'sed -i "s#$root/##g" "$res"/*.log "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"
build() {  # build DIR FLAGS
  cmake -S . -B "$1" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native "-DCMAKE_CUDA_FLAGS=$2" > "$res/configure_$(basename "$1").log" 2>&1 &&
  cmake --build "$1" -j 8 --target ch10_packed_sequences > "$res/build_$(basename "$1").log" 2>&1
}
build "$root/build/exp-unrolled" "" & p1=$!
build "$root/build/exp-rolled" "-DCONV1D_EXP_CL_ROLLED=1 -DCONV1D_EXP_CL_FWD_ROLLED=1" & p2=$!
wait $p1 || { tail -n 40 "$res"/build_exp-unrolled.log; exit 1; }
wait $p2 || { tail -n 40 "$res"/build_exp-rolled.log; exit 1; }
stamp build
common=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --initial-states --layout channel-last)
for v in unrolled rolled; do
  E=$root/build/exp-$v/chapters/10_packed_sequences/ch10_packed_sequences
  cuobjdump --dump-resource-usage "$E" 2>/dev/null | grep -A1 'conv_bwd_cl\|conv_fwd_cl' | grep -o 'Function.*\|REG:[0-9]* STACK:[0-9]*' | paste - - > "$res/resources_$v.txt"
  for tag in rows states varlen fp32 silu; do
    case $tag in
      rows) a=(--dtype bf16 --form rows --seq-lens random:8) ;;
      states) a=(--dtype bf16 --form rows --seq-lens none) ;;
      varlen) a=(--dtype bf16 --form varlen --seq-lens random:64) ;;
      fp32) a=(--dtype fp32 --form rows --seq-lens random:8) ;;
      silu) a=(--dtype bf16 --form rows --seq-lens random:8 --bias --silu) ;;
    esac
    "$E" "${common[@]}" "${a[@]}" --summary "$res/bench_${v}.tsv" > "$res/${v}_$tag.log" 2>&1
    stamp "$v $tag rc $?"
  done
done
