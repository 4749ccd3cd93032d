# shellcheck shell=bash disable=SC2154  # out, build, row and step come from scripts/gpu-check.sh
# Chapter 08 (the direct forward): the benchmark report behind docs/08_direct_forward.md, what the
# compiler made of its kernels, an Nsight Compute look at the headline kernels, sanitizers on the
# awkward paths, and chapter 05's best path at the same shape in the same run (the speed-up).
#
# Result files (under $out/results):
#   bench_08.tsv, bench_08_kernels.tsv   every step in both layouts at the goals' shapes: 8x4096x4096
#                                        (bf16, fp16, fp32; bf16 with --bias --silu), 32x2048x512,
#                                        1x4096x16384, 8x4096x4095 (odd L), 4x64x1024 (launch-bound),
#                                        8x1024x4096 fp16 and fp32 (chapters 01-05's benchmark shape);
#                                        the kernels file has ms, GB/s and the share of the copy ceiling
#   bench_08_sweep.tsv, _kernels.tsv     --vectors 1, 2, 4, 8, and --rows 8, 16, 32 each with 16- and
#                                        8-byte accesses, at 8x4096x4096 bf16
#   bench_08_ch05.tsv, _kernels.tsv      chapter 05's sparse path at 8x4096x4096 fp16 (its kernels and
#                                        its end-to-end time), for the speed-up over the GEMM route
#   ch08_resources.txt, .tsv             registers, stack and local memory per kernel (cuobjdump; the
#                                        .tsv by scripts/result_tables.py, for the docs)
#   ch08_ncu.csv, .tsv                   DRAM bytes, duration, achieved occupancy and the long
#                                        scoreboard stall of the six kernels at 8x4096x4096 bf16 (the
#                                        .tsv: medians per kernel, scripts/result_tables.py)
#   ch08_ncu_tiny.csv, .tsv              the kernels' durations at 4x64x1024 (launch-bound)

exe8=$build/chapters/08_direct_forward/ch08_direct_forward
bench8=$out/results/bench_08.tsv
sweep8=$out/results/bench_08_sweep.tsv
rm -f "$bench8" "${bench8%.tsv}_kernels.tsv" "$sweep8" "${sweep8%.tsv}_kernels.tsv" \
  "$out/results/bench_08_ch05.tsv" "$out/results/bench_08_ch05_kernels.tsv"

run8() {  # run8 TSV TAG ARGS...
  bench_run ch08_direct_forward "ch08_$2" "$exe8" "$1" "${@:3}"
}

