#!/usr/bin/env bash
# Prepared, not yet run (README.md beside it has the prediction). Chapter 09's channel-last staged
# backward with column blocks for packed sequences (column-blocks.patch): the committed tree (old)
# and the patched one (new) built side by side, timed in turn in two rounds, each run verified
# against fp64: channel-last rows with 8 and 64 documents, with 8 and bias + SiLU, the states
# alone, the varlen backward; then one launch of the new kernel under Nsight Compute (rows, 8
# documents) and chapters 09's and 10's tests on the new tree.
# Run from the repository root with OUT set: bash results/cl-column-blocks/run.sh
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}; start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
res=$out/run; mkdir -p "$res"
trap 'exit 143' TERM
trap 'sed -i "s#$root/##g; s#$out/#<out>/#g; s#/tmp/tmp\.[A-Za-z0-9]*#<tmp>#g" "$res"/*.txt "$res"/*.log "$res"/*.csv 2>/dev/null; tar czf "$out/run.tgz" -C "$res" . && rm -rf "$res"' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"; cat "$res/gpu.txt"
new=$(mktemp -d); tar cf - --exclude=./build --exclude=./results . | tar xf - -C "$new"
(cd "$new" && git apply "$root/results/cl-column-blocks/column-blocks.patch") || { stamp "the patch did not apply"; exit 1; }
(cmake -S . -B build/n_old -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure_old.txt" 2>&1 &&
 timeout 420 cmake --build build/n_old -j 4 --target ch10_packed_sequences > "$res/build_old.txt" 2>&1) &
(cmake -S "$new" -B build/n_new -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure_new.txt" 2>&1 &&
 timeout 420 cmake --build build/n_new -j 14 > "$res/build_new.txt" 2>&1) &
wait
stamp "builds: $(cat "$res"/build_*.txt | grep -c ' error') error lines, $(grep -c warning "$res/build_new.txt") warning lines (new)"
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --initial-states --direction backward
     --layout channel-last --dtype bf16)
for round in 1 2; do
  for cfg in rows8 rows64 rows8silu states varlen; do
    case $cfg in rows8) args=(--form rows --seq-lens random:8) ;; rows64) args=(--form rows --seq-lens random:64) ;;
                 rows8silu) args=(--form rows --seq-lens random:8 --bias --silu) ;;
                 states) args=(--form rows --seq-lens none) ;; varlen) args=(--form varlen --seq-lens random:64) ;; esac
    for v in old new; do
      tag="${cfg}_${v}_$round"
      timeout 60 build/n_$v/chapters/10_packed_sequences/ch10_packed_sequences "${big[@]}" "${args[@]}" \
        --summary "$res/bench_$tag.tsv" > "$res/ch10_$tag.txt" 2>&1
      stamp "$tag rc $?: $(awk '/^summary \(/ {s = 1; next} s && $2 ~ /^[0-9.]+$/ {printf "%s %s ms; ", $1, $4}' "$res/ch10_$tag.txt")"
    done
  done
done
timeout 90 ncu --section WarpStateStats --section SourceCounters --section InstructionStats --section LaunchStats \
  --section SpeedOfLight --clock-control none --kernel-name-base demangled --kernel-name regex:"conv_bwd_cl_staged.*PackedRows" \
  --launch-count 1 -o "$res/cl_new" -f build/n_new/chapters/10_packed_sequences/ch10_packed_sequences "${big[@]}" \
  --form rows --seq-lens random:8 --iters 1 --warmup 0 > "$res/ncu_cl_new.txt" 2>&1
stamp "ncu rc $?"
ncu --import "$res/cl_new.ncu-rep" --page details --csv > "$res/details_cl_new.csv" 2>&1
ncu --import "$res/cl_new.ncu-rep" --page source --csv --print-source sass > "$res/source_cl_new.csv" 2>&1
gzip -9 "$res/source_cl_new.csv"; rm -f "$res/cl_new.ncu-rep"
CONV1D_REQUIRE_GPU=1 timeout 200 ctest --test-dir build/n_new -R "Ch09|Ch10|ch09|ch10" -j 4 --output-on-failure > "$res/ctest_ch09_ch10.log" 2>&1
stamp "ctest ch09+ch10 rc $?: $(grep -E 'tests passed' "$res/ctest_ch09_ch10.log")"
stamp done
