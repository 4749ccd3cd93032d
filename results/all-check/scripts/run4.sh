#!/usr/bin/env bash
# Fourth call: the thirty-first version (commit 655670d) under Nsight Compute, the same metrics as
# results/cl-staged-bwd/run3 (the thirtieth version's first form): chapter 10's channel-last
# backward at 8 x 4096 x 4096 bf16, rows with 8 documents and states, without and with SiLU, the
# packed kernel beside the plain one of the same run.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'exit 143' TERM
trap 'sed -i "s#$root/##g" "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"; cat "$res/gpu.txt"
cmake -S . -B build/gpu-check -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
  > "$res/configure.txt" 2>&1 && cmake --build build/gpu-check -j "$(nproc)" --target ch10_packed_sequences \
  > "$res/build.txt" 2>&1
stamp "build rc $?: $(grep -c warning "$res/build.txt") warning lines"
for tag in rows8 silu8; do
  extra=(); [ "$tag" = silu8 ] && extra=(--bias --silu)
  timeout 120 ncu --csv --page raw --clock-control none --kernel-name regex:'conv_bwd_cl_staged' \
    --metrics gpu__time_duration.sum,launch__registers_per_thread,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active \
    --log-file "$res/ncu_$tag.csv" build/gpu-check/chapters/10_packed_sequences/ch10_packed_sequences --batch 8 --dim 4096 \
    --seqlen 4096 --width 4 --dtype bf16 --initial-states --seq-lens random:8 --layout channel-last \
    --direction backward --form rows --iters 1 --warmup 0 "${extra[@]}" > "$res/ncu_$tag.txt" 2>&1
  stamp "ncu $tag rc $?"; sed -i '/^==PROF==/d; /^==WARNING==/d' "$res/ncu_$tag.csv"
  python3 scripts/result_tables.py ncu "$res/ncu_$tag.csv" "$res/ncu_$tag.tsv"
done
