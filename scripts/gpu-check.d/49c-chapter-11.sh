# shellcheck shell=bash disable=SC2154  # out, build, row and step come from scripts/gpu-check.sh
# Chapter 11 (the decoding update): the benchmark report behind docs/11_decode_update.md, what the
# compiler made of the decoding kernels, and sanitizers on awkward shapes (graphs included).
# About 10 minutes on an H100 (57 benchmark runs, two ncu runs, the sanitizers): where calls to the
# GPU machine are time-limited, give this section a call of its own, after the build.
#
# Every run decodes a loop of 64 steps and reports four variants in one run (linear and circular
# buffers, each replayed from a CUDA graph and launched step by step); the kernel rows of the loop
# are the whole loop, the "per step" rows the loop over 64. The shape column reads L=T (the new
# tokens of one step); runs with the same shape are told apart by their order (nth= in docs_sync):
#
# Result files (under $out/results):
#   bench_11.tsv, bench_11_kernels.tsv   bf16, W 4, SiLU, in this order:
#                                          1. B 256 D 4096 T 1     (goal: <= 6 us a step, graph)
#                                          2. B 64 D 4096 T 1      (goal: <= 4 us)
#                                          3. B 1 D 4096 T 1       (goal: <= 3 us)
#                                          4. B 256 D 4096 T 4     (goal: <= 8 us)
#                                          5. B 256 D 2048 T 1     (the reference library's shape)
#                                          6. B 256 D 4096 T 1 --gather (512 cache rows, padding)
#                                          7. B 256 D 4096 T 1 --kernel channel (a thread a channel)
#                                          8. B 256 D 4096 T 1 --state-len 8 (channel kernel; the
#                                             linear buffer shifts 8 entries, the circular writes 1)
#                                          9. fp32, B 256 D 4096 T 1
#   bench_11_pdl.tsv, _kernels.tsv       the four goal shapes (1-4 above) with ordinary launches
#                                        (--pdl off) and launched early (--pdl on, the default),
#                                        interleaved: off, on, off, on per shape (nth 1-4)
#   bench_11_spans.tsv, _kernels.tsv     the four goal shapes with the vector kernel's lanes reading
#                                        their own runs (--spans off) and warps reading whole spans
#                                        (--spans on), interleaved: off, on, off, on per shape
#   bench_11_threads.tsv, _kernels.tsv   the block size (--threads 64, 128, 256, 512), linear buffer,
#                                        graph replay, at B 256 T 1, B 64 T 1 and B 256 T 4 (in that
#                                        order, each shape's four runs together): what the default
#                                        choice (decode_threads in update.cuh) rests on
#   ch11_resources.txt, .tsv             registers, stack and local memory per kernel (cuobjdump)
#   ch11_ncu.csv, .tsv                   one step's kernel at B 256 D 4096 T 1 bf16 (8 steps, each
#                                        profiled alone): its duration, DRAM bytes and warps active,
#                                        to set against the step's time in the loop
#   ch11_ncu_threads64.csv, .tsv         the same in blocks of 64 threads

exe11=$build/chapters/11_decode_update/ch11_decode_update
bench11=$out/results/bench_11.tsv
rm -f "$bench11" "${bench11%.tsv}_kernels.tsv"

run11() {  # run11 TAG ARGS...
  bench_run ch11_decode_update "ch11_$1" "$exe11" "$bench11" "${@:2}"
}

