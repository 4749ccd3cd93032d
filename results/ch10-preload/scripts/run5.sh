#!/usr/bin/env bash
# Call 5 (H100): the committed tenth version (`base`) against the same with the channel-last
# backward's tiles' rows of x and dout prefetched into the L2 (`bwdpf`, bwd_pf.patch; packed
# policies, 16-bit types). The backward, channel-last, 8 x 4096 x 4096 bf16 W 4: rows with 8
# documents and states, the states alone, the varlen batch (twice each), rows with bias + SiLU.
# Run from the repository root with OUT set; everything comes back as one run.tgz.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'sed -i "s#$root/##g" "$res"/*.log "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"
here=results/ch10-preload
pf=$(mktemp -d)
tar cf - --exclude=./build --exclude=./.git . | tar xf - -C "$pf"
(cd "$pf" && patch -p1 -s < "$root/$here/bwd_pf.patch") || exit 1
build() {  # build NAME SOURCE
  cmake -S "$2" -B "$root/build/exp-$1" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure_$1.log" 2>&1 &&
  cmake --build "$root/build/exp-$1" -j 8 --target ch10_packed_sequences > "$res/build_$1.log" 2>&1
}
build base "$root" & p1=$!; build bwdpf "$pf" & p2=$!
wait $p1 || { tail -n 30 "$res/build_base.log"; exit 1; }
wait $p2 || { tail -n 30 "$res/build_bwdpf.log"; exit 1; }
stamp build
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --layout channel-last --direction backward --initial-states)
one() {  # one VARIANT TAG ARGS...
  local v=$1 tag=$2; shift 2
  (( SECONDS - start < 560 )) || { stamp "skip $tag"; return; }
  "$root/build/exp-$v/chapters/10_packed_sequences/ch10_packed_sequences" "${big[@]}" "$@" \
    --summary "$res/$tag.tsv" > "$res/$tag.log" 2>&1
  stamp "$tag rc $?"
}
for rep in 1 2; do
  for v in base bwdpf; do
    one $v ${v}_rows_$rep --dtype bf16 --form rows --seq-lens random:8
    one $v ${v}_states_$rep --dtype bf16 --form rows --seq-lens none
    one $v ${v}_varlen_$rep --dtype bf16 --form varlen --seq-lens random:64
  done
done
for v in base bwdpf; do one $v ${v}_silu_1 --dtype bf16 --form rows --seq-lens random:8 --bias --silu; done
for f in "$res"/*_[12].log; do grep -H 'against\|whole backward' "$f" | tail -n 1; done | sed "s#$res/##"
