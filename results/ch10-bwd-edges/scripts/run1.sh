#!/usr/bin/env bash
# Call 1 (H100): the channel-first backward's row edges loaded with the chunk. `base`: this tree
# (the thirteenth version); `edgepre`: edgepre.patch (with a span map, the initial states before a
# row's first vector and the final states' gradient after its last are loaded in step 1, with the
# chunk's x and dout, instead of in the middle of the step that uses them); `noedge`: edgepre +
# noedge.patch (no state loads and no dinitial_states at all: wrong answers, timed anyway: what the
# edges cost). The rows backward at 8 x 4096 x 4096 W 4 (bf16: 8 documents a row and states,
# states alone; fp32; fp16 states alone), then the chapter-10 tests and compute-sanitizer on
# `edgepre`. Run from the repository root with OUT set; everything comes back as one run.tgz.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'sed -i "s#$root/##g" "$res"/*.log "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"
here=results/ch10-bwd-edges
copy() { local d=$(mktemp -d); tar cf - --exclude=./build --exclude=./.git . | tar xf - -C "$d"; echo "$d"; }
declare -A src=([base]=$root)
src[edgepre]=$(copy); (cd "${src[edgepre]}" && patch -p0 -s < "$root/$here/edgepre.patch") || exit 1
src[noedge]=$(copy); (cd "${src[noedge]}" && patch -p0 -s < "$root/$here/edgepre.patch" &&
                      patch -p0 -s < "$root/$here/noedge.patch") || exit 1
build() {  # build NAME TARGETS...
  local v=$1; shift
  cmake -S "${src[$v]}" -B "$root/build/exp-$v" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure_$v.log" 2>&1 &&
  cmake --build "$root/build/exp-$v" -j 5 --target "$@" > "$res/build_$v.log" 2>&1
}
declare -A pid
build base ch10_packed_sequences & pid[base]=$!
build noedge ch10_packed_sequences & pid[noedge]=$!
build edgepre ch10_packed_sequences conv1d_tests_ch10 & pid[edgepre]=$!
for v in "${!pid[@]}"; do wait "${pid[$v]}" || { echo "build $v failed"; tail -n 30 "$res/build_$v.log"; exit 1; }; done
stamp "build: $(cat "$res"/build_*.log | grep -c warning) warning lines"
rm -f "$res"/configure_*.log
exe() { echo "$root/build/exp-$1/chapters/10_packed_sequences/ch10_packed_sequences"; }
for v in base edgepre; do
  cuobjdump --dump-resource-usage "$(exe $v)" | grep -A1 'conv_bwd_cf' | c++filt | grep -A1 'RowSpansBwd' > "$res/resources_$v.txt"
done
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --initial-states --direction backward --form rows --layout channel-first)
one() {  # one VARIANT TAG ARGS...
  local v=$1 tag=$2; shift 2
  (( SECONDS - start < 450 )) || { stamp "skip $tag"; return; }
  "$(exe $v)" "$@" --summary "$res/$tag.tsv" > "$res/$tag.log" 2>&1
  stamp "$tag rc $?"
}
for rep in 1 2; do
  for v in base edgepre; do
    one $v ${v}_rows_$rep "${big[@]}" --dtype bf16 --seq-lens random:8
    one $v ${v}_states_$rep "${big[@]}" --dtype bf16 --seq-lens none
  done
done
one noedge noedge_rows_1 "${big[@]}" --dtype bf16 --seq-lens random:8
one noedge noedge_states_1 "${big[@]}" --dtype bf16 --seq-lens none
for v in base edgepre; do
  one $v ${v}_fp32_1 "${big[@]}" --dtype fp32 --seq-lens random:8
  one $v ${v}_fp16states_1 "${big[@]}" --dtype fp16 --seq-lens none
done
(cd "$root/build/exp-edgepre" && CONV1D_REQUIRE_GPU=1 ctest -R 'ch10|Ch10' -j 4 --output-on-failure > "$res/ctest_edgepre.txt" 2>&1); stamp "ctest rc $?"
tail -n 3 "$res/ctest_edgepre.txt"
san=(--initial-states --iters 1 --warmup 0 --direction backward --form rows --layout channel-first)
for s in "--batch 3 --dim 40 --seqlen 96 --width 4 --bias --silu --dtype bf16 --seq-lens random:5" \
         "--batch 2 --dim 16 --seqlen 512 --width 4 --dtype bf16 --seq-lens random:1" \
         "--batch 2 --dim 24 --seqlen 64 --width 2 --dtype fp32 --seq-lens 1,0,2,9,5" \
         "--batch 2 --dim 16 --seqlen 1024 --width 3 --silu --dtype fp16 --seq-lens random:8"; do
  for tool in memcheck initcheck; do
    (( SECONDS - start < 585 )) || break
    # shellcheck disable=SC2086
    compute-sanitizer --tool $tool --error-exitcode 9 "$(exe edgepre)" $s "${san[@]}" > "$res/one.log" 2>&1
    echo "$tool rc $? [$s] $(grep -E 'ERROR SUMMARY' "$res/one.log" | tail -1)" | tee -a "$res/sanitizers.txt"
  done
done
for f in "$res"/*_[12].log; do grep -H 'whole backward\|FAIL\|mismatch' "$f"; done | sed "s#$res/##" | cut -c1-150
