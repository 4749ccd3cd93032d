#!/usr/bin/env bash
# Call 3 (H100): the varlen forward's edge work with 16-byte state reads and writes. `base`: the
# committed code (this tree with walk_vec.patch taken back out); `walk`: call 2's kept step (base +
# walk_warp.patch without the warp search); `vec`: walk + the states of a thread's channels read
# and written 16 bytes at a time (this tree). Varlen forward at 32768 tokens x 4096, W 4: bf16 at
# 64 sequences twice, 8 and 512 once, fp32 at 64 once; the rows form (8 documents a row) once;
# then the chapter-10 tests and compute-sanitizer (memcheck, racecheck, initcheck) on `vec`. Run
# from the repository root with OUT set; everything comes back as one run.tgz.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'sed -i "s#$root/##g" "$res"/*.log "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"
here=results/ch10-varlen
copy() { local d=$(mktemp -d); tar cf - --exclude=./build --exclude=./.git . | tar xf - -C "$d"; echo "$d"; }
b=$(copy); (cd "$b" && patch -R -p1 -s < "$root/$here/walk_vec.patch") || exit 1
w=$(copy); (cd "$w" && patch -R -p1 -s < "$root/$here/walk_vec.patch" && patch -p1 -s < "$root/$here/walk_warp.patch") || exit 1
sed -i 's/sequence_of_warp(cu_seqlens, sequences, lo/sequence_of(cu_seqlens, sequences, lo/' \
  "$w/chapters/10_packed_sequences/sequences.cuh"
build() {  # build NAME SOURCE TARGETS...
  local v=$1 src=$2; shift 2
  cmake -S "$src" -B "$root/build/exp-$v" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure_$v.log" 2>&1 &&
  cmake --build "$root/build/exp-$v" -j 5 --target "$@" > "$res/build_$v.log" 2>&1
}
build base "$b" ch10_packed_sequences & p1=$!
build walk "$w" ch10_packed_sequences & p2=$!
build vec "$root" ch10_packed_sequences conv1d_tests_ch10 & p3=$!
for p in base:$p1 walk:$p2 vec:$p3; do wait ${p#*:} || { tail -n 30 "$res/build_${p%%:*}.log"; exit 1; }; done
stamp build
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --layout channel-last --direction forward --initial-states)
exe() { echo "$root/build/exp-$1/chapters/10_packed_sequences/ch10_packed_sequences"; }
one() {  # one VARIANT TAG ARGS...
  local v=$1 tag=$2; shift 2
  (( SECONDS - start < 450 )) || { stamp "skip $tag"; return; }
  "$(exe $v)" "${big[@]}" "$@" --summary "$res/$tag.tsv" > "$res/$tag.log" 2>&1
  stamp "$tag rc $?"
}
for rep in 1 2; do for v in base walk vec; do one $v ${v}_fwd64_$rep --dtype bf16 --form varlen --seq-lens random:64; done; done
for v in base walk vec; do
  one $v ${v}_fwd8_1 --dtype bf16 --form varlen --seq-lens random:8
  one $v ${v}_fwd512_1 --dtype bf16 --form varlen --seq-lens random:512
  one $v ${v}_fp32_1 --dtype fp32 --form varlen --seq-lens random:64
  one $v ${v}_rows_1 --dtype bf16 --form rows --seq-lens random:8
done
(cd "$root/build/exp-vec" && ctest -R 'ch10' --output-on-failure > "$res/ctest_vec.txt" 2>&1); stamp "ctest rc $?"
tail -n 3 "$res/ctest_vec.txt"
san=(--initial-states --iters 1 --warmup 0 --layout channel-last --direction both)
i=0
for s in "--batch 2 --dim 40 --seqlen 67 --seq-lens random:9 --width 3" "--batch 3 --dim 255 --seqlen 300 --seq-lens random:40 --dtype fp32" "--batch 1 --dim 4096 --seqlen 2048 --seq-lens random:100 --width 2" "--batch 2 --dim 64 --seqlen 100 --seq-lens random:30 --dtype fp16"; do
  for tool in memcheck racecheck initcheck; do
    (( SECONDS - start < 570 )) || break
    i=$((i + 1))
    echo "$s" > "$res/san_$i.log"
    compute-sanitizer --tool $tool --error-exitcode 9 "$(exe vec)" $s "${san[@]}" >> "$res/san_$i.log" 2>&1
    stamp "sanitizer $tool ($s) rc $?"
  done
done
for f in "$res"/*_[12].log; do grep -H '= .*% of the copy\|FAIL' "$f"; done | sed "s#$res/##"
