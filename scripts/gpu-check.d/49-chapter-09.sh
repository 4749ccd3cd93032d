# shellcheck shell=bash disable=SC2154  # out, build, row and step come from scripts/gpu-check.sh
# Chapter 09 (the direct backward): the benchmark report behind docs/09_direct_backward.md, chapter
# 06's backward at the same shapes in the same run (the comparison), what the compiler made of the
# kernels, an Nsight Compute look at the headline kernels, and sanitizers on the awkward paths.
#
# Result files (under $out/results):
#   bench_09.tsv, bench_09_kernels.tsv   every step in both layouts, both reductions: 8x4096x4096
#                                        (bf16, fp32; bf16 with --bias --silu), 32x2048x512,
#                                        1x4096x16384, 8x4096x4095 (odd L, channel-first), 4x64x1024
#   bench_09_ch06.tsv, _kernels.tsv      chapter 06 (channel-last, deterministic and atomic) at
#                                        8x4096x4096 bf16 and fp32
#   bench_09_sweep.tsv, _kernels.tsv     --vectors 1, 2, 4 (channel-first), --rows 16, 32, 64 with
#                                        2 and 4 channels per lane (channel-last, cl_tiled) and
#                                        --rows 16, 32, 64 (cl_staged), 8x4096x4096 bf16
#   ch09_resources.txt, .tsv             registers, stack and local memory per kernel (cuobjdump)
#   ch09_ncu.csv, .tsv                   DRAM bytes, duration, occupancy, long-scoreboard stalls of the
#                                        kernels at 8x4096x4096 bf16

exe9=$build/chapters/09_direct_backward/ch09_direct_backward
bench9=$out/results/bench_09.tsv
sweep9=$out/results/bench_09_sweep.tsv
ch06_9=$out/results/bench_09_ch06.tsv
rm -f "$bench9" "${bench9%.tsv}_kernels.tsv" "$sweep9" "${sweep9%.tsv}_kernels.tsv" "$ch06_9" "${ch06_9%.tsv}_kernels.tsv"

run9() {  # run9 EXE TSV TAG ARGS...
  bench_run ch09_direct_backward "ch09_$3" "$1" "$2" "${@:4}"
}

if [[ -x $exe9 ]]; then
  big9=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3)
  for dt in bf16 fp32; do
    run9 "$exe9" "$bench9" "big_$dt" "${big9[@]}" --dtype "$dt"
    run9 "$build/chapters/06_channel_last_backward/ch06_channel_last_backward" "$ch06_9" "ch06_big_$dt" \
      "${big9[@]}" --dtype "$dt"
  done
  run9 "$exe9" "$bench9" big_bf16_bias_silu "${big9[@]}" --dtype bf16 --bias --silu --reduction deterministic
  run9 "$exe9" "$bench9" short_bf16 --batch 32 --dim 2048 --seqlen 512 --width 4 --iters 20 --warmup 3 \
    --dtype bf16 --reduction deterministic
  run9 "$exe9" "$bench9" long_bf16 --batch 1 --dim 4096 --seqlen 16384 --width 4 --iters 20 --warmup 3 \
    --dtype bf16 --reduction deterministic
  run9 "$exe9" "$bench9" odd_l_bf16 --batch 8 --dim 4096 --seqlen 4095 --width 4 --iters 20 --warmup 3 \
    --dtype bf16 --layout channel-first --reduction deterministic
  run9 "$exe9" "$bench9" tiny_bf16 --batch 4 --dim 64 --seqlen 1024 --width 4 --iters 100 --warmup 10 \
    --dtype bf16 --reduction deterministic
  for v in 1 2 4; do
    run9 "$exe9" "$sweep9" "vectors_$v" "${big9[@]}" --dtype bf16 --layout channel-first --variant fused \
      --reduction deterministic --vectors "$v"
  done
  for r in 16 32 64; do
    for ab in 4 8; do  # 2 and 4 bf16 channels per lane
      run9 "$exe9" "$sweep9" "rows_${r}_access_$ab" "${big9[@]}" --dtype bf16 --layout channel-last \
        --variant tiled --reduction deterministic --rows "$r" --access-bytes "$ab"
    done
    run9 "$exe9" "$sweep9" "staged_rows_$r" "${big9[@]}" --dtype bf16 --layout channel-last --variant staged \
      --reduction deterministic --rows "$r"
  done

  res9=$out/results/ch09_resources.txt
  resources_table ch09_direct_backward "$exe9" 'conv_bwd|reduce_partials' "$res9"

  step "ch09 under Nsight Compute"
  if command -v ncu > /dev/null &&
     ncu --csv --page raw --clock-control none --kernel-name regex:'conv_bwd|reduce_partials' \
       --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warp_latency_per_inst_issued.ratio \
       --log-file "$out/results/ch09_ncu.csv" "$exe9" --batch 8 --dim 4096 --seqlen 4096 --width 4 --dtype bf16 \
       --reduction deterministic --iters 1 --warmup 0 > "$out/logs/ncu_ch09.log" 2>&1; then
    sed -i '/^==PROF==/d' "$out/results/ch09_ncu.csv"  # (ncu's process lines name this machine's folders)
    python3 "$root/scripts/result_tables.py" ncu "$out/results/ch09_ncu.csv" "$out/results/ch09_ncu.tsv"
    row ch09_direct_backward "ncu: DRAM bytes, occupancy, stalls" pass "results/ch09_ncu.csv, .tsv"
  else
    row ch09_direct_backward "ncu: DRAM bytes, occupancy, stalls" FAIL "see logs/ncu_ch09.log"
  fi

  # Sanitizers on what the generic runs (bf16, D = 40, L = 67) miss: L shorter than W and than a
  # vector, several chunks and tiles per row with a partial last one, fp32 and fp16, bias and SiLU,
  # each launch choice; the channel-first staged kernel (which needs L a multiple of the vector)
  # with two tiles a row, the second of two vectors; the channel-last staged kernel with lanes past
  # D and tiles past L, with SiLU.
  sanitize_shapes ch09_direct_backward "$exe9" \
    "--batch 3 --dim 37 --seqlen 5 --width 3 --bias --silu --dtype fp32" \
    "--batch 2 --dim 24 --seqlen 1300 --width 4 --dtype fp16 --vectors 4 --rows 16 --access-bytes 8" \
    "--batch 1 --dim 7 --seqlen 1 --width 2 --dtype bf16 --vectors 1 --rows 64" \
    "--batch 2 --dim 9 --seqlen 4112 --width 3 --dtype bf16 --bias --silu --layout channel-first" \
    "--batch 2 --dim 136 --seqlen 300 --width 4 --dtype bf16 --bias --silu --layout channel-last --rows 64"
else
  row ch09_direct_backward bench FAIL "$exe9 not built"
fi
