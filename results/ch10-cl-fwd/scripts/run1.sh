#!/usr/bin/env bash
# Call 1 (H100): the channel-last forward of packed sequences in two launches (chapter 08's
# cl_tiled, ClPass::full then ClPass::mixed). Three builds: the two launches (`split`), and two that
# prefetch the first batch of a tile's rows before its span is decided, into L1
# (-DCONV1D_EXP_PREFETCH=1) or L2 (=2): an experiment on the varlen span's binary search, not
# kept. For each: the forward, channel-last, 8 x 4096 x 4096 bf16 W 4, rows with 8 documents
# and states, the states alone, no states, and the varlen batch (64 sequences); then, on `split`,
# the launches' own durations under Nsight Compute and the tests of chapters 08 and 10. Run from
# the repository root with OUT set; everything comes back as one run.tgz.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'sed -i "s#$root/##g" "$res"/*.log "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"
build() {  # build NAME JOBS FLAGS TARGETS...
  local name=$1 jobs=$2 flags=$3; shift 3
  cmake -S . -B "$root/build/exp-$name" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native "-DCMAKE_CUDA_FLAGS=$flags" > "$res/configure_$name.log" 2>&1 &&
  cmake --build "$root/build/exp-$name" -j "$jobs" --target "$@" > "$res/build_$name.log" 2>&1
}
build split 8 "" ch10_packed_sequences conv1d_tests_ch10 conv1d_tests_ch08 & p1=$!
build pf_l1 4 "-DCONV1D_EXP_PREFETCH=1" ch10_packed_sequences & p2=$!
build pf_l2 4 "-DCONV1D_EXP_PREFETCH=2" ch10_packed_sequences & p3=$!
wait $p1 || { tail -n 40 "$res"/build_split.log; exit 1; }
stamp "build split"
wait $p2 || { tail -n 40 "$res"/build_pf_l1.log; }
wait $p3 || { tail -n 40 "$res"/build_pf_l2.log; }
stamp "builds"
common=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --layout channel-last --direction forward --dtype bf16)
for v in split pf_l1 pf_l2; do
  E=$root/build/exp-$v/chapters/10_packed_sequences/ch10_packed_sequences
  [[ -x $E ]] || continue
  "$E" "${common[@]}" --form rows --seq-lens random:8 --initial-states --summary "$res/${v}_rows.tsv" > "$res/${v}_rows.log" 2>&1; stamp "$v rows rc $?"
  "$E" "${common[@]}" --form rows --seq-lens none --initial-states --summary "$res/${v}_states.tsv" > "$res/${v}_states.log" 2>&1; stamp "$v states rc $?"
  "$E" "${common[@]}" --form rows --seq-lens none --summary "$res/${v}_nostates.tsv" > "$res/${v}_nostates.log" 2>&1; stamp "$v nostates rc $?"
  "$E" "${common[@]}" --form varlen --seq-lens random:64 --initial-states --summary "$res/${v}_varlen.tsv" > "$res/${v}_varlen.log" 2>&1; stamp "$v varlen rc $?"
done
grep -h 'against\|ceiling' "$res"/split_*.log | head -20
E=$root/build/exp-split/chapters/10_packed_sequences/ch10_packed_sequences
cuobjdump --dump-resource-usage "$E" | grep -A1 'conv_fwd_cl_tiled' | c++filt > "$res/resources.txt"
for f in rows varlen; do
  sl=random:8; [[ $f == varlen ]] && sl=random:64
  ncu --csv --page raw --clock-control none --kernel-name regex:'conv_fwd_cl' \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,smsp__average_warp_latency_per_inst_issued.ratio,sm__warps_active.avg.pct_of_peak_sustained_active \
    --log-file "$res/ncu_$f.csv" "$E" "${common[@]}" --form "$f" --seq-lens $sl --initial-states --iters 1 --warmup 0 > "$res/ncu_$f.log" 2>&1
  sed -i '/^==PROF==/d' "$res/ncu_$f.csv"; stamp "ncu $f"
done
CONV1D_REQUIRE_GPU=1 ctest --test-dir "$root/build/exp-split" -R 'Ch10|ch10|Ch08|ch08' -j 4 --output-on-failure > "$res/ctest.txt" 2>&1
stamp "ctest rc $?: $(grep -E 'tests passed' "$res/ctest.txt")"
