#!/usr/bin/env bash
# Third call: why column tiles of 8 rows cost the states alone ~14 % with the same DRAM bytes
# (run2). The patched tree built twice with R = 8: tiles in row-group order (as run2) and with the
# pieces at one place of every row first (-DCONV1D_COLUMN_ORDER=1); both timed at 8 x 4096 x 4096
# bf16 (rows with 8 documents, the states alone), twice; then Nsight Compute's details pages
# (speed of light, memory workload, warp states, scheduler, occupancy) for the states alone, the
# column-tile kernel and chapter 08's plain kernel in the same process.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'exit 143' TERM
trap 'sed -i "s#$root/##g" "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"; cat "$res/gpu.txt"
for v in "r8|-DCONV1D_COLUMN_ROWS=8" "r8o|-DCONV1D_COLUMN_ROWS=8 -DCONV1D_COLUMN_ORDER=1"; do
  tag=${v%%|*}; flags=${v#*|}
  (cmake -S . -B build/$tag -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
     "-DCMAKE_CUDA_FLAGS=$flags" > "$res/build_$tag.txt.configure" 2>&1 &&
   cmake --build build/$tag -j 8 --target ch10_packed_sequences > "$res/build_$tag.txt" 2>&1) &
done
wait
stamp "builds: $(cat "$res"/build_r*.txt | grep -c error) error lines, $(cat "$res"/build_r*.txt | grep -c warning) warning lines"
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --initial-states --direction forward
     --form rows --layout channel-first --dtype bf16)
for round in 1 2; do
  for lens in random:8 none; do
    for v in r8 r8o; do
      exe=build/$v/chapters/10_packed_sequences/ch10_packed_sequences
      tag=${lens/:/}
      timeout 60 "$exe" "${big[@]}" --seq-lens $lens --summary "$res/bench_${v}_$round.tsv" > "$res/ch10_${tag}_${v}_$round.txt" 2>&1
      stamp "$tag $v $round rc $?: $(awk '/^summary \(/ {s = 1; next} s && $2 ~ /^[0-9.]+$/ {printf "%s %s ms; ", $1, $4}' "$res/ch10_${tag}_${v}_$round.txt")"
    done
  done
done
timeout 150 ncu --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats \
  --section SchedulerStats --section Occupancy --section LaunchStats --clock-control none \
  --kernel-name regex:'conv_fwd_cf_staged' --launch-count 4 -o "$res/states" -f \
  build/r8/chapters/10_packed_sequences/ch10_packed_sequences "${big[@]}" --seq-lens none --iters 1 --warmup 0 \
  > "$res/ncu_states_log.txt" 2>&1
stamp "ncu rc $?"
ncu --import "$res/states.ncu-rep" --page details --csv > "$res/ncu_states_details.csv" 2> "$res/ncu_import_err.txt"
stamp "details rc $?: $(wc -l < "$res/ncu_states_details.csv") lines"
rm -f "$res/states.ncu-rep"
