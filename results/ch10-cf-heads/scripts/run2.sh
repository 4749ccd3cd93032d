#!/usr/bin/env bash
# Call 2 (H100): `pdl`: this tree (call 1's heads, and the convolution launched early behind
# make_span_map, the two timed as one record); `cut`: pdl + cut.patch (a mixed vector whose window
# changes sequence once carries where in its map byte, and its flags are computed, not read). The
# rows forward at 8 x 4096 x 4096 bf16 W 4 (8 and 64 documents a row, with states; states alone),
# fp32; then the chapter-10 tests and compute-sanitizer on both. Run from the repository root with
# OUT set; everything comes back as one run.tgz.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'sed -i "s#$root/##g" "$res"/*.log "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"
here=results/ch10-cf-heads
copy() { local d=$(mktemp -d); tar cf - --exclude=./build --exclude=./.git . | tar xf - -C "$d"; echo "$d"; }
declare -A src=([pdl]=$root)
src[cut]=$(copy); (cd "${src[cut]}" && patch -p0 -s < "$root/$here/cut.patch") || exit 1
build() {  # build NAME TARGETS...
  local v=$1; shift
  cmake -S "${src[$v]}" -B "$root/build/exp-$v" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure_$v.log" 2>&1 &&
  cmake --build "$root/build/exp-$v" -j 8 --target "$@" > "$res/build_$v.log" 2>&1
}
declare -A pid
for v in pdl cut; do build $v ch10_packed_sequences conv1d_tests_ch10 & pid[$v]=$!; done
for v in "${!pid[@]}"; do wait "${pid[$v]}" || { echo "build $v failed"; tail -n 30 "$res/build_$v.log"; exit 1; }; done
stamp "build: $(cat "$res"/build_*.log | grep -c warning) warning lines"
exe() { echo "$root/build/exp-$1/chapters/10_packed_sequences/ch10_packed_sequences"; }
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --initial-states --form rows --layout channel-first --direction forward)
one() {  # one VARIANT TAG ARGS...
  local v=$1 tag=$2; shift 2
  (( SECONDS - start < 420 )) || { stamp "skip $tag"; return; }
  "$(exe $v)" "$@" --summary "$res/$tag.tsv" > "$res/$tag.log" 2>&1
  stamp "$tag rc $?"
}
for rep in 1 2; do for v in pdl cut; do one $v ${v}_rows_$rep "${big[@]}" --dtype bf16 --seq-lens random:8; done; done
for v in pdl cut; do
  one $v ${v}_rows64_1 "${big[@]}" --dtype bf16 --seq-lens random:64
  one $v ${v}_states_1 "${big[@]}" --dtype bf16 --seq-lens none
  one $v ${v}_fp32_1 "${big[@]}" --dtype fp32 --seq-lens random:8
done
for v in pdl cut; do
  (cd "$root/build/exp-$v" && CONV1D_REQUIRE_GPU=1 ctest -R 'ch10|Ch10' --output-on-failure > "$res/ctest_$v.txt" 2>&1); stamp "ctest $v rc $?: $(grep 'tests passed' "$res/ctest_$v.txt")"
done
san=(--initial-states --iters 1 --warmup 0 --layout channel-first --form rows --direction forward)
i=0
for v in pdl cut; do
  for s in "--batch 3 --dim 37 --seqlen 64 --width 3 --bias --silu --dtype bf16 --seq-lens random:9" "--batch 2 --dim 40 --seqlen 12 --width 4 --dtype fp32 --seq-lens 1,0,2,3,1" "--batch 2 --dim 16 --seqlen 48 --width 4 --dtype fp16 --seq-lens none --chunks 3" "--batch 2 --dim 64 --seqlen 256 --width 2 --dtype bf16 --seq-lens random:30"; do
    for tool in memcheck racecheck synccheck; do
      (( SECONDS - start < 570 )) || break
      i=$((i + 1))
      echo "$v $s" > "$res/san_$i.log"
      compute-sanitizer --tool $tool --error-exitcode 9 "$(exe $v)" $s "${san[@]}" >> "$res/san_$i.log" 2>&1
      stamp "sanitizer $v $tool ($s) rc $?"
    done
  done
done
for f in "$res"/*_[12].log; do grep -H 'whole forward\|main kernel\|FAIL' "$f"; done | sed "s#$res/##" | cut -c1-150
