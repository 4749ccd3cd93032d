#!/usr/bin/env bash
# Call 2 (H100): the varlen policy's mixed tiles and searches made short. `base`: the committed
# code (this tree with walk_warp.patch taken back out); `walk`: a mixed tile's flags from one
# search and the sequence bounds held in registers (no warp search); `warp`: the same, plus the
# searches of a tile's form and flags done by the whole warp at once (this tree). Varlen forward
# at 32768 tokens x 4096 bf16, W 4, 64 sequences twice, 8 and 512 once; the varlen backward
# (64) once; then the chapter-10 unit tests and compute-sanitizer on `warp`. Run from the
# repository root with OUT set; everything comes back as one run.tgz.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'sed -i "s#$root/##g" "$res"/*.log "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"
here=results/ch10-varlen
copy() { local d=$(mktemp -d); tar cf - --exclude=./build --exclude=./.git . | tar xf - -C "$d"; echo "$d"; }
b=$(copy); (cd "$b" && patch -R -p1 -s < "$root/$here/walk_warp.patch") || exit 1
w=$(copy); sed -i 's/sequence_of_warp(cu_seqlens, sequences, lo/sequence_of(cu_seqlens, sequences, lo/' \
  "$w/chapters/10_packed_sequences/sequences.cuh"
grep -c 'sequence_of_warp(cu_seqlens, sequences, lo' "$w/chapters/10_packed_sequences/sequences.cuh"
build() {  # build NAME SOURCE TARGETS...
  local v=$1 src=$2; shift 2
  cmake -S "$src" -B "$root/build/exp-$v" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure_$v.log" 2>&1 &&
  cmake --build "$root/build/exp-$v" -j 5 --target "$@" > "$res/build_$v.log" 2>&1
}
build base "$b" ch10_packed_sequences & p1=$!
build walk "$w" ch10_packed_sequences & p2=$!
build warp "$root" ch10_packed_sequences conv1d_tests_ch10 & p3=$!
for p in base:$p1 walk:$p2 warp:$p3; do wait ${p#*:} || { tail -n 30 "$res/build_${p%%:*}.log"; exit 1; }; done
stamp build
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --layout channel-last --dtype bf16 --form varlen --initial-states)
exe() { echo "$root/build/exp-$1/chapters/10_packed_sequences/ch10_packed_sequences"; }
one() {  # one VARIANT TAG ARGS...
  local v=$1 tag=$2; shift 2
  (( SECONDS - start < 450 )) || { stamp "skip $tag"; return; }
  "$(exe $v)" "${big[@]}" "$@" --summary "$res/$tag.tsv" > "$res/$tag.log" 2>&1
  stamp "$tag rc $?"
}
for rep in 1 2; do for v in base walk warp; do one $v ${v}_fwd64_$rep --direction forward --seq-lens random:64; done; done
for v in base walk warp; do
  one $v ${v}_fwd8_1 --direction forward --seq-lens random:8
  one $v ${v}_fwd512_1 --direction forward --seq-lens random:512
  one $v ${v}_bwd64_1 --direction backward --seq-lens random:64
done
(cd "$root/build/exp-warp" && ctest -R 'ch10' --output-on-failure > "$res/ctest_warp.txt" 2>&1); stamp "ctest rc $?"
tail -n 3 "$res/ctest_warp.txt"
san=(--form varlen --initial-states --iters 1 --warmup 0 --layout channel-last --direction both)
for s in "--batch 2 --dim 40 --seqlen 67 --seq-lens random:9" "--batch 3 --dim 256 --seqlen 300 --seq-lens random:40" "--batch 1 --dim 4096 --seqlen 2048 --seq-lens random:100"; do
  for tool in memcheck racecheck; do
    (( SECONDS - start < 560 )) || break
    compute-sanitizer --tool $tool --error-exitcode 9 "$(exe warp)" $s "${san[@]}" > "$res/san_${tool}_$(echo $s | tr -d ' -' | cut -c1-30).log" 2>&1
    stamp "sanitizer $tool ($s) rc $?"
  done
done
for f in "$res"/*_[12].log; do grep -H '= .*% of the copy\|FAIL' "$f"; done | sed "s#$res/##"
