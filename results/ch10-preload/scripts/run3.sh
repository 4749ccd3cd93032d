#!/usr/bin/env bash
# Call 3 (H100): this tree (`flags`) against three variants built beside it, the channel-last
# forward at 8 x 4096 x 4096 bf16 W 4 (rows with 8 documents and states, the states alone, the
# varlen batch), twice each:
#   ks     + sequence_of as an 8-way search (ks.patch): varlen's form waits on memory twice, not 6x
#   pfL1   + the tile's rows prefetched into L1 before its form is found (pfL1.patch)
#   pfL2   + the same into L2 (pfL2.patch)
# Run from the repository root with OUT set; everything comes back as one run.tgz.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'sed -i "s#$root/##g" "$res"/*.log "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"
here=results/ch10-preload
tree() {  # tree PATCH... : a copy of this tree with the patches applied
  local d; d=$(mktemp -d)
  tar cf - --exclude=./build --exclude=./.git . | tar xf - -C "$d"
  for p in "$@"; do (cd "$d" && patch -p1 -s < "$root/$here/$p") || return 1; done
  echo "$d"
}
declare -A src=([flags]=$root)
src[ks]=$(tree ks.patch) && src[pfL1]=$(tree ks.patch pfL1.patch) && src[pfL2]=$(tree ks.patch pfL2.patch) || exit 1
names=(flags ks pfL1 pfL2)
build() {  # build NAME
  cmake -S "${src[$1]}" -B "$root/build/exp-$1" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure_$1.log" 2>&1 &&
  cmake --build "$root/build/exp-$1" -j 4 --target ch10_packed_sequences > "$res/build_$1.log" 2>&1
}
declare -A pid
for v in "${names[@]}"; do build $v & pid[$v]=$!; done
for v in "${names[@]}"; do wait ${pid[$v]} || { tail -n 30 "$res/build_$v.log"; exit 1; }; done
stamp build
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --layout channel-last --direction forward --initial-states --dtype bf16)
one() {  # one VARIANT TAG ARGS...
  local v=$1 tag=$2; shift 2
  (( SECONDS - start < 560 )) || { stamp "skip $tag"; return; }
  "$root/build/exp-$v/chapters/10_packed_sequences/ch10_packed_sequences" "${big[@]}" "$@" \
    --summary "$res/$tag.tsv" > "$res/$tag.log" 2>&1
  stamp "$tag rc $?"
}
for rep in 1 2; do
  for v in "${names[@]}"; do
    one $v ${v}_rows_$rep --form rows --seq-lens random:8
    one $v ${v}_states_$rep --form rows --seq-lens none
    one $v ${v}_varlen_$rep --form varlen --seq-lens random:64
  done
done
for f in "$res"/*_[12].log; do grep -H 'against\|= .*% of the copy' "$f" | tail -n 1; done | sed "s#$res/##"
