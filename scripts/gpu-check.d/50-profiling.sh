# Profiling (profiling/, docs/profiling.md), sourced by scripts/gpu-check.sh:
#  - every chapter at one small shape under the chapters' own phase records (chapter 11, whose
#    --seqlen is a decoding step's new tokens, refuses the shape and is left out), the run to
#    $out/results/profile/; then the five charts (committed, shown in docs/results.md) drawn from all
#    of this check's result files so far, `python -m profiling plot $out/results`, as the tour draws
#    them from results/gpu-check: the profiling run, plus the benchmark tables of the earlier sections
#    (chapter 07's stage timeline at its benchmark shape, the cuBLAS roof of chapter 05's benchmark,
#    chapter 08's kernels from 48-chapter-08.sh, which therefore runs first); beside them variant_runs.tsv (bytes, copy floor and share
#    of the copy ceiling of every run, quoted by docs/what-we-learned.md); every result file must be
#    one profiling/ knows;
#  - the same under our CUPTI tracer (kept in $out/logs/profile/: its API traces are large);
#  - the tracer's kernel time against the chapters' own device events in the same timed runs, within
#    10 % (both printed; the table goes to $out/results/profile/cupti_vs_events.tsv);
#  - chapters 02, 05 and 06 with the stream gate (common/timing.h) on and off, kernel and end-to-end
#    medians side by side in $out/results/profile/stream_gate.tsv;
#  - a short Nsight Compute pass over chapter 01, read back by profiling/'s ncu parser, and one without
#    CONV1D_STREAM_GATE=0, where the chapter must turn its stream gate off by itself.
prof_shape=(--batch 4 --dim 256 --seqlen 2048 --iters 5 --warmup 1)
# The tracer is judged at a larger shape: every event pair costs the GPU a few microseconds of its
# own around the kernel it brackets (the table's difference_us_per_record column measures it), which
# is noise next to long kernels and not next to short ones. L=16384 makes chapter 07's per-chunk
# kernels four times longer than at L=4096.
cupti_shape=(--batch 8 --dim 1024 --seqlen 16384 --iters 3 --warmup 1)
prof_py=$build/venv/bin/python  # made by cmake/PythonEnv.cmake when the system Python lacks numpy/matplotlib
[[ -x $prof_py ]] || prof_py=python3
prof() { PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}" "$prof_py" -m profiling "$@"; }

if ! "$prof_py" -c "import numpy, matplotlib" > /dev/null 2>&1; then
  row profiling "Python with numpy and matplotlib" FAIL "$prof_py cannot import them"
