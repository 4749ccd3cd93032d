#!/usr/bin/env bash
# Call 1 (H100): SiLU compiled in or out of the packed backward kernels. `base`: the committed code
# (this tree with cfsilu.patch taken back out); `cfsilu`: this tree (the channel-first packed
# kernel compiled once with SiLU and once without); `clunroll`: cfsilu + the channel-last mixed
# launch's walk with flags unrolled like the full walk; `clboth`: clunroll + SiLU compiled in or out
# of the channel-last packed kernels too. The rows backward at 8 x 4096 x 4096 W 4 bf16 (8
# documents a row and states; states alone; bias + SiLU), both layouts; the varlen backward; fp32
# rows; then the chapter-10 tests and compute-sanitizer on `clboth`. Run from the repository root
# with OUT set; everything comes back as one run.tgz.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'sed -i "s#$root/##g" "$res"/*.log "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"
here=results/ch10-bwd-silu
copy() { local d=$(mktemp -d); tar cf - --exclude=./build --exclude=./.git . | tar xf - -C "$d"; echo "$d"; }
declare -A src=([cfsilu]=$root)
src[base]=$(copy); (cd "${src[base]}" && patch -R -p1 -s < "$root/$here/cfsilu.patch") || exit 1
src[clunroll]=$(copy); (cd "${src[clunroll]}" && patch -p0 -s < "$root/$here/clunroll.patch") || exit 1
src[clboth]=$(copy); (cd "${src[clboth]}" && patch -p0 -s < "$root/$here/clunroll.patch" &&
                     patch -p0 -s < "$root/$here/clsilu.patch") || exit 1
build() {  # build NAME TARGETS...
  local v=$1; shift
  cmake -S "${src[$v]}" -B "$root/build/exp-$v" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure_$v.log" 2>&1 &&
  cmake --build "$root/build/exp-$v" -j 4 --target "$@" > "$res/build_$v.log" 2>&1
}
declare -A pid
for v in base cfsilu clunroll; do build $v ch10_packed_sequences & pid[$v]=$!; done
build clboth ch10_packed_sequences conv1d_tests_ch10 & pid[clboth]=$!
for v in "${!pid[@]}"; do wait "${pid[$v]}" || { echo "build $v failed"; tail -n 30 "$res/build_$v.log"; exit 1; }; done
stamp "build: $(cat "$res"/build_*.log | grep -c warning) warning lines"
exe() { echo "$root/build/exp-$1/chapters/10_packed_sequences/ch10_packed_sequences"; }
for v in base cfsilu clboth; do
  cuobjdump --dump-resource-usage "$(exe $v)" | grep -A1 'conv_bwd_c[fl]' | c++filt | grep -A1 'bfloat16, 4, 4' > "$res/resources_$v.txt"
done
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --initial-states --direction backward)
cf=(--form rows --layout channel-first); cl=(--form rows --layout channel-last)
one() {  # one VARIANT TAG ARGS...
  local v=$1 tag=$2; shift 2
  (( SECONDS - start < 440 )) || { stamp "skip $tag"; return; }
  "$(exe $v)" "$@" --summary "$res/$tag.tsv" > "$res/$tag.log" 2>&1
  stamp "$tag rc $?"
}
for rep in 1 2; do
  for v in base cfsilu; do
    one $v ${v}_cfrows_$rep "${big[@]}" "${cf[@]}" --dtype bf16 --seq-lens random:8
    one $v ${v}_cfstates_$rep "${big[@]}" "${cf[@]}" --dtype bf16 --seq-lens none
  done
  for v in cfsilu clunroll clboth; do
    one $v ${v}_clrows_$rep "${big[@]}" "${cl[@]}" --dtype bf16 --seq-lens random:8
  done
done
for v in base cfsilu; do one $v ${v}_cfsilu_1 "${big[@]}" "${cf[@]}" --dtype bf16 --seq-lens random:8 --bias --silu; done
for v in cfsilu clunroll clboth; do
  one $v ${v}_clstates_1 "${big[@]}" "${cl[@]}" --dtype bf16 --seq-lens none
  one $v ${v}_clsilu_1 "${big[@]}" "${cl[@]}" --dtype bf16 --seq-lens random:8 --bias --silu
done
for v in cfsilu clboth; do one $v ${v}_varlen_1 "${big[@]}" --form varlen --dtype bf16 --seq-lens random:64; done
one cfsilu cfsilu_cffp32_1 "${big[@]}" "${cf[@]}" --dtype fp32 --seq-lens random:8
(cd "$root/build/exp-clboth" && CONV1D_REQUIRE_GPU=1 ctest -R 'ch10|Ch10' -j 4 --output-on-failure > "$res/ctest_clboth.txt" 2>&1); stamp "ctest rc $?"
tail -n 3 "$res/ctest_clboth.txt"
san=(--initial-states --iters 1 --warmup 0 --direction backward)
for s in "--batch 3 --dim 40 --seqlen 96 --width 4 --bias --silu --dtype bf16 --form rows --layout channel-first --seq-lens random:5" \
         "--batch 2 --dim 16 --seqlen 1024 --width 3 --dtype fp16 --form rows --layout channel-first --seq-lens random:8" \
         "--batch 2 --dim 64 --seqlen 200 --width 4 --silu --dtype bf16 --form rows --layout channel-last --seq-lens random:9" \
         "--batch 1 --dim 40 --seqlen 90 --width 4 --silu --dtype bf16 --form varlen --seq-lens 1,0,2,3,0,84"; do
  for tool in memcheck racecheck; do
    (( SECONDS - start < 580 )) || break
    # shellcheck disable=SC2086
    compute-sanitizer --tool $tool --error-exitcode 9 "$(exe clboth)" $s "${san[@]}" > "$res/one.log" 2>&1
    echo "$tool rc $? [$s] $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$res/one.log" | tail -1)" | tee -a "$res/sanitizers.txt"
  done
done
for f in "$res"/*_[12].log; do grep -H 'whole backward\|FAIL\|mismatch' "$f"; done | sed "s#$res/##" | cut -c1-170
