# shellcheck shell=bash disable=SC2154  # out, build, row and step come from scripts/gpu-check.sh
# Chapter 10 (packed sequences and state passing): the benchmark report behind
# docs/10_packed_sequences.md, what the compiler made of the packed kernels, and sanitizers on the
# awkward packings.
#
# Result files (under $out/results):
#   bench_10.tsv, bench_10_kernels.tsv   8x4096x4096, W 4, forward and backward, each against chapter
#                                        08's and 09's kernels on the same x (cf_plain*, cl_plain*):
#                                        the rows form with 8 sequences a row (odd rows ending in
#                                        padding) and initial and final states; the states alone
#                                        (--seq-lens none); the varlen form, 64 random lengths over
#                                        the 32768 tokens, D 4096, states read from and written to a
#                                        cache; bias and SiLU; fp32; the rows form in 7 chunks
#   ch10_goals.md                        the goals (rows within 5 % of chapters 08/09, varlen forward
#                                        at 85 % of the copy ceiling), met or not, from bench_10*.tsv
#   ch10_resources.txt, .tsv             registers, stack and local memory per kernel (cuobjdump)
#   ch10_ncu.csv, .tsv                   the forward kernels with the states alone (no seq_idx) and
#                                        chapter 08's on the same x, 8x4096x4096 bf16: duration, DRAM
#                                        bytes, warps active, issue stalls (no instruction, long
#                                        scoreboard): where the packed kernels' time goes

exe10=$build/chapters/10_packed_sequences/ch10_packed_sequences
bench10=$out/results/bench_10.tsv
rm -f "$bench10" "${bench10%.tsv}_kernels.tsv"

run10() {  # run10 TAG ARGS...
  bench_run ch10_packed_sequences "ch10_$1" "$exe10" "$bench10" "${@:2}"
}

if [[ -x $exe10 ]]; then
  big10=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --initial-states)
  run10 rows_bf16 "${big10[@]}" --dtype bf16 --form rows --seq-lens random:8
  run10 states_bf16 "${big10[@]}" --dtype bf16 --form rows --seq-lens none
  run10 varlen_bf16 "${big10[@]}" --dtype bf16 --form varlen --seq-lens random:64
  run10 rows_bf16_bias_silu "${big10[@]}" --dtype bf16 --form rows --seq-lens random:8 --bias --silu
  run10 varlen_bf16_bias_silu "${big10[@]}" --dtype bf16 --form varlen --seq-lens random:64 --bias --silu
  run10 rows_fp32 "${big10[@]}" --dtype fp32 --form rows --seq-lens random:8
  run10 varlen_fp32 "${big10[@]}" --dtype fp32 --form varlen --seq-lens random:64
  run10 chunks_bf16 "${big10[@]}" --dtype bf16 --form rows --seq-lens none --chunks 7

  # The chapter's goals, met or not, from the benchmarks above (scripts/ch10_goals.py).
  if python3 "$root/scripts/ch10_goals.py" "$out/results" > "$out/results/ch10_goals.md" 2> "$out/logs/ch10_goals.log"; then
    row ch10_packed_sequences "the chapter's goals" pass "results/ch10_goals.md: $(head -n1 "$out/results/ch10_goals.md")"
  else
    row ch10_packed_sequences "the chapter's goals" FAIL "see logs/ch10_goals.log"
  fi

  # (The chapter's own kernels, in namespace ch10; the plain baselines are chapters 08's and 09's.)
  resources_table ch10_packed_sequences "$exe10" '4ch10[0-9]+conv_|cf_row_edges|make_tap_words' \
    "$out/results/ch10_resources.txt" 'PackedRows|Varlen'

  step "ch10 under Nsight Compute"
  if command -v ncu > /dev/null &&
     ncu --csv --page raw --clock-control none --kernel-name regex:'conv_fwd_c[fl]_' \
       --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warp_latency_per_inst_issued.ratio \
       --log-file "$out/results/ch10_ncu.csv" "$exe10" --batch 8 --dim 4096 --seqlen 4096 --width 4 --dtype bf16 \
       --initial-states --seq-lens none --direction forward --iters 1 --warmup 0 > "$out/logs/ncu_ch10.log" 2>&1; then
    sed -i '/^==PROF==/d' "$out/results/ch10_ncu.csv"  # (ncu's process lines name this machine's folders)
    python3 "$root/scripts/result_tables.py" ncu "$out/results/ch10_ncu.csv" "$out/results/ch10_ncu.tsv"
    row ch10_packed_sequences "ncu: states alone against chapter 08" pass "results/ch10_ncu.csv, .tsv"
  else
    row ch10_packed_sequences "ncu: states alone against chapter 08" FAIL "see logs/ncu_ch10.log"
  fi

  # Sanitizers, both directions: sequences of length 0 and 1 and L shorter than a vector (vectors
  # across rows) with states; a varlen batch with empty sequences and sequences shorter than the
  # states; chunks shorter than the states; rows of a length the vector divides (the staged
  # kernel, with the words of taps) with short sequences and padding vectors; rows without seq_idx,
  # whole rows a tile of the staged backward, and rows with seq_idx there (the words); channel-last
  # rows on the staged forward, a sequence across its tiles;
  # a varlen batch of many short sequences on it, several in a batch of 8 rows; channel-last rows
  # backward with several sequences a tile (its walk with flags, a batch reading past the tile);
  # the channel-last backward in fp32 (two channels a lane) with lanes past D, both forms.
  sanitize_shapes ch10_packed_sequences "$exe10" \
    "--batch 3 --dim 37 --seqlen 5 --width 3 --bias --silu --dtype fp32 --initial-states --seq-lens random:4" \
    "--batch 1 --dim 40 --seqlen 90 --width 4 --dtype bf16 --initial-states --form varlen --seq-lens 1,0,2,3,0,84" \
    "--batch 2 --dim 16 --seqlen 40 --width 4 --dtype fp16 --initial-states --seq-lens none --chunks 7" \
    "--batch 2 --dim 24 --seqlen 64 --width 2 --dtype bf16 --initial-states --form rows --layout channel-first --seq-lens 1,0,2,9,5" \
    "--batch 3 --dim 11 --seqlen 512 --width 4 --dtype bf16 --bias --initial-states --form rows --layout channel-first --seq-lens none" \
    "--batch 3 --dim 11 --seqlen 512 --width 3 --dtype bf16 --initial-states --form rows --layout channel-first --seq-lens random:8" \
    "--batch 2 --dim 16 --seqlen 150 --width 4 --dtype bf16 --silu --initial-states --form rows --layout channel-last --direction forward --seq-lens 1,0,70,3,50" \
    "--batch 1 --dim 64 --seqlen 700 --width 3 --dtype fp16 --initial-states --form varlen --direction forward --seq-lens random:60" \
    "--batch 2 --dim 32 --seqlen 300 --width 4 --dtype bf16 --bias --silu --initial-states --form rows --layout channel-last --direction backward --seq-lens random:12" \
    "--batch 2 --dim 70 --seqlen 200 --width 3 --dtype fp32 --initial-states --form both --layout channel-last --direction backward --seq-lens random:5"
else
  row ch10_packed_sequences bench FAIL "$exe10 not built"
fi
