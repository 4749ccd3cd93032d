#!/usr/bin/env bash
# Call 3 (H100): as call 2 (run2.sh), with the lanes' forms in the map (make_span_map's lane_code,
# read with the chunk's loads) and fp32 held to 64 registers. Tests of chapters 09 and 10; the rows
# backward at 8 x 4096 x 4096 bf16, W 4 (8 documents a row, states and their gradients; the states
# alone), --span-map off and on, interleaved, twice; --bias --silu and fp32 with the map; Nsight
# Compute's instruction counts, stalls and durations for the map's kernel and chapter 09's;
# compute-sanitizer's four tools on shapes of each form. Run from the repository root with OUT set;
# everything comes back as one run.tgz.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
b=$root/${BUILD_DIR:-build/gpu-check}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'sed -i "s#$root/##g" "$res"/*.log "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"
cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure.log" 2>&1
cmake --build "$b" -j "$(nproc)" --target ch10_packed_sequences conv1d_tests_ch10 ch09_direct_backward conv1d_tests_ch09 > "$res/build.log" 2>&1 || { tail -n 60 "$res/build.log"; exit 1; }
stamp "build: $(grep -c warning "$res/build.log") warning lines" | tee "$res/build_summary.txt"
E=$b/chapters/10_packed_sequences/ch10_packed_sequences
cuobjdump --dump-resource-usage "$E" | grep -A1 'conv_bwd_cf\|make_span_map' | c++filt > "$res/resources.txt"
CONV1D_REQUIRE_GPU=1 ctest --test-dir "$b" -R 'Ch10|ch10|Ch09|ch09' -j 4 --output-on-failure > "$res/ctest.txt" 2>&1
stamp "ctest rc $?: $(grep -E 'tests passed' "$res/ctest.txt")"
bench() {  # bench TAG ARGS...
  local tag=$1; shift
  "$E" "$@" --summary "$res/bench_$tag.tsv" > "$res/one.log" 2>&1 || { echo "FAIL $tag $*"; tail -5 "$res/one.log"; }
  { echo "=== $tag $*"; cat "$res/one.log"; } >> "$res/bench.log"
}
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --initial-states --dtype bf16 --form rows --layout channel-first --direction backward)
for rep in 1 2; do
  for lens in random:8 none; do
    tag=rows; [[ $lens == none ]] && tag=states
    bench "${tag}_off" "${big[@]}" --seq-lens $lens --span-map off
    bench "${tag}_on" "${big[@]}" --seq-lens $lens --span-map on
  done
done
bench rows_bias_silu "${big[@]}" --seq-lens random:8 --bias --silu
bench rows_fp32 "${big[@]/bf16/fp32}" --seq-lens random:8
stamp "bench: $(grep -c FAIL "$res/bench.log") failures"
one=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 1 --warmup 0 --initial-states --dtype bf16 --form rows --layout channel-first --direction backward --span-map on)
for lens in random:8 none; do
  ncu --csv --page raw --clock-control none --kernel-name regex:'conv_bwd_cf' \
    --metrics gpu__time_duration.sum,smsp__inst_executed.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio,launch__registers_per_thread \
    --log-file "$res/ncu_${lens%%:*}.csv" "$E" "${one[@]}" --seq-lens $lens > "$res/ncu_${lens%%:*}.log" 2>&1
  sed -i '/^==PROF==/d' "$res/ncu_${lens%%:*}.csv"
done
stamp ncu
for tool in memcheck racecheck initcheck synccheck; do
  for args in "--batch 2 --dim 24 --seqlen 64 --width 2 --dtype bf16 --seq-lens 1,0,2,9,5" \
              "--batch 3 --dim 40 --seqlen 96 --width 4 --dtype fp32 --bias --silu --seq-lens random:5" \
              "--batch 2 --dim 16 --seqlen 512 --width 4 --dtype bf16 --seq-lens random:1" \
              "--batch 2 --dim 16 --seqlen 1024 --width 3 --dtype fp16 --silu --seq-lens random:8"; do
    # shellcheck disable=SC2086
    compute-sanitizer --tool $tool --error-exitcode 9 "$E" $args --initial-states --form rows \
      --layout channel-first --direction backward --iters 1 --warmup 0 > "$res/one.log" 2>&1
    echo "$tool rc $? [$args] $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$res/one.log" | tail -1)" | tee -a "$res/sanitizers.txt"
  done
done
stamp done
