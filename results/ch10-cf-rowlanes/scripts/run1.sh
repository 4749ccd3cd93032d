#!/usr/bin/env bash
# Call 1 (H100): the channel-first packed backward with fewer lanes a row. `base`: the thirteenth
# version (the tree of this call with run1.patch taken back out); `lanes8`: this tree (a row takes 8 lanes
# of a warp in 16-bit storage, 4 rows of one batch row a warp); `lanes16`, `lanes4`: the same with
# 16 and 4. The rows backward at 8 x 4096 x 4096 W 4 bf16 (8 documents a row and states; states
# alone; bias + SiLU); fp16 rows; then the tests of chapters 09 and 10 and compute-sanitizer on
# `lanes8` (shapes whose rows do not fill a warp's last rows). Run from the repository root with
# OUT set; everything comes back as one run.tgz.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'sed -i "s#$root/##g" "$res"/*.log "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"
here=results/ch10-cf-rowlanes
copy() { local d=$(mktemp -d); tar cf - --exclude=./build --exclude=./.git . | tar xf - -C "$d"; echo "$d"; }
declare -A src=([lanes8]=$root)
src[base]=$(copy); (cd "${src[base]}" && patch -R -p1 -s < "$root/$here/run1.patch") || exit 1
for n in 16 4; do
  src[lanes$n]=$(copy)
  sed -i "s/kPackedCfRowLanes = sizeof(T) == 2 ? 8 :/kPackedCfRowLanes = sizeof(T) == 2 ? $n :/" \
    "${src[lanes$n]}/chapters/09_direct_backward/cf_fused.cuh"
  grep -q "? $n : kWarpLanes" "${src[lanes$n]}/chapters/09_direct_backward/cf_fused.cuh" || exit 1
done
build() {  # build NAME TARGETS...
  local v=$1; shift
  cmake -S "${src[$v]}" -B "$root/build/exp-$v" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure_$v.log" 2>&1 &&
  cmake --build "$root/build/exp-$v" -j 4 --target "$@" > "$res/build_$v.log" 2>&1
}
declare -A pid
for v in base lanes16 lanes4; do build $v ch10_packed_sequences & pid[$v]=$!; done
build lanes8 ch10_packed_sequences ch09_direct_backward conv1d_tests_ch09 conv1d_tests_ch10 & pid[lanes8]=$!
for v in "${!pid[@]}"; do wait "${pid[$v]}" || { echo "build $v failed"; tail -n 30 "$res/build_$v.log"; exit 1; }; done
stamp "build: $(cat "$res"/build_*.log | grep -c warning) warning lines"
exe() { echo "$root/build/exp-$1/chapters/10_packed_sequences/ch10_packed_sequences"; }
for v in base lanes8 lanes16 lanes4; do
  cuobjdump --dump-resource-usage "$(exe $v)" | grep -A1 'conv_bwd_cf' | c++filt | grep -A1 'bfloat16, 4, 4' > "$res/resources_$v.txt"
done
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --initial-states --direction backward)
cf=(--form rows --layout channel-first)
one() {  # one VARIANT TAG ARGS...
  local v=$1 tag=$2; shift 2
  (( SECONDS - start < 400 )) || { stamp "skip $tag"; return; }
  "$(exe $v)" "$@" --summary "$res/$tag.tsv" > "$res/$tag.log" 2>&1
  stamp "$tag rc $?"
}
for rep in 1 2; do
  for v in base lanes8 lanes16 lanes4; do
    one $v ${v}_cfrows_$rep "${big[@]}" "${cf[@]}" --dtype bf16 --seq-lens random:8
    one $v ${v}_cfstates_$rep "${big[@]}" "${cf[@]}" --dtype bf16 --seq-lens none
  done
done
for v in base lanes8; do
  one $v ${v}_cfsilu_1 "${big[@]}" "${cf[@]}" --dtype bf16 --seq-lens random:8 --bias --silu
  one $v ${v}_cffp16_1 "${big[@]}" "${cf[@]}" --dtype fp16 --seq-lens random:8
done
(cd "$root/build/exp-lanes8" && CONV1D_REQUIRE_GPU=1 ctest -R 'ch09|Ch09|ch10|Ch10' -j 4 --output-on-failure > "$res/ctest_lanes8.txt" 2>&1); stamp "ctest rc $?"
tail -n 3 "$res/ctest_lanes8.txt"
san=(--initial-states --iters 1 --warmup 0 --direction backward --form rows --layout channel-first)
for s in "--batch 3 --dim 5 --seqlen 96 --width 4 --bias --silu --dtype bf16 --seq-lens random:5" \
         "--batch 1 --dim 7 --seqlen 1024 --width 3 --dtype fp16 --seq-lens random:8" \
         "--batch 2 --dim 9 --seqlen 203 --width 4 --silu --dtype bf16 --seq-lens random:9" \
         "--batch 5 --dim 3 --seqlen 64 --width 2 --dtype bf16 --seq-lens none"; do
  for tool in memcheck racecheck initcheck; do
    (( SECONDS - start < 570 )) || break
    # shellcheck disable=SC2086
    compute-sanitizer --tool $tool --error-exitcode 9 "$(exe lanes8)" $s "${san[@]}" > "$res/one.log" 2>&1
    echo "$tool rc $? [$s] $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|FAIL' "$res/one.log" | tail -1)" | tee -a "$res/sanitizers.txt"
  done
done
for f in "$res"/*_[12].log; do grep -H 'whole backward\|FAIL\|mismatch' "$f"; done | sed "s#$res/##" | cut -c1-170
