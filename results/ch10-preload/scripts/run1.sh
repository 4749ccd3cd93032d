#!/usr/bin/env bash
# Call 1 (H100): three builds of chapter 10 side by side, timed in one call.
#   base   HEAD before this step
#   flags  + PackedRows::flags_of from 16-byte id loads away from the row's edges (flags.patch)
#   pre    + the tile's first batch of rows loaded before its form is known (pre.patch)
# The channel-last forward at 8 x 4096 x 4096 W 4: rows with 8 documents and states, the states
# alone, the varlen batch (bf16, twice each), then rows in fp32 and with bias + SiLU. Run from the
# repository root with OUT set, on the tree of `pre`; everything comes back as one run.tgz.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'sed -i "s#$root/##g" "$res"/*.log "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"
here=results/ch10-preload
tree() {  # tree PATCH... : a copy of this tree with the patches taken out again
  local d; d=$(mktemp -d)
  tar cf - --exclude=./build --exclude=./.git . | tar xf - -C "$d"
  for p in "$@"; do (cd "$d" && patch -R -p1 -s < "$root/$here/$p") || return 1; done
  echo "$d"
}
base=$(tree pre.patch flags.patch) && flags=$(tree pre.patch) && pre=$(tree) || exit 1
build() {  # build NAME SOURCE
  cmake -S "$2" -B "$root/build/exp-$1" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure_$1.log" 2>&1 &&
  cmake --build "$root/build/exp-$1" -j 6 --target ch10_packed_sequences > "$res/build_$1.log" 2>&1
}
build base "$base" & p1=$!; build flags "$flags" & p2=$!; build pre "$pre" & p3=$!
for v in 1:base 2:flags 3:pre; do
  p=p${v%%:*}; wait ${!p} || { tail -n 30 "$res/build_${v#*:}.log"; exit 1; }
done
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
  for v in base flags pre; do
    one $v ${v}_rows_$rep --dtype bf16 --form rows --seq-lens random:8
    one $v ${v}_states_$rep --dtype bf16 --form rows --seq-lens none
    one $v ${v}_varlen_$rep --dtype bf16 --form varlen --seq-lens random:64
  done
done
for v in base flags pre; do
  one $v ${v}_fp32_1 --dtype fp32 --form rows --seq-lens random:8
  one $v ${v}_silu_1 --dtype bf16 --form rows --seq-lens random:8 --bias --silu
done
for f in "$res"/*.log; do grep -H 'against\|= .*% of the copy' "$f" | tail -n 1; done | sed "s#$res/##"
