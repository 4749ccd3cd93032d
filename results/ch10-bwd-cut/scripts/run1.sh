#!/usr/bin/env bash
# Call 1 (H100): where the packed backward's time goes (the fifth version, before the cut form).
# Builds chapter 10 alone, then Nsight Compute's sections (speed of light, warp states, source
# counters) on the channel-first backward at 8 x 4096 x 4096 bf16, W 4, with 8 documents a row and
# with the states alone (the span map's kernel and chapter 09's on the same x), and on the
# channel-last backward with 8 documents a row; the SASS with its stall samples for the map's
# kernel. Run from the repository root with OUT set; everything comes back as one run.tgz.
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
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 1 --warmup 0 --initial-states --dtype bf16 --form rows --direction backward)
sections=(--section SpeedOfLight --section WarpStateStats --section InstructionStats --section SchedulerStats --section Occupancy --section LaunchStats --section SourceCounters)
prof() {  # prof TAG KERNEL-REGEX ARGS...
  local tag=$1 re=$2; shift 2
  ncu --clock-control none --kernel-name regex:"$re" "${sections[@]}" -f -o "$res/$tag" "$E" "$@" > "$res/ncu_$tag.log" 2>&1
  ncu --import "$res/$tag.ncu-rep" --page details --csv > "$res/details_$tag.csv" 2> "$res/details_$tag.log"
  stamp "$tag rc $?"
}
prof cf_rows 'conv_bwd_cf' "${big[@]}" --layout channel-first --seq-lens random:8
prof cf_states 'conv_bwd_cf' "${big[@]}" --layout channel-first --seq-lens none
prof cl_rows 'conv_bwd_cl' "${big[@]}" --layout channel-last --seq-lens random:8
for tag in cf_rows cf_states; do
  ncu --import "$res/$tag.ncu-rep" --page source --csv --print-source sass > "$res/source_$tag.csv" 2> "$res/source_$tag.log"
  stamp "source $tag rc $? $(wc -c < "$res/source_$tag.csv") bytes"
done
rm -f "$res"/*.ncu-rep  # (no Nsight Compute off the GPU machine to open them; the CSVs hold it)
gzip "$res"/source_*.csv
ls -la "$res" > "$res/files.txt"