else
  step "profiling: the chapters' own records"
  rm -rf "$out/results/charts" "$out/results/profile"
  if prof run --source builtin --build "$build" --out "$out/results/profile" "${prof_shape[@]}" --no-charts \
       > "$out/logs/profiling_builtin.log" 2>&1; then
    row profiling "run --source builtin ${prof_shape[*]}" pass \
      "$(grep -m1 'results in' "$out/logs/profiling_builtin.log" | sed "s|.*$out/||")$(grep -o ' ch[0-9]*_[a-z_]* left out' "$out/logs/profiling_builtin.log" | sed 's/$/ (refuses the shape)/' | tr '\n' ';')"
  else
    row profiling "run --source builtin ${prof_shape[*]}" FAIL "see logs/profiling_builtin.log"
    tail -n 20 "$out/logs/profiling_builtin.log"
  fi

  # The committed charts come from every result file of this check, not from the profiling run alone:
  # the run is the one charted (the newest run_info.json), the other files add what it lacks.
  step "profiling: charts from every result file"
  if prof plot "$out/results" --out "$out/results/charts" > "$out/logs/profiling_charts.log" 2>&1; then
    row profiling "plot results/ (the profiling run and the benchmark tables)" pass \
      "$(cd "$out/results/charts" && echo *.png *.tsv)"
  else
    row profiling "plot results/ (the profiling run and the benchmark tables)" FAIL "see logs/profiling_charts.log"
  fi
  cat "$out/logs/profiling_charts.log"
  # A result file of no format profiling/ knows is noted as ignored: teach profiling/formats.py its header
  # (PROJECT_TSV) when it is one of the project's own.
  ignored=$(grep -c 'ignored, not a format' "$out/logs/profiling_charts.log")
  if ((ignored == 0)); then
    row profiling "every result file of a known format" pass
  else
    row profiling "every result file of a known format" FAIL \
      "$ignored ignored: $(grep 'ignored, not a format' "$out/logs/profiling_charts.log" | sed "s|.*$out/||; s|: ignored.*||" | tr '\n' ' ')"
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
  note=$(awk -F'\t' 'NR > 1 {printf "%s%s: events %s ms, CUPTI %s ms (%s %%, %s us per record); ", $1, ($2 != "" ? "/" $2 : ""), $4, $5, $6, $8}' \
         "$out/results/profile/cupti_vs_events.tsv" 2> /dev/null)
  row profiling "CUPTI kernels within 10 % of events" "$result" "${note:-see logs/profiling_compare.log}"

  # What the stream gate (common/timing.h) changes: the same runs with it off. Kernel records of
  # launches into an idle stream lose the launch time; end-to-end times pay about one launch per
  # kernel record for the gate's own kernel.
  step "profiling: kernel records with and without the stream gate"
  gate_tsv=$out/results/profile/stream_gate.tsv
  rm -f "$gate_tsv" "$out"/logs/gate_*
  gate_ok=1
  for exe in $(printf '%s\n' $chapters | grep -E '/ch0[256]_'); do
    name=$(basename "$exe")
    for gate in on off; do
      CONV1D_STREAM_GATE=$([[ $gate == on ]] && echo 1 || echo 0) "$exe" --summary "$out/logs/gate_${gate}.tsv" \
        > "$out/logs/gate_${name}_${gate}.log" 2>&1 || gate_ok=0
    done
  done
  # One row per chapter, variant and kernel: the kernel's time (median) and the run's end-to-end time,
  # gate on and off.
  if ((gate_ok)) && awk -F'\t' -v OFS='\t' '
      FNR == 1 { file++; next }
      file == 1 || file == 3 { e2e[file == 1 ? "on" : "off", $1 "/" $3] = $4; next }
      { k = $1 "\t" $3 "\t" $4; if (!(k in seen)) { seen[k] = 1; order[++n] = k }
        ms[file == 2 ? "on" : "off", k] = $5 }
      END {
        print "chapter", "variant", "kernel", "kernel_ms_gate_on", "kernel_ms_gate_off", "e2e_ms_gate_on", "e2e_ms_gate_off"
        for (i = 1; i <= n; i++) { split(order[i], p, "\t"); v = p[1] "/" p[2]
          print order[i], ms["on", order[i]], ms["off", order[i]], e2e["on", v], e2e["off", v] }
      }' "$out/logs/gate_on.tsv" "$out/logs/gate_on_kernels.tsv" "$out/logs/gate_off.tsv" \
        "$out/logs/gate_off_kernels.tsv" > "$gate_tsv" && (($(wc -l < "$gate_tsv") > 1)); then
    row profiling "stream gate on and off (ch02, ch05, ch06 default shapes)" pass "table in results/profile/stream_gate.tsv"
    cat "$gate_tsv"
  else
    row profiling "stream gate on and off (ch02, ch05, ch06 default shapes)" FAIL "see logs/gate_*"
  fi

  step "profiling: Nsight Compute on chapter 01"
  ch01=$(printf '%s\n' $chapters | grep -m1 '/ch01_')
  if ! command -v ncu > /dev/null; then
    row profiling "ncu --csv --page raw, parsed" FAIL "ncu not on PATH"
  elif [[ -z $ch01 ]]; then
    row profiling "ncu --csv --page raw, parsed" FAIL "no chapter 01 executable"
  elif CONV1D_STREAM_GATE=0 ncu --csv --page raw --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum \
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
  # Without CONV1D_STREAM_GATE=0 the chapter must notice that ncu finishes kernels inside their
  # launch, turn its stream gate off and say so (common/timing.h), and still verify.
  if [[ -n $ch01 ]] && command -v ncu > /dev/null; then
    if ncu --metrics gpu__time_duration.sum "$ch01" --batch 1 --dim 16 --seqlen 64 --iters 1 --warmup 0 \
         > "$out/logs/ncu_gate.log" 2>&1 && grep -q "finish before they return" "$out/logs/ncu_gate.log"; then
      row profiling "stream gate turns itself off under ncu" pass "$(grep -c stream_gate_wait "$out/logs/ncu_gate.log") gate kernel(s) profiled"
    else
      row profiling "stream gate turns itself off under ncu" FAIL "see logs/ncu_gate.log"
    fi
  fi
fi
