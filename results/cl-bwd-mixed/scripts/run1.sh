#!/usr/bin/env bash
# Call 1: where the channel-last rows backward's second launch (the warps with flags) spends its
# instructions and stalls, on the committed code (8b0711f). Builds chapter 10 alone, then Nsight
# Compute with source counters on conv_bwd_cl at 8 x 4096 x 4096 bf16, W 4, 8 documents a row and
# states: chapter 09's kernel and both launches of the packed one. The source pages come back as
# SASS and as CUDA lines (the build has -lineinfo); the chapter's own report for the same shape.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'exit 143' TERM
trap 'sed -i "s#$root/##g" "$res"/*.txt "$res"/*.csv 2>/dev/null; gzip -f "$res"/source_*.csv 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"; cat "$res/gpu.txt"
b=$root/build/probe
cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > /dev/null &&
  cmake --build "$b" -j 16 --target ch10_packed_sequences > "$res/build.txt" 2>&1
stamp "build rc $?"
E=$b/chapters/10_packed_sequences/ch10_packed_sequences
shape=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --dtype bf16 --initial-states --form rows --layout channel-last --direction backward --seq-lens random:8)
"$E" "${shape[@]}" > "$res/bench.txt" 2>&1; stamp "bench rc $?"
sections=(--section SpeedOfLight --section WarpStateStats --section InstructionStats --section SchedulerStats --section Occupancy --section LaunchStats --section SourceCounters)
ncu --clock-control none --kernel-name regex:'conv_bwd_cl' --launch-count 3 "${sections[@]}" -f -o "$res/rows" \
  "$E" "${shape[@]}" --iters 1 --warmup 0 > "$res/ncu.txt" 2>&1; stamp "ncu rc $?"
ncu --import "$res/rows.ncu-rep" --page details --csv > "$res/details.csv" 2> "$res/details_err.txt"
for how in sass cuda; do
  ncu --import "$res/rows.ncu-rep" --page source --csv --print-source "$how" > "$res/source_$how.csv" 2> "$res/source_${how}_err.txt"
  stamp "source $how rc $? $(wc -c < "$res/source_$how.csv") bytes"
done
rm -f "$res"/*.ncu-rep
