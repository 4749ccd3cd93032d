#!/usr/bin/env bash
# Call 4 (H100): the tile's rows prefetched into the L2 before its form is found, in the packed
# kernels only (`pk`: CONV1D_PREFETCH_TILE=0) and in chapter 08's kernel as well (`all`, the
# default). Chapter 10's channel-last forward at 8 x 4096 x 4096 W 4 (rows with 8 documents and
# states, the states alone, varlen: bf16 twice; rows in fp32 and with bias + SiLU), and chapter
# 08's channel-last tiled kernel at its default shape in bf16 and fp32. Run from the repository
# root with OUT set; everything comes back as one run.tgz.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'sed -i "s#$root/##g" "$res"/*.log "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"
build() {  # build NAME PREFETCH
  cmake -S "$root" -B "$root/build/exp-$1" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
    "-DCMAKE_CUDA_FLAGS=-DCONV1D_PREFETCH_TILE=$2" > "$res/configure_$1.log" 2>&1 &&
  cmake --build "$root/build/exp-$1" -j 8 --target ch10_packed_sequences ch08_direct_forward > "$res/build_$1.log" 2>&1
}
build pk 0 & p1=$!; build all 1 & p2=$!
wait $p1 || { tail -n 30 "$res/build_pk.log"; exit 1; }
wait $p2 || { tail -n 30 "$res/build_all.log"; exit 1; }
stamp build
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --layout channel-last --direction forward --initial-states)
one() {  # one VARIANT TAG ARGS...
  local v=$1 tag=$2; shift 2
  (( SECONDS - start < 560 )) || { stamp "skip $tag"; return; }
  "$root/build/exp-$v/chapters/10_packed_sequences/ch10_packed_sequences" "${big[@]}" "$@" \
    --summary "$res/$tag.tsv" > "$res/$tag.log" 2>&1
  stamp "$tag rc $?"
}
for rep in 1 2; do
  for v in pk all; do
    one $v ${v}_rows_$rep --dtype bf16 --form rows --seq-lens random:8
    one $v ${v}_states_$rep --dtype bf16 --form rows --seq-lens none
    one $v ${v}_varlen_$rep --dtype bf16 --form varlen --seq-lens random:64
  done
done
for v in pk all; do
  one $v ${v}_fp32_1 --dtype fp32 --form rows --seq-lens random:8
  one $v ${v}_silu_1 --dtype bf16 --form rows --seq-lens random:8 --bias --silu
  for dt in bf16 fp32; do
    "$root/build/exp-$v/chapters/08_direct_forward/ch08_direct_forward" --layout channel-last \
      --variant tiled --dtype $dt --iters 20 --warmup 3 --summary "$res/ch08_${v}_$dt.tsv" \
      > "$res/ch08_${v}_$dt.log" 2>&1
    stamp "ch08 $v $dt rc $?"
  done
done
for f in "$res"/*_[12].log; do grep -H 'against\|= .*% of the copy' "$f" | tail -n 1; done | sed "s#$res/##"
grep -H '% of the copy' "$res"/ch08_*.log | sed "s#$res/##"