if [[ -x $exe11 ]]; then
  base11=(--dim 4096 --width 4 --silu --steps 64 --iters 20 --warmup 3)
  run11 b256_bf16 "${base11[@]}" --batch 256 --seqlen 1 --dtype bf16
  run11 b64_bf16 "${base11[@]}" --batch 64 --seqlen 1 --dtype bf16
  run11 b1_bf16 "${base11[@]}" --batch 1 --seqlen 1 --dtype bf16
  run11 b256_t4_bf16 "${base11[@]}" --batch 256 --seqlen 4 --dtype bf16
  run11 b256_d2048_bf16 --dim 2048 --width 4 --silu --steps 64 --iters 20 --warmup 3 \
    --batch 256 --seqlen 1 --dtype bf16
  run11 b256_gather_bf16 "${base11[@]}" --batch 256 --seqlen 1 --dtype bf16 --gather
  run11 b256_channel_bf16 "${base11[@]}" --batch 256 --seqlen 1 --dtype bf16 --kernel channel
  run11 b256_state8_bf16 "${base11[@]}" --batch 256 --seqlen 1 --dtype bf16 --state-len 8
  run11 b256_fp32 "${base11[@]}" --batch 256 --seqlen 1 --dtype fp32

  # The four goal shapes with --FLAG off and on, interleaved (off, on, off, on), into
  # bench_11_FLAG.tsv.
  ab11() {
    local flag=$1 tsv=$out/results/bench_11_$1.tsv b t v shape
    rm -f "$tsv" "${tsv%.tsv}_kernels.tsv"
    for shape in "256 1" "64 1" "1 1" "256 4"; do
      read -r b t <<< "$shape"
      for v in off on off on; do
        bench_run ch11_decode_update "ch11_${flag}_b${b}_t${t}_$v" "$exe11" "$tsv" \
          "${base11[@]}" --batch "$b" --seqlen "$t" --dtype bf16 "--$flag" "$v"
      done
    done
  }
  ab11 pdl
  ab11 spans

  sweep11=$out/results/bench_11_threads.tsv
  rm -f "$sweep11" "${sweep11%.tsv}_kernels.tsv"
  for shape in "256 1" "64 1" "256 4"; do
    read -r b t <<< "$shape"
    for threads in 64 128 256 512; do
      bench_run ch11_decode_update "ch11_threads_b${b}_t${t}_${threads}" "$exe11" "$sweep11" \
        "${base11[@]}" --batch "$b" --seqlen "$t" --dtype bf16 --buffer linear --launch graph \
        --threads "$threads"
    done
  done

  resources_table ch11_decode_update "$exe11" 'decode_update' "$out/results/ch11_resources.txt"

  step "ch11 under Nsight Compute"
  for threads in 0 64; do  # the default block size, and blocks of 64
    ncu11=$out/results/ch11_ncu$([[ $threads == 0 ]] || echo "_threads$threads")
    if command -v ncu > /dev/null &&
       ncu --csv --page raw --clock-control none --kernel-name regex:decode_update \
         --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio \
         --log-file "$ncu11.csv" "$exe11" --batch 256 --dim 4096 --seqlen 1 --width 4 --dtype bf16 \
         --silu --steps 8 --iters 1 --warmup 0 --threads "$threads" > "$out/logs/ncu_ch11_$threads.log" 2>&1; then
      sed -i '/^==PROF==/d' "$ncu11.csv"  # (ncu's process lines name this machine's folders)
      python3 "$root/scripts/result_tables.py" ncu "$ncu11.csv" "$ncu11.tsv"
      row ch11_decode_update "ncu: one step's kernel, --threads $threads" pass "results/$(basename "$ncu11").csv, .tsv"
    else
      row ch11_decode_update "ncu: one step's kernel, --threads $threads" FAIL "see logs/ncu_ch11_$threads.log"
    fi
  done

  # Sanitizers: D not a multiple of the 16-byte group (the channel kernel), states longer than the
  # window, more tokens than the state holds, gathered rows with padding; graphs and direct
  # launches both (the chapter runs both).
  sanitize_shapes ch11_decode_update "$exe11" \
    "--batch 3 --dim 37 --seqlen 3 --width 3 --bias --silu --dtype fp32 --steps 5 --gather" \
    "--batch 2 --dim 16 --seqlen 5 --width 4 --dtype fp16 --steps 6 --state-len 7 --gather" \
    "--batch 5 --dim 1000 --seqlen 3 --width 4 --bias --silu --dtype bf16 --steps 3 --gather --spans on --threads 128"
else
  row ch11_decode_update bench FAIL "$exe11 not built"
fi
