# Chapter 07: the benchmark report behind docs/07_stream_pipeline.md.
#
# Result files (under $out/results):
#   bench_07.tsv, bench_07_kernels.tsv   every variant at B=16 D=1024 L=4096 W=4 fp16, pinned and
#                                        pageable host memory (variants of the pageable run carry
#                                        "-pageable" in their name)
#   bench_07_pipeline.tsv                per variant: wall time, sum of stage times, overlap
#                                        efficiency, the lower bound max(H2D, D2H, kernels) from the
#                                        pinned rates measured in the same run, wall / bound, speed-up
#                                        over serial
#   ch07_timeline.tsv                    the stage timeline (stream, chunk, stage, start, end) of the
#                                        last timed pipelined and serial runs, pinned
#   ch07_timeline.txt                    the pipelined timeline as the chapter printed it
#   ch07_bench_pinned_<variant>_{stats,trace}.csv   phase records (trace rows carry stream ids)

bench7=$out/results/bench_07.tsv
rm -f "$bench7" "${bench7%.tsv}_kernels.tsv" "${bench7%.tsv}_pipeline.tsv" "$out/results/ch07_timeline.tsv"
exe7=$build/chapters/07_stream_pipeline/ch07_stream_pipeline
big7=(--batch 16 --dim 1024 --seqlen 4096 --width 4 --iters 10 --warmup 2)

# The rows of the chapter's own table between "lower bound" and the summary: variant, wall time,
# wall / bound, speed-up over serial.
ch07_note() {
  awk '/^lower bound/ {s = 1; next} /^summary/ {s = 0}
       s && $2 ~ /^[0-9]+$/ && $3 ~ /^[0-9.]+$/ {printf "%s %s ms, wall/bound %s, vs serial %s; ", $1, $3, $6, $7}' "$1"
}

if [[ -x $exe7 ]]; then
  declare -A args7=(
    [pinned]="--host-memory pinned --timeline $out/results/ch07_timeline.tsv --profile-csv $out/results/ch07_bench_pinned"
    [pageable]="--host-memory pageable"
    [bias_silu]="--bias --silu --variant pipelined"
  )
  for tag in pinned pageable bias_silu; do
    log7=$out/logs/bench_ch07_$tag.log
    step "bench ch07 $tag"
    # shellcheck disable=SC2086  # the arguments above are split on purpose
    if "$exe7" "${big7[@]}" ${args7[$tag]} --summary "$bench7" > "$log7" 2>&1; then
      row ch07_stream_pipeline "bench $tag" pass "$(ch07_note "$log7")"
    else
      row ch07_stream_pipeline "bench $tag" FAIL "see logs/$(basename "$log7")"
    fi
  done
  awk '/^timeline of the last timed/ {s = 1} s && NF == 0 {exit} s' "$out/logs/bench_ch07_pinned.log" \
    > "$out/results/ch07_timeline.txt"
  # How the split matters: the pipelined variant over a few stream and chunk counts (rows of
  # bench_07_sweep_pipeline.tsv; fewer timed runs, the same shape).
  sweep7=$out/results/bench_07_sweep.tsv
  rm -f "$sweep7" "${sweep7%.tsv}_kernels.tsv" "${sweep7%.tsv}_pipeline.tsv"
  for sc in "2 1" "8 1" "4 2" "4 4" "8 4"; do  # --chunks counts per batch row: 16 rows here
    read -r streams chunks <<< "$sc"
    log7=$out/logs/bench_ch07_sweep_${streams}_${chunks}.log
    step "bench ch07 sweep streams $streams chunks $chunks"
    if "$exe7" --batch 16 --dim 1024 --seqlen 4096 --width 4 --iters 5 --warmup 1 --variant pipelined \
         --streams "$streams" --chunks "$chunks" --summary "$sweep7" > "$log7" 2>&1; then
      row ch07_stream_pipeline "sweep --streams $streams --chunks $chunks" pass "$(ch07_note "$log7")"
    else
      row ch07_stream_pipeline "sweep --streams $streams --chunks $chunks" FAIL "see logs/$(basename "$log7")"
    fi
  done
else
  row ch07_stream_pipeline bench FAIL "$exe7 not built"
fi
