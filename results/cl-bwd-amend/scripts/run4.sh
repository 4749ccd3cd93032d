#!/usr/bin/env bash
# Where the amend's time goes: amend.patch applied to the tree (41caab2), chapter 10 built, and
# Nsight Compute's raw metrics on every launch of conv_bwd_cl (chapter 09's kernel, the walk and the
# amend of chapter 10's rows) with the states alone and with 8 documents a row, bf16. Written under
# $OUT as they come, so that a call cut short keeps what it measured.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}; start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
git init -q 2>/dev/null; git apply results/cl-bwd-amend/amend.patch || { stamp "patch FAILED"; exit 1; }
cmake -S . -B build/gpu-check -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
  > "$out/configure.txt" 2>&1 && cmake --build build/gpu-check -j 16 --target ch10_packed_sequences > "$out/build.txt" 2>&1
stamp "build rc $?: $(grep -c warning "$out/build.txt") warning lines"
exe=build/gpu-check/chapters/10_packed_sequences/ch10_packed_sequences
metrics=gpu__time_duration.sum,launch__grid_size,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio,dram__bytes_read.sum,dram__bytes_write.sum
for lens in none random:8; do
  tag=${lens%%:*}
  ncu --csv --page raw --clock-control none --kernel-name regex:'conv_bwd_cl' --metrics "$metrics" \
    --log-file "$out/ncu_$tag.csv" "$exe" --batch 8 --dim 4096 --seqlen 4096 --width 4 --dtype bf16 \
    --initial-states --seq-lens "$lens" --layout channel-last --direction backward --form rows \
    --iters 1 --warmup 0 > "$out/ncu_$tag.log" 2>&1
  stamp "ncu $lens rc $?"
  sed -i '/^==PROF==/d' "$out/ncu_$tag.csv"
done
sed -i "s#$root/##g" "$out"/*.txt "$out"/*.log 2>/dev/null
