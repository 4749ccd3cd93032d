#!/usr/bin/env bash
# Probe run: chapter 10's channel-first rows backward on the staged kernel (the sixteenth
# attempt's patch) with parts switched off at run time (CONV1D_PROBE bits: 1 no flagged pass,
# 2 no flagged list, 4 no span-map bytes), timed and counted by Nsight Compute.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'sed -i "s#$root/##g" "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
b=$root/build/gpu-check
cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure.txt" 2>&1
cmake --build "$b" -j "$(nproc)" --target ch10_packed_sequences > "$res/build.txt" 2>&1 || { tail -n 40 "$res/build.txt"; exit 1; }
stamp build
nvidia-smi --query-gpu=name --format=csv,noheader > "$res/gpu.txt"
E10=$b/chapters/10_packed_sequences/ch10_packed_sequences
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --layout channel-first --form rows --direction backward --dtype bf16)
for c in "rows --seq-lens random:8 --initial-states" "states --seq-lens none --initial-states"; do
  set -- $c
  for p in 0 1 3 7; do
    CONV1D_PROBE=$p "$E10" "${big[@]}" "${@:2}" --summary "$res/bench_$1_p$p.tsv" > "$res/ch10_$1_p$p.txt" 2>&1
    stamp "$1 probe $p rc $?: $(grep -E 'whole backward' "$res/ch10_$1_p$p.txt" | tr '\n' ' ')"
  done
done
m=gpu__time_duration.sum,smsp__inst_executed.sum,sm__inst_issued.avg.pct_of_peak_sustained_active,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio,dram__bytes_read.sum,dram__bytes_write.sum
small=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 1 --warmup 0 --layout channel-first --form rows --direction backward --dtype bf16)
for c in "rows --seq-lens random:8 --initial-states" "states --seq-lens none --initial-states"; do
  set -- $c
  for p in 0 7; do
    CONV1D_PROBE=$p timeout 200 ncu --csv --page raw --clock-control none --kernel-name regex:conv_bwd_cf_staged -c 6 \
      --metrics $m "$E10" "${small[@]}" "${@:2}" > "$res/ncu_$1_p$p.csv" 2> "$res/ncu_$1_p$p.err"
    stamp "ncu $1 p$p rc $?"
  done
done
