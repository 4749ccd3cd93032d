#!/usr/bin/env bash
# Fifth call: where the column tiles' own time goes. The patched tree built with R = 8, the pieces
# at one place of every row first (run3's faster order); Nsight Compute's source counters for the
# states alone (every tap counts, the words not read), the column-tile kernel and chapter 08's
# plain kernel in the same process; their source pages as CSV, one a kernel.
# (As run, its exports below matched no kernel, `--kernel-name` with `--import`: empty files, not
# kept. scripts/run5_profile.sh, run on the same machine after it, made the source pages.)
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'exit 143' TERM
trap 'sed -i "s#$root/##g; s#$res/#<results>/#g" "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"; cat "$res/gpu.txt"
git apply results/column-tiles/column_tiles.patch && stamp "patch applied"
cmake -S . -B build/r8o -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
  "-DCMAKE_CUDA_FLAGS=-DCONV1D_COLUMN_ROWS=8 -DCONV1D_COLUMN_ORDER=1" > "$res/build.txt.configure" 2>&1 &&
  timeout 230 cmake --build build/r8o -j 16 --target ch10_packed_sequences > "$res/build.txt" 2>&1
stamp "build rc $?: $(grep -c warning "$res/build.txt") warning lines"
timeout 60 ncu --section SourceCounters --section WarpStateStats --clock-control none \
  --kernel-name regex:'conv_fwd_cf_staged' --launch-count 4 -o "$res/states" -f \
  build/r8o/chapters/10_packed_sequences/ch10_packed_sequences --batch 8 --dim 4096 --seqlen 4096 --width 4 \
  --initial-states --direction forward --form rows --layout channel-first --dtype bf16 --seq-lens none \
  --iters 1 --warmup 0 > "$res/ncu_log.txt" 2>&1
stamp "ncu rc $?"
for k in TapWords EveryTap; do
  ncu --import "$res/states.ncu-rep" --kernel-name regex:"$k" --launch-count 1 --page source --csv \
    --print-source sass > "$res/source_$k.csv" 2> "$res/source_${k}_err.txt"
  stamp "source $k rc $?: $(wc -l < "$res/source_$k.csv") lines"
  gzip -9 "$res/source_$k.csv"
done
rm -f "$res/states.ncu-rep"
