#!/usr/bin/env bash
# Call 4 (H100): call 1's code (`edge`) against the same with the tiles with flags walked fully
# unrolled, like the full ones (`unroll`: kUnroll = kRows, made by sed in a copy of the tree). The
# forward, channel-last, 8 x 4096 x 4096 bf16 W 4: rows with 8 documents and states, the states
# alone, the varlen batch, twice each. Run from the repository root with OUT set; everything
# comes back as one run.tgz.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'sed -i "s#$root/##g" "$res"/*.log "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"
copy=$(mktemp -d)
tar cf - --exclude=./build --exclude=./.git . | tar xf - -C "$copy"
sed -i 's/  constexpr int kUnroll = kFull || !kPacked ? kRows : 1;/  constexpr int kUnroll = kRows;/' "$copy/chapters/08_direct_forward/cl_tiled.cuh"
grep -q 'constexpr int kUnroll = kRows;' "$copy/chapters/08_direct_forward/cl_tiled.cuh" || { echo "sed failed"; exit 1; }
build() {  # build NAME SOURCE
  cmake -S "$2" -B "$root/build/exp-$1" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure_$1.log" 2>&1 &&
  cmake --build "$root/build/exp-$1" -j 8 --target ch10_packed_sequences > "$res/build_$1.log" 2>&1
}
build edge "$root" & p1=$!
build unroll "$copy" & p2=$!
wait $p1 || { tail -n 30 "$res/build_edge.log"; exit 1; }
wait $p2 || { tail -n 30 "$res/build_unroll.log"; exit 1; }
stamp build
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --layout channel-last --dtype bf16)
for rep in 1 2; do
  for v in edge unroll; do
    E=$root/build/exp-$v/chapters/10_packed_sequences/ch10_packed_sequences
    for c in "rows --seq-lens random:8" "states --seq-lens none" "varlen --seq-lens random:64"; do
      set -- $c; tag=${v}_$1_$rep; form=rows; [[ $1 == varlen ]] && form=varlen
      "$E" "${big[@]}" --direction forward --form $form $2 $3 --initial-states --summary "$res/$tag.tsv" > "$res/$tag.log" 2>&1
      stamp "$tag rc $?"
    done
  done
done
for f in "$res"/*.log; do grep -H 'against\|= .*% of the copy' "$f" | tail -n 1; done | sed "s#$res/##"
