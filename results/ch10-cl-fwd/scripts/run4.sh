#!/usr/bin/env bash
# Call 4 (H100): why the forward's second launch (ClPass::mixed, one wave of blocks) takes tens of
# microseconds with the few tiles it has: Nsight Compute's sections with source counters on that
# kernel alone (its first launch after the verification run's), no states (`nostates`: only each
# row's first tile is its) and 8 documents a row with states (`rows`). The code of call 3 (`wave`).
# Run from the repository root with OUT set; everything comes back as one run.tgz.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'sed -i "s#$root/##g" "$res"/*.log "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"
b=$root/build/exp-wave
cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure.log" 2>&1
cmake --build "$b" -j "$(nproc)" --target ch10_packed_sequences > "$res/build.log" 2>&1 || { tail -n 40 "$res/build.log"; exit 1; }
stamp build
E=$b/chapters/10_packed_sequences/ch10_packed_sequences
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --layout channel-last --dtype bf16 --direction forward --form rows --iters 1 --warmup 0)
prof() {  # prof TAG ARGS...
  local tag=$1; shift
  ncu --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats \
    --section SchedulerStats --section SourceCounters --import-source no \
    --kernel-name regex:conv_fwd_cl --launch-skip 1 --launch-count 1 -o "$res/prof_$tag" \
    "$E" "${big[@]}" "$@" > "$res/ncu_$tag.log" 2>&1
  ncu -i "$res/prof_$tag.ncu-rep" --page details --csv > "$res/details_$tag.csv" 2>/dev/null
  ncu -i "$res/prof_$tag.ncu-rep" --page source --csv --print-source sass > "$res/source_$tag.csv" 2>/dev/null
  gzip -f "$res/source_$tag.csv"; rm -f "$res/prof_$tag.ncu-rep"
  stamp "prof $tag"
}
prof nostates --seq-lens none
prof rows --seq-lens random:8 --initial-states
grep -E '"Duration"|"Registers Per|"Achieved Occupancy"|"Waves Per SM"|Stall' "$res/details_nostates.csv" | cut -c1-200 | head -30
