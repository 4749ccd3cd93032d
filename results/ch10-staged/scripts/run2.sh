#!/usr/bin/env bash
# Why the staged kernel with chapter 10's policies runs slowly (run1: the states alone at 2.8 times
# the plain kernel's time, bf16): chapter 10 built alone; Nsight Compute on its channel-first
# forward, plain and packed (states alone, 8 documents a row), and on chapter 08's staged kernel at
# L = 4095. Run from the repository root with OUT set.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'sed -i "s#$root/##g" "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
b=$root/build/gpu-check
cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure.txt" 2>&1
cmake --build "$b" -j "$(nproc)" --target ch10_packed_sequences ch08_direct_forward > "$res/build.txt" 2>&1 || { tail -n 40 "$res/build.txt"; exit 1; }
stamp "build"
E8=$b/chapters/08_direct_forward/ch08_direct_forward
E10=$b/chapters/10_packed_sequences/ch10_packed_sequences
M=gpu__time_duration.sum,launch__grid_size,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,dram__bytes_read.sum,dram__bytes_write.sum,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio,smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,smsp__inst_executed_op_ldgsts.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum
for c in "states --seq-lens none" "rows --seq-lens random:8"; do
  set -- $c
  ncu --csv --page raw --clock-control none --kernel-name regex:'conv_fwd_cf_staged' --metrics $M \
    --log-file "$res/ncu_$1.csv" "$E10" --batch 8 --dim 4096 --seqlen 4096 --width 4 --dtype bf16 \
    --initial-states "${@:2}" --layout channel-first --form rows --direction forward --iters 1 --warmup 0 > "$res/ncu_$1.txt" 2>&1
  stamp "ncu $1 rc $?"
done
ncu --csv --page raw --clock-control none --kernel-name regex:'conv_fwd_cf_(staged|chunked)' --metrics $M \
  --log-file "$res/ncu_ch08_4095.csv" "$E8" --layout channel-first --variant all --batch 8 --dim 4096 --seqlen 4095 \
  --dtype bf16 --iters 1 --warmup 0 > "$res/ncu_ch08.txt" 2>&1
stamp "ncu ch08 rc $?"
cd proto && nvcc -arch=sm_90 -O3 -std=c++17 -Xcompiler -fopenmp -o staged_fwd staged_fwd.cu 2>/dev/null && ./staged_fwd 2>&1 | grep -v verify > "$res/proto.txt"
stamp "proto"
cat "$res/proto.txt"
