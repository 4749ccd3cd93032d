#!/usr/bin/env bash
# Call 2 (H100): SiLU compiled in or out of the channel-last packed backward too, without call 1's
# unrolled walk. `cfsilu`: this tree with clsilu.patch taken back out (call 1's cfsilu); `now`:
# this tree; `cffull`: now with every channel-first step taken as full (cffull.patch: wrong
# answers at the boundaries, timed anyway: what the masked steps cost). The rows backward at
# 8 x 4096 x 4096 W 4 bf16 (8 documents a row and states; states alone; bias + SiLU; fp32), the
# varlen backward (bf16, bias + SiLU), and Nsight Compute on `now`: each launch's duration,
# instructions and stalls, both layouts, 8 documents a row. Run from the repository root with OUT
# set; everything comes back as one run.tgz.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'sed -i "s#$root/##g" "$res"/*.log "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"
here=results/ch10-bwd-silu
copy() { local d=$(mktemp -d); tar cf - --exclude=./build --exclude=./.git . | tar xf - -C "$d"; echo "$d"; }
declare -A src=([now]=$root)
src[cfsilu]=$(copy); (cd "${src[cfsilu]}" && patch -R -p1 -s < "$root/$here/clsilu.patch") || exit 1
src[cffull]=$(copy); (cd "${src[cffull]}" && patch -p0 -s < "$root/$here/cffull.patch") || exit 1
build() {  # build NAME TARGETS...
  local v=$1; shift
  cmake -S "${src[$v]}" -B "$root/build/exp-$v" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure_$v.log" 2>&1 &&
  cmake --build "$root/build/exp-$v" -j 5 --target "$@" > "$res/build_$v.log" 2>&1
}
declare -A pid
for v in now cfsilu cffull; do build $v ch10_packed_sequences & pid[$v]=$!; done
for v in "${!pid[@]}"; do wait "${pid[$v]}" || { echo "build $v failed"; tail -n 30 "$res/build_$v.log"; exit 1; }; done
stamp "build: $(cat "$res"/build_*.log | grep -c warning) warning lines"
exe() { echo "$root/build/exp-$1/chapters/10_packed_sequences/ch10_packed_sequences"; }
cuobjdump --dump-resource-usage "$(exe now)" | grep -A1 'conv_bwd_c[fl]' | c++filt | grep -A1 'bfloat16, 4, 4' > "$res/resources_now.txt"
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --initial-states --direction backward)
cf=(--form rows --layout channel-first); cl=(--form rows --layout channel-last)
one() {  # one VARIANT TAG ARGS...
  local v=$1 tag=$2; shift 2
  (( SECONDS - start < 480 )) || { stamp "skip $tag"; return; }
  "$(exe $v)" "$@" --summary "$res/$tag.tsv" > "$res/$tag.log" 2>&1
  stamp "$tag rc $?"
}
for rep in 1 2; do
  for v in cfsilu now; do
    one $v ${v}_clrows_$rep "${big[@]}" "${cl[@]}" --dtype bf16 --seq-lens random:8
    one $v ${v}_varlen_$rep "${big[@]}" --form varlen --dtype bf16 --seq-lens random:64
  done
done
for v in cfsilu now; do
  one $v ${v}_clstates_1 "${big[@]}" "${cl[@]}" --dtype bf16 --seq-lens none
  one $v ${v}_clsilu_1 "${big[@]}" "${cl[@]}" --dtype bf16 --seq-lens random:8 --bias --silu
  one $v ${v}_varlensilu_1 "${big[@]}" --form varlen --dtype bf16 --seq-lens random:64 --bias --silu
  one $v ${v}_clfp32_1 "${big[@]}" "${cl[@]}" --dtype fp32 --seq-lens random:8
done
for v in now cffull; do
  one $v ${v}_cfrows_1 "${big[@]}" "${cf[@]}" --dtype bf16 --seq-lens random:8
  one $v ${v}_cfstates_1 "${big[@]}" "${cf[@]}" --dtype bf16 --seq-lens none
done
nc=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 1 --warmup 0 --initial-states --direction backward --dtype bf16 --form rows --seq-lens random:8)
for lay in channel-first channel-last; do
  ncu --csv --page raw --clock-control none --kernel-name regex:'conv_bwd_c[fl]' \
    --metrics gpu__time_duration.sum,smsp__inst_executed.sum,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio,launch__registers_per_thread \
    --log-file "$res/ncu_$lay.csv" "$(exe now)" "${nc[@]}" --layout $lay > "$res/ncu_$lay.log" 2>&1
  sed -i '/^==PROF==/d' "$res/ncu_$lay.csv"
  stamp "ncu $lay"
done
for f in "$res"/*_[12].log; do grep -H 'whole backward\|FAIL\|mismatch' "$f"; done | sed "s#$res/##" | cut -c1-150
