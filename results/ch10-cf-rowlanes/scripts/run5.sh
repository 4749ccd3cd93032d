#!/usr/bin/env bash
# Call 5 (H100): the packed channel-first backward's loop over a lane's four vectors rolled as in
# call 4, but the vectors kept in registers and moved down a place after each step (`rotate`: this
# tree + rotate.patch, applied with patch -p0; chapter 09's own kernel keeps the loop unrolled).
# `now`: this tree (the fourteenth version). The rows backward at 8 x 4096 x 4096 W 4 (8 documents
# a row and states; states alone; bias + SiLU; the states alone with SiLU; fp16), twice each;
# Nsight Compute of the bf16 rows and states alone on both; chapter 10's rows backward tests on
# `rotate`. Run from the repository root with OUT set; everything comes back as one run.tgz.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'sed -i "s#$root/##g" "$res"/*.log "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"
here=results/ch10-cf-rowlanes
copy() { local d=$(mktemp -d); tar cf - --exclude=./build --exclude=./.git . | tar xf - -C "$d"; echo "$d"; }
declare -A src=([now]=$root)
src[rotate]=$(copy); (cd "${src[rotate]}" && patch -p0 -s < "$root/$here/rotate.patch") || exit 1
build() {  # build NAME TARGETS...
  local v=$1; shift
  cmake -S "${src[$v]}" -B "$root/build/exp-$v" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure_$v.log" 2>&1 &&
  cmake --build "$root/build/exp-$v" -j 8 --target "$@" > "$res/build_$v.log" 2>&1
}
declare -A pid
build now ch10_packed_sequences & pid[now]=$!
build rotate ch10_packed_sequences conv1d_tests_ch10 & pid[rotate]=$!
for v in "${!pid[@]}"; do wait "${pid[$v]}" || { echo "build $v failed"; tail -n 30 "$res/build_$v.log"; exit 1; }; done
stamp "build: $(cat "$res"/build_*.log | grep -c warning) warning lines"
exe() { echo "$root/build/exp-$1/chapters/10_packed_sequences/ch10_packed_sequences"; }
for v in now rotate; do
  cuobjdump --dump-resource-usage "$(exe $v)" | grep -A1 'conv_bwd_cf' | c++filt | grep -A1 'bfloat16, 4, 4' > "$res/resources_$v.txt"
done
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --initial-states --direction backward)
cf=(--form rows --layout channel-first)
one() {  # one VARIANT TAG ARGS...
  local v=$1 tag=$2; shift 2
  (( SECONDS - start < 480 )) || { stamp "skip $tag"; return; }
  "$(exe $v)" "$@" --summary "$res/$tag.tsv" > "$res/$tag.log" 2>&1
  stamp "$tag rc $?"
}
for rep in 1 2; do
  for v in now rotate; do
    one $v ${v}_cfrows_$rep "${big[@]}" "${cf[@]}" --dtype bf16 --seq-lens random:8
    one $v ${v}_cfstates_$rep "${big[@]}" "${cf[@]}" --dtype bf16 --seq-lens none
    one $v ${v}_cfsilu_$rep "${big[@]}" "${cf[@]}" --dtype bf16 --seq-lens random:8 --bias --silu
    one $v ${v}_cfstsilu_$rep "${big[@]}" "${cf[@]}" --dtype bf16 --seq-lens none --bias --silu
    one $v ${v}_cffp16_$rep "${big[@]}" "${cf[@]}" --dtype fp16 --seq-lens random:8
  done
done
"$root/build/exp-rotate/tests/conv1d_tests_ch10" --gtest_filter='Ch10RowsBackward.*:Ch10ChunksBackward.*' > "$res/tests_rotate.txt" 2>&1
stamp "tests rc $?: $(grep -E '^\[  (PASSED|FAILED)' "$res/tests_rotate.txt" | tr '\n' ' ')"
nc=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 1 --warmup 0 --initial-states --direction backward --dtype bf16 "${cf[@]}")
for v in now rotate; do
  for lens in random:8 none; do
    tag=${v}_${lens%%:*}
    ncu --csv --page raw --clock-control none --kernel-name regex:'conv_bwd_cf' \
      --metrics gpu__time_duration.sum,smsp__inst_executed.sum,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,launch__registers_per_thread \
      --log-file "$res/ncu_$tag.csv" "$(exe $v)" "${nc[@]}" --seq-lens $lens > "$res/ncu_$tag.log" 2>&1
    sed -i '/^==PROF==/d' "$res/ncu_$tag.csv"
    stamp "ncu $tag"
  done
done
for f in "$res"/*_[12].log; do grep -H 'whole backward\|FAIL\|mismatch' "$f"; done | sed "s#$res/##" | cut -c1-150
