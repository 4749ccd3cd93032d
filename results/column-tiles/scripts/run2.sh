#!/usr/bin/env bash
# Second call: column tiles of R rows (a warp's lanes over R rows at 32/R positions side by side),
# the patched tree built three times, R = 4, 8 and 16 (-DCONV1D_COLUMN_ROWS; run1 measured R = 32),
# each timed at 8 x 4096 x 4096 bf16 (rows with 8 and 64 documents, the states alone); then Nsight
# Compute's memory counters for R = 8 and R = 16 and chapter 08's plain kernel on the same x.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'exit 143' TERM
trap 'sed -i "s#$root/##g" "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"; cat "$res/gpu.txt"
for r in 4 8 16; do
  (cmake -S . -B build/r$r -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
     -DCMAKE_CUDA_FLAGS=-DCONV1D_COLUMN_ROWS=$r > "$res/build_r$r.txt.configure" 2>&1 &&
   cmake --build build/r$r -j 5 --target ch10_packed_sequences > "$res/build_r$r.txt" 2>&1) &
done
wait
stamp "builds: $(cat "$res"/build_r*.txt | grep -c error) error lines, $(cat "$res"/build_r*.txt | grep -c warning) warning lines"
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --initial-states --direction forward
     --form rows --layout channel-first --dtype bf16)
for round in 1 2; do
  for lens in random:8 none random:64; do
    [[ $round == 2 && $lens == random:64 ]] && continue
    for r in 4 8 16; do
      exe=build/r$r/chapters/10_packed_sequences/ch10_packed_sequences
      tag=${lens/:/}
      timeout 60 "$exe" "${big[@]}" --seq-lens $lens --summary "$res/bench_r${r}_$round.tsv" > "$res/ch10_${tag}_r${r}_$round.txt" 2>&1
      stamp "$tag R=$r $round rc $?: $(awk '/^summary \(/ {s = 1; next} s && $2 ~ /^[0-9.]+$/ {printf "%s %s ms; ", $1, $4}' "$res/ch10_${tag}_r${r}_$round.txt")"
    done
  done
done
for r in 8 16; do
  timeout 120 ncu --csv --page raw --clock-control none --kernel-name regex:'conv_fwd_cf_staged' \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_write.sum,lts__t_sector_hit_rate.pct,smsp__warps_issue_stalled_long_scoreboard_per_warp_active.pct,smsp__warps_issue_stalled_barrier_per_warp_active.pct,sm__warps_active.avg.pct_of_peak_sustained_active \
    --log-file "$res/ncu_r$r.csv" build/r$r/chapters/10_packed_sequences/ch10_packed_sequences "${big[@]}" --seq-lens random:8 \
    --iters 1 --warmup 0 > "$res/ncu_r${r}_log.txt" 2>&1
  stamp "ncu R=$r rc $?"
  sed -i '/^==PROF==/d' "$res/ncu_r$r.csv"
done
