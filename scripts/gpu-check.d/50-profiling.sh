# Profiling (profiling/, docs/profiling.md), sourced by scripts/gpu-check.sh:
#  - every chapter at one small shape under the chapters' own phase records; the five charts go to
#    $out/results/charts/ (committed, shown in docs/results.md) and the run to $out/results/profile/;
#  - the same under our CUPTI tracer (kept in $out/logs/profile/: its API traces are large);
#  - the tracer's kernel time against the chapters' own device events in the same timed runs, within
#    10 % (both printed; the table goes to $out/results/profile/cupti_vs_events.tsv);
#  - a short Nsight Compute pass over chapter 01, read back by profiling/'s ncu parser.
prof_shape=(--batch 4 --dim 256 --seqlen 2048 --iters 5 --warmup 1)
# The tracer is judged at a larger shape: an event pair around a launch into an idle queue also
# times the launch itself (a few microseconds), which is noise for long kernels and not for short ones.
cupti_shape=(--batch 8 --dim 1024 --seqlen 4096 --iters 3 --warmup 1)
prof_py=$build/venv/bin/python  # made by cmake/PythonEnv.cmake when the system Python lacks numpy/matplotlib
[[ -x $prof_py ]] || prof_py=python3
prof() { PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}" "$prof_py" -m profiling "$@"; }

if ! "$prof_py" -c "import numpy, matplotlib" > /dev/null 2>&1; then
  row profiling "Python with numpy and matplotlib" FAIL "$prof_py cannot import them"
else
  step "profiling: the chapters' own records, charts"
  rm -rf "$out/results/charts" "$out/results/profile"
  if prof run --source builtin --build "$build" --out "$out/results/profile" "${prof_shape[@]}" \
       --charts "$out/results/charts" > "$out/logs/profiling_builtin.log" 2>&1; then
    row profiling "run --source builtin ${prof_shape[*]}" pass "$(cd "$out/results/charts" && echo *.png)"
  else
    row profiling "run --source builtin ${prof_shape[*]}" FAIL "see logs/profiling_builtin.log"
    tail -n 20 "$out/logs/profiling_builtin.log"
  fi
  png_bytes=$(cat "$out"/results/charts/*.png 2> /dev/null | wc -c)
  if ((png_bytes > 0 && png_bytes <= 600000)); then
    row profiling "chart files stay small" pass "$((png_bytes / 1024)) KiB in all"
  else
    row profiling "chart files stay small" FAIL "$((png_bytes / 1024)) KiB in all (limit 585 KiB)"
  fi

  step "profiling: our CUPTI tracer"
  rm -rf "$out/logs/profile"
  if prof run --source cupti --build "$build" --out "$out/logs/profile" "${cupti_shape[@]}" \
       --charts "$out/logs/profile/charts-cupti" > "$out/logs/profiling_cupti.log" 2>&1; then
    row profiling "run --source cupti ${cupti_shape[*]}" pass "charts in logs/profile/charts-cupti"
  else
    row profiling "run --source cupti ${cupti_shape[*]}" FAIL "see logs/profiling_cupti.log"
    tail -n 20 "$out/logs/profiling_cupti.log"
  fi

  step "profiling: CUPTI kernel time against the chapters' events"
  cupti_run=$(find "$out/logs/profile" -mindepth 2 -maxdepth 2 -type d -name cupti 2> /dev/null | head -n 1)
  mkdir -p "$out/results/profile"
  # ch07's pipelined variant runs kernels of several streams at once: a kernel's event span there
  # includes waiting for the SMs the others hold, so it is listed but not judged.
  if [[ -n $cupti_run ]] && prof compare "$cupti_run" --source cupti --tolerance 0.10 \
       --exclude ch07_stream_pipeline/pipelined \
       --tsv "$out/results/profile/cupti_vs_events.tsv" > "$out/logs/profiling_compare.log" 2>&1; then
    result=pass
  else
    result=FAIL
  fi
  cat "$out/logs/profiling_compare.log" 2> /dev/null
  note=$(awk -F'\t' 'NR > 1 {printf "%s%s: events %s ms, CUPTI %s ms (%s %%); ", $1, ($2 != "" ? "/" $2 : ""), $4, $5, $6}' \
         "$out/results/profile/cupti_vs_events.tsv" 2> /dev/null)
  row profiling "CUPTI kernels within 10 % of events" "$result" "${note:-see logs/profiling_compare.log}"

  step "profiling: Nsight Compute on chapter 01"
  ch01=$(printf '%s\n' $chapters | grep -m1 '/ch01_')
  if ! command -v ncu > /dev/null; then
    row profiling "ncu --csv --page raw, parsed" FAIL "ncu not on PATH"
  elif [[ -z $ch01 ]]; then
    row profiling "ncu --csv --page raw, parsed" FAIL "no chapter 01 executable"
  elif ncu --csv --page raw --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum \
         --clock-control none --log-file "$out/logs/ncu_ch01.csv" "$ch01" --batch 2 --dim 128 --seqlen 512 \
         --iters 1 --warmup 0 > "$out/logs/ncu_ch01.log" 2>&1 &&
       prof parse --brief "$out/logs/ncu_ch01.csv" > "$out/logs/ncu_ch01_parsed.txt" 2>&1 &&
       kernels=$(grep -c '^ncu ' "$out/logs/ncu_ch01_parsed.txt") && ((kernels > 0)); then
    row profiling "ncu --csv --page raw, parsed" pass \
      "$kernels kernel launches, the first $(awk '/^ncu /{printf "%s ms", $5; exit}' "$out/logs/ncu_ch01_parsed.txt")"
  else
    row profiling "ncu --csv --page raw, parsed" FAIL "see logs/ncu_ch01.log and logs/ncu_ch01_parsed.txt"
    tail -n 10 "$out/logs/ncu_ch01.log" "$out/logs/ncu_ch01_parsed.txt" 2> /dev/null
  fi
fi
