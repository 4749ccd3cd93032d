#!/usr/bin/env bash
# Call 1 (H100): where the channel-last packed backward's time goes, before any change (e5143b3).
# Builds chapter 10 alone, then Nsight Compute's sections with source counters on conv_bwd_cl at
# 8 x 4096 x 4096 bf16, W 4: 8 documents a row with the states, the states alone, and chapter 09's
# kernel on the same shape; the SASS source pages with their stall samples. Run from the repository
# root with OUT set; everything comes back as one run.tgz.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
b=$root/${BUILD_DIR:-build/gpu-check}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'sed -i "s#$root/##g" "$res"/*.log "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"
cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure.log" 2>&1
cmake --build "$b" -j "$(nproc)" --target ch10_packed_sequences > "$res/build.log" 2>&1 || { tail -n 60 "$res/build.log"; exit 1; }
stamp build
E=$b/chapters/10_packed_sequences/ch10_packed_sequences
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 1 --warmup 0 --dtype bf16 --form rows --direction backward --layout channel-last)
sections=(--section SpeedOfLight --section WarpStateStats --section InstructionStats --section SchedulerStats --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis --section SourceCounters)
prof() {  # prof TAG ARGS...
  local tag=$1; shift
  ncu --clock-control none --kernel-name regex:'conv_bwd_cl' --launch-count 2 "${sections[@]}" -f -o "$res/$tag" "$E" "$@" > "$res/ncu_$tag.log" 2>&1
  ncu --import "$res/$tag.ncu-rep" --page details --csv > "$res/details_$tag.csv" 2> "$res/details_$tag.log"
  ncu --import "$res/$tag.ncu-rep" --page source --csv --print-source sass > "$res/source_$tag.csv" 2> "$res/source_$tag.log"
  stamp "$tag rc $? $(wc -c < "$res/source_$tag.csv") bytes"
}
prof rows "${big[@]}" --initial-states --seq-lens random:8
prof states "${big[@]}" --initial-states --seq-lens none
prof nostates "${big[@]}" --seq-lens none
# The same shapes timed (the chapter's own report: plain and packed in one run).
for s in "--initial-states --seq-lens random:8" "--initial-states --seq-lens none" "--seq-lens none"; do
  "$E" --batch 8 --dim 4096 --seqlen 4096 --width 4 --dtype bf16 --form rows --direction backward --layout channel-last $s >> "$res/bench.txt" 2>&1
done
stamp bench
rm -f "$res"/*.ncu-rep
gzip "$res"/source_*.csv
ls -la "$res" > "$res/files.txt"
