#!/usr/bin/env bash
# Where the channel-first rows forward's remaining excess goes (the code as committed, e246aa3):
# Nsight Compute on chapter 10's forward, channel-first, 8 x 4096 x 4096 bf16, with 8 and 64
# documents a row and with the states alone: each kernel's duration (the span map's make_tap_words
# apart from the convolution: under the profiler they do not overlap), DRAM bytes, instructions
# and how busy the issue slots were, for the packed kernel and chapter 08's plain one on the same x.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'exit 143' TERM
trap 'sed -i "s#$root/##g" "$res"/*.txt "$res"/*.csv 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
b=$root/build/ncu
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"; cat "$res/gpu.txt"
cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure.txt" 2>&1
cmake --build "$b" -j "$(nproc)" --target ch10_packed_sequences > "$res/build.txt" 2>&1 || tail -30 "$res/build.txt"
stamp "build"
m=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,smsp__inst_executed.sum,sm__inst_issued.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio
for c in "rows8|random:8" "rows64|random:64" "states|none"; do
  tag=${c%%|*}
  ncu --csv --page raw --clock-control none --kernel-name regex:'make_tap_words|conv_fwd_cf_staged' --metrics $m \
    --log-file "$res/ncu_$tag.csv" "$b/chapters/10_packed_sequences/ch10_packed_sequences" --batch 8 --dim 4096 \
    --seqlen 4096 --width 4 --dtype bf16 --initial-states --form rows --layout channel-first --direction forward \
    --seq-lens "${c#*|}" --iters 1 --warmup 0 > "$res/ncu_$tag.txt" 2>&1
  rc=$?
  sed -i '/^==[A-Z]*==/d' "$res/ncu_$tag.csv"
  stamp "$tag rc $rc"
done
# (Afterwards, on the CPU machine: python3 scripts/result_tables.py ncu run3/ncu_TAG.csv run3/ncu_TAG.tsv,
# the median of each kernel's three launches.)
