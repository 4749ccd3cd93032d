#!/usr/bin/env bash
# Call 3 (H100): the channel-last backward's walk with flags takes the plain steps in the batches
# that no boundary touches. `cfsilu`: this tree with clplain.patch taken back out (the channel-first
# change alone, as in calls 1 and 2); `now`: this tree. The rows backward at 8 x 4096 x 4096 W 4
# (bf16: 8 documents a row and states, states alone, bias + SiLU; fp32), the varlen backward
# (bf16, bias + SiLU, fp32), both twice where it matters; Nsight Compute on the rows' two launches;
# the tests of chapters 09 and 10 and compute-sanitizer on `now`. Run from the repository root with
# OUT set; everything comes back as one run.tgz.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'sed -i "s#$root/##g" "$res"/*.log "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"
here=results/ch10-bwd-silu
copy() { local d=$(mktemp -d); tar cf - --exclude=./build --exclude=./.git . | tar xf - -C "$d"; echo "$d"; }
declare -A src=([now]=$root)
src[cfsilu]=$(copy); (cd "${src[cfsilu]}" && patch -R -p1 -s < "$root/$here/clplain.patch") || exit 1
build() {  # build NAME TARGETS...
  local v=$1; shift
  cmake -S "${src[$v]}" -B "$root/build/exp-$v" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure_$v.log" 2>&1 &&
  cmake --build "$root/build/exp-$v" -j 8 --target "$@" > "$res/build_$v.log" 2>&1
}
declare -A pid
build cfsilu ch10_packed_sequences & pid[cfsilu]=$!
build now ch10_packed_sequences conv1d_tests_ch10 conv1d_tests_ch09 & pid[now]=$!
for v in "${!pid[@]}"; do wait "${pid[$v]}" || { echo "build $v failed"; tail -n 30 "$res/build_$v.log"; exit 1; }; done
stamp "build: $(cat "$res"/build_*.log | grep -c warning) warning lines"
exe() { echo "$root/build/exp-$1/chapters/10_packed_sequences/ch10_packed_sequences"; }
cuobjdump --dump-resource-usage "$(exe now)" | grep -A1 'conv_bwd_cl' | c++filt | grep -A1 'bfloat16, 4, 4' > "$res/resources_now.txt"
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --initial-states --direction backward)
cl=(--form rows --layout channel-last); vl=(--form varlen --seq-lens random:64)
one() {  # one VARIANT TAG ARGS...
  local v=$1 tag=$2; shift 2
  (( SECONDS - start < 420 )) || { stamp "skip $tag"; return; }
  "$(exe $v)" "$@" --summary "$res/$tag.tsv" > "$res/$tag.log" 2>&1
  stamp "$tag rc $?"
}
for rep in 1 2; do
  for v in cfsilu now; do
    one $v ${v}_clrows_$rep "${big[@]}" "${cl[@]}" --dtype bf16 --seq-lens random:8
    one $v ${v}_varlen_$rep "${big[@]}" "${vl[@]}" --dtype bf16
  done
done
for v in cfsilu now; do
  one $v ${v}_clstates_1 "${big[@]}" "${cl[@]}" --dtype bf16 --seq-lens none
  one $v ${v}_clsilu_1 "${big[@]}" "${cl[@]}" --dtype bf16 --seq-lens random:8 --bias --silu
  one $v ${v}_varlensilu_1 "${big[@]}" "${vl[@]}" --dtype bf16 --bias --silu
  one $v ${v}_clfp32_1 "${big[@]}" "${cl[@]}" --dtype fp32 --seq-lens random:8
  one $v ${v}_varlenfp32_1 "${big[@]}" "${vl[@]}" --dtype fp32
done
nc=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 1 --warmup 0 --initial-states --direction backward --dtype bf16 "${cl[@]}" --seq-lens random:8)
for v in cfsilu now; do
  ncu --csv --page raw --clock-control none --kernel-name regex:'conv_bwd_cl' \
    --metrics gpu__time_duration.sum,smsp__inst_executed.sum,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio \
    --log-file "$res/ncu_$v.csv" "$(exe $v)" "${nc[@]}" > "$res/ncu_$v.log" 2>&1
  sed -i '/^==PROF==/d' "$res/ncu_$v.csv"
done
stamp ncu
(cd "$root/build/exp-now" && CONV1D_REQUIRE_GPU=1 ctest -R 'ch09|Ch09|ch10|Ch10' -j 4 --output-on-failure > "$res/ctest_now.txt" 2>&1); stamp "ctest rc $?"
tail -n 3 "$res/ctest_now.txt"
san=(--initial-states --iters 1 --warmup 0 --direction backward)
for s in "--batch 2 --dim 64 --seqlen 200 --width 4 --silu --dtype bf16 --form rows --layout channel-last --seq-lens random:9" \
         "--batch 3 --dim 24 --seqlen 333 --width 3 --dtype fp32 --form rows --layout channel-last --seq-lens 1,0,2,40,7" \
         "--batch 1 --dim 40 --seqlen 90 --width 4 --silu --dtype bf16 --form varlen --seq-lens 1,0,2,3,0,84" \
         "--batch 1 --dim 16 --seqlen 700 --width 2 --dtype fp16 --form varlen --seq-lens random:12"; do
  for tool in memcheck racecheck initcheck; do
    (( SECONDS - start < 585 )) || break
    # shellcheck disable=SC2086
    compute-sanitizer --tool $tool --error-exitcode 9 "$(exe now)" $s "${san[@]}" > "$res/one.log" 2>&1
    echo "$tool rc $? [$s] $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$res/one.log" | tail -1)" | tee -a "$res/sanitizers.txt"
  done
done
for f in "$res"/*_[12].log; do grep -H 'whole backward\|FAIL\|mismatch' "$f"; done | sed "s#$res/##" | cut -c1-150
