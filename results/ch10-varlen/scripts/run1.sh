#!/usr/bin/env bash
# Call 1 (H100): where the varlen forward's time goes. The committed code (`base`) against three
# experiments that each drop one part of the varlen policy's work (their outputs are wrong where
# that part mattered; the chapter still times them): `nospan` (no search for a tile's form: every
# tile full), `noedge` (no edge blocks at the head of the grid), and `r32` (32 rows a thread in
# 16-bit types too, with the prefetch). 32768 tokens x 4096 bf16, W 4, 64 sequences, twice each;
# the rows form once each; the base also at 1, 8 and 512 sequences and without initial states;
# then Nsight Compute's warp stall samples of the base's varlen kernel. Run from the repository
# root with OUT set; everything comes back as one run.tgz.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'sed -i "s#$root/##g" "$res"/*.log "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"
here=results/ch10-varlen
tree() {  # tree NAME PATCH: a copy of this tree with PATCH applied
  local d=$(mktemp -d)
  tar cf - --exclude=./build --exclude=./.git . | tar xf - -C "$d"
  (cd "$d" && patch -p1 -s < "$root/$here/$2") || exit 1
  echo "$d"
}
build() {  # build NAME SOURCE
  cmake -S "$2" -B "$root/build/exp-$1" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure_$1.log" 2>&1 &&
  cmake --build "$root/build/exp-$1" -j 4 --target ch10_packed_sequences > "$res/build_$1.log" 2>&1
}
names=(base nospan noedge r32); pids=()
for v in "${names[@]}"; do
  if [ $v = base ]; then src=$root; else src=$(tree $v $v.patch); fi
  build $v "$src" & pids+=($!)
done
for i in "${!names[@]}"; do wait ${pids[$i]} || { tail -n 30 "$res/build_${names[$i]}.log"; exit 1; }; done
stamp build
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --layout channel-last --direction forward --dtype bf16)
exe() { echo "$root/build/exp-$1/chapters/10_packed_sequences/ch10_packed_sequences"; }
one() {  # one VARIANT TAG ARGS...
  local v=$1 tag=$2; shift 2
  (( SECONDS - start < 500 )) || { stamp "skip $tag"; return; }
  "$(exe $v)" "${big[@]}" "$@" --summary "$res/$tag.tsv" > "$res/$tag.log" 2>&1
  stamp "$tag rc $?"
}
for rep in 1 2; do
  for v in "${names[@]}"; do one $v ${v}_varlen_$rep --form varlen --seq-lens random:64 --initial-states; done
done
for v in "${names[@]}"; do one $v ${v}_rows_1 --form rows --seq-lens random:8 --initial-states; done
for n in 1 8 512; do one base base_varlen${n}_1 --form varlen --seq-lens random:$n --initial-states; done
one base base_varlen_nostates_1 --form varlen --seq-lens random:64
if (( SECONDS - start < 480 )); then
  ncu --set full --import-source no -k regex:conv_fwd_cl_tiled -c 1 -f -o "$res/ncu_varlen" \
    "$(exe base)" "${big[@]}" --form varlen --seq-lens random:64 --initial-states --iters 1 --warmup 0 \
    > "$res/ncu_varlen.log" 2>&1
  stamp "ncu rc $?"
  ncu -i "$res/ncu_varlen.ncu-rep" --page source --csv --print-source sass > "$res/ncu_varlen_source.csv" 2> "$res/ncu_varlen_source.err"
  ncu -i "$res/ncu_varlen.ncu-rep" --page details --csv > "$res/ncu_varlen_details.csv" 2>&1
  python3 "$root/results/ch10-preload/scripts/stall_summary.py" "$res/ncu_varlen_source.csv" > "$res/stalls_varlen.txt" 2>&1
  rm -f "$res"/*.ncu-rep "$res"/ncu_varlen_source.csv
fi
for f in "$res"/*_[12].log; do grep -H '= .*% of the copy' "$f"; done | sed "s#$res/##"
