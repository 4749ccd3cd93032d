#!/usr/bin/env bash
# Call 1 (H100): the channel-first rows forward's heads in the convolution's first blocks. `base`:
# the committed code (this tree with heads.patch taken back out: cf_row_heads a launch of its
# own); `heads`: this tree; `pdl`: heads + the convolution launched early behind make_span_map (the
# two timed as one record); `nomask`: heads with every mixed vector taken as full (wrong answers,
# timed anyway: what the masked vectors cost); `v1`: heads at one vector a thread. The rows forward
# at 8 x 4096 x 4096 W 4 (8 documents a row and states; states alone), bf16, fp32, a small shape;
# then the chapter-10 tests and compute-sanitizer on `heads`. Run from the repository root with
# OUT set; everything comes back as one run.tgz.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'sed -i "s#$root/##g" "$res"/*.log "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"
here=results/ch10-cf-heads
copy() { local d=$(mktemp -d); tar cf - --exclude=./build --exclude=./.git . | tar xf - -C "$d"; echo "$d"; }
declare -A src=([heads]=$root)
src[base]=$(copy); (cd "${src[base]}" && patch -R -p1 -s < "$root/$here/heads.patch") || exit 1
for v in pdl nomask v1; do
  src[$v]=$(copy); (cd "${src[$v]}" && patch -p0 -s < "$root/$here/$v.patch") || exit 1
done
build() {  # build NAME TARGETS...
  local v=$1; shift
  cmake -S "${src[$v]}" -B "$root/build/exp-$v" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure_$v.log" 2>&1 &&
  cmake --build "$root/build/exp-$v" -j 4 --target "$@" > "$res/build_$v.log" 2>&1
}
declare -A pid
for v in base pdl nomask v1; do build $v ch10_packed_sequences & pid[$v]=$!; done
build heads ch10_packed_sequences conv1d_tests_ch10 & pid[heads]=$!
for v in "${!pid[@]}"; do wait "${pid[$v]}" || { echo "build $v failed"; tail -n 30 "$res/build_$v.log"; exit 1; }; done
stamp "build: $(cat "$res"/build_*.log | grep -c warning) warning lines"
exe() { echo "$root/build/exp-$1/chapters/10_packed_sequences/ch10_packed_sequences"; }
cuobjdump --dump-resource-usage "$(exe heads)" | grep -A1 'conv_fwd_cf_chunked' | c++filt | grep -A1 bfloat16 > "$res/resources_heads.txt"
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --initial-states --form rows --layout channel-first --direction forward)
one() {  # one VARIANT TAG ARGS...
  local v=$1 tag=$2; shift 2
  (( SECONDS - start < 470 )) || { stamp "skip $tag"; return; }
  "$(exe $v)" "$@" --summary "$res/$tag.tsv" > "$res/$tag.log" 2>&1
  stamp "$tag rc $?"
}
for rep in 1 2; do
  for v in base heads pdl; do one $v ${v}_rows_$rep "${big[@]}" --dtype bf16 --seq-lens random:8; done
  for v in base heads; do one $v ${v}_states_$rep "${big[@]}" --dtype bf16 --seq-lens none; done
done
for v in nomask v1; do one $v ${v}_rows_1 "${big[@]}" --dtype bf16 --seq-lens random:8; done
one v1 v1_states_1 "${big[@]}" --dtype bf16 --seq-lens none
for v in base heads; do
  one $v ${v}_fp32_1 "${big[@]}" --dtype fp32 --seq-lens random:8
  one $v ${v}_small_1 --batch 2 --dim 1024 --seqlen 2048 --width 4 --iters 20 --warmup 3 --initial-states --form rows --layout channel-first --direction forward --dtype bf16 --seq-lens random:8
done
(cd "$root/build/exp-heads" && CONV1D_REQUIRE_GPU=1 ctest -R 'ch10|Ch10' --output-on-failure > "$res/ctest_heads.txt" 2>&1); stamp "ctest rc $?"
tail -n 3 "$res/ctest_heads.txt"
san=(--initial-states --iters 1 --warmup 0 --layout channel-first --form rows --direction forward)
i=0
for s in "--batch 3 --dim 37 --seqlen 64 --width 3 --bias --silu --dtype bf16 --seq-lens random:9" "--batch 2 --dim 40 --seqlen 12 --width 4 --dtype fp32 --seq-lens 1,0,2,3,1" "--batch 2 --dim 16 --seqlen 48 --width 4 --dtype fp16 --seq-lens none --chunks 3" "--batch 1 --dim 64 --seqlen 8 --width 2 --dtype bf16 --seq-lens random:3"; do
  for tool in memcheck racecheck initcheck; do
    (( SECONDS - start < 580 )) || break
    i=$((i + 1))
    echo "$s" > "$res/san_$i.log"
    compute-sanitizer --tool $tool --error-exitcode 9 "$(exe heads)" $s "${san[@]}" >> "$res/san_$i.log" 2>&1
    stamp "sanitizer $tool ($s) rc $?"
  done
done
for f in "$res"/*_[12].log; do grep -H 'whole forward\|main kernel\|FAIL\|verified\|mismatch' "$f" | grep -v '^\s*$'; done | sed "s#$res/##" | cut -c1-170