if [[ -x $exe8 ]]; then
  big8=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3)
  for dt in bf16 fp16 fp32; do
    run8 "$bench8" "big_$dt" "${big8[@]}" --dtype "$dt"
  done
  run8 "$bench8" big_bf16_bias_silu "${big8[@]}" --dtype bf16 --bias --silu
  run8 "$bench8" short_bf16 --batch 32 --dim 2048 --seqlen 512 --width 4 --iters 20 --warmup 3 --dtype bf16
  run8 "$bench8" long_bf16 --batch 1 --dim 4096 --seqlen 16384 --width 4 --iters 20 --warmup 3 --dtype bf16
  run8 "$bench8" odd_l_bf16 --batch 8 --dim 4096 --seqlen 4095 --width 4 --iters 20 --warmup 3 --dtype bf16 \
    --layout channel-first
  run8 "$bench8" tiny_bf16 --batch 4 --dim 64 --seqlen 1024 --width 4 --iters 200 --warmup 20 --dtype bf16
  # The shape chapters 01-05 are benchmarked at (20-chapters-02-04.sh, 40-chapter-05.sh), for the table
  # of every approach at one shape (docs/what-we-learned.md).
  for dt in fp16 fp32; do
    run8 "$bench8" "story_$dt" --batch 8 --dim 1024 --seqlen 4096 --width 4 --iters 20 --warmup 3 --dtype "$dt"
  done
  for v in 1 2 4 8; do
    run8 "$sweep8" "vectors_$v" "${big8[@]}" --dtype bf16 --layout channel-first --variant chunked --vectors "$v"
  done
  for r in 8 16 32; do
    for ab in 16 8; do
      run8 "$sweep8" "rows_${r}_access_$ab" "${big8[@]}" --dtype bf16 --layout channel-last --variant tiled \
        --rows "$r" --access-bytes "$ab"
    done
  done

  step "ch05 sparse at the same shape (the GEMM route's best)"
  exe5=$build/chapters/05_wmma_gemm/ch05_wmma_gemm
  if "$exe5" --variant sparse --batch 8 --dim 4096 --seqlen 4096 --width 4 --dtype fp16 --iters 10 --warmup 2 \
       --summary "$out/results/bench_08_ch05.tsv" > "$out/logs/bench_ch08_ch05.log" 2>&1; then
    row ch08_direct_forward "chapter 05 sparse at 8x4096x4096 fp16" pass "$(summary_note "$out/logs/bench_ch08_ch05.log")"
  else
    row ch08_direct_forward "chapter 05 sparse at 8x4096x4096 fp16" FAIL "see logs/bench_ch08_ch05.log"
  fi

  res8=$out/results/ch08_resources.txt
  resources_table ch08_direct_forward "$exe8" 'conv_fwd' "$res8"

  step "ch08 under Nsight Compute"
  if command -v ncu > /dev/null &&
     ncu --csv --page raw --clock-control none --kernel-name regex:conv_fwd \
       --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warp_latency_per_inst_issued.ratio \
       --log-file "$out/results/ch08_ncu.csv" "$exe8" --batch 8 --dim 4096 --seqlen 4096 --width 4 --dtype bf16 \
       --iters 1 --warmup 0 > "$out/logs/ncu_ch08.log" 2>&1; then
    sed -i '/^==PROF==/d' "$out/results/ch08_ncu.csv"  # (ncu's process lines name this machine's folders)
    python3 "$root/scripts/result_tables.py" ncu "$out/results/ch08_ncu.csv" "$out/results/ch08_ncu.tsv"
    row ch08_direct_forward "ncu: DRAM bytes, occupancy, stalls" pass "results/ch08_ncu.csv, .tsv"
  else
    row ch08_direct_forward "ncu: DRAM bytes, occupancy, stalls" FAIL "see logs/ncu_ch08.log"
  fi
  # At the launch-bound shape the kernels take about as long as an event pair's own overhead (a few
  # microseconds, docs/profiling.md), so their time is read from the profiler instead.
  if command -v ncu > /dev/null &&
     ncu --csv --page raw --clock-control none --kernel-name regex:conv_fwd --metrics gpu__time_duration.sum \
       --log-file "$out/results/ch08_ncu_tiny.csv" "$exe8" --batch 4 --dim 64 --seqlen 1024 --width 4 --dtype bf16 \
       --iters 3 --warmup 0 > "$out/logs/ncu_ch08_tiny.log" 2>&1; then
    sed -i '/^==PROF==/d' "$out/results/ch08_ncu_tiny.csv"  # (ncu's process lines name this machine's folders)
    python3 "$root/scripts/result_tables.py" ncu "$out/results/ch08_ncu_tiny.csv" "$out/results/ch08_ncu_tiny.tsv"
    row ch08_direct_forward "ncu: kernel time at 4x64x1024" pass "results/ch08_ncu_tiny.csv, .tsv"
  else
    row ch08_direct_forward "ncu: kernel time at 4x64x1024" FAIL "see logs/ncu_ch08_tiny.log"
  fi

  # Sanitizers on what the generic runs (D = 40, L = 67) miss: L shorter than a vector (vectors
  # across rows), D not a multiple of the channel-last vector, fp32, bias and SiLU, each launch
  # choice; the channel-last staged kernel with a tile's last batches past the end, and L < W.
  sanitize_shapes ch08_direct_forward "$exe8" \
    "--batch 3 --dim 37 --seqlen 5 --width 3 --bias --silu --dtype fp32" \
    "--batch 2 --dim 24 --seqlen 130 --width 4 --dtype fp16 --vectors 8 --rows 16" \
    "--batch 1 --dim 7 --seqlen 1 --width 2 --dtype bf16 --vectors 1 --rows 32" \
    "--batch 3 --dim 16 --seqlen 70 --width 4 --dtype bf16 --bias --silu --layout channel-last" \
    "--batch 2 --dim 8 --seqlen 2 --width 3 --dtype fp32 --layout channel-last"
else
  row ch08_direct_forward bench FAIL "$exe8 not built"
fi
