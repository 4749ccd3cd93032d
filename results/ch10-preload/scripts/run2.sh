#!/usr/bin/env bash
# Call 2 (H100): this tree (`flags`: call 1's kept step) against the same with the tiles' row loads
# kept out of L1 (`nol1`, nol1.patch: ld.global.L1::no_allocate, so the sequence starts and ids the
# forms read stay there), the channel-last forward at 8 x 4096 x 4096 bf16 W 4, twice each; and
# Nsight Compute's per-instruction warp stall samples of `flags` (varlen and rows), to see where
# the packed kernel's warps wait. Run from the repository root with OUT set.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'sed -i "s#$root/##g" "$res"/*.log "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"
here=results/ch10-preload
nol1=$(mktemp -d)
tar cf - --exclude=./build --exclude=./.git . | tar xf - -C "$nol1"
(cd "$nol1" && patch -p1 -s < "$root/$here/nol1.patch") || exit 1
build() {  # build NAME SOURCE
  cmake -S "$2" -B "$root/build/exp-$1" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure_$1.log" 2>&1 &&
  cmake --build "$root/build/exp-$1" -j 8 --target ch10_packed_sequences > "$res/build_$1.log" 2>&1
}
build flags "$root" & p1=$!; build nol1 "$nol1" & p2=$!
wait $p1 || { tail -n 30 "$res/build_flags.log"; exit 1; }
wait $p2 || { tail -n 30 "$res/build_nol1.log"; exit 1; }
stamp build
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --layout channel-last --direction forward --initial-states --dtype bf16)
exe() { echo "$root/build/exp-$1/chapters/10_packed_sequences/ch10_packed_sequences"; }
one() {  # one VARIANT TAG ARGS...
  local v=$1 tag=$2; shift 2
  (( SECONDS - start < 560 )) || { stamp "skip $tag"; return; }
  "$(exe $v)" "${big[@]}" "$@" --summary "$res/$tag.tsv" > "$res/$tag.log" 2>&1
  stamp "$tag rc $?"
}
for rep in 1 2; do
  for v in flags nol1; do
    one $v ${v}_rows_$rep --form rows --seq-lens random:8
    one $v ${v}_states_$rep --form rows --seq-lens none
    one $v ${v}_varlen_$rep --form varlen --seq-lens random:64
  done
done
for c in "varlen --seq-lens random:64" "rows --seq-lens random:8"; do
  set -- $c; form=$1
  (( SECONDS - start < 480 )) || { stamp "skip ncu $form"; continue; }
  ncu --set full --import-source no -k regex:conv_fwd_cl_tiled -c 1 -f -o "$res/ncu_$form" \
    "$(exe flags)" "${big[@]}" --form $form $2 $3 --iters 1 --warmup 0 > "$res/ncu_$form.log" 2>&1
  stamp "ncu $form rc $?"
  ncu -i "$res/ncu_$form.ncu-rep" --page source --csv --print-source sass > "$res/ncu_${form}_source.csv" 2> "$res/ncu_${form}_source.err"
  stamp "source page rc $?"
  ncu -i "$res/ncu_$form.ncu-rep" --page details --csv > "$res/ncu_${form}_details.csv" 2>&1
done
rm -f "$res"/*.ncu-rep
for f in "$res"/*_[12].log; do grep -H 'against\|= .*% of the copy' "$f" | tail -n 1; done | sed "s#$res/##"
