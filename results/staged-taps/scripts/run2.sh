#!/usr/bin/env bash
# After run1 (phase A), on its warm machine: chapter 10's rows backward tests again with the span
# map's test fixed (both of its runs on cf_fused), and Nsight Compute on chapter 09's staged kernel
# in chapter 10's rows backward, bf16 8 x 4096 x 4096, 8 documents a row: the plain launch and the
# packed one (the words), each stall reason a warp can have, instructions and loads by kind.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'exit 143' TERM
trap 'sed -i "s#$root/##g" "$res"/*.txt "$res"/*.csv 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"; cat "$res/gpu.txt"
b=$root/build/probe
cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > /dev/null &&
  cmake --build "$b" -j 16 --target ch10_packed_sequences conv1d_tests_ch10 > "$res/build.txt" 2>&1
stamp "build rc $?: $(grep -c warning "$res/build.txt") warning lines"
CONV1D_REQUIRE_GPU=1 timeout 120 ctest --test-dir "$b" -R 'Ch10RowsBackward' -j 8 --output-on-failure \
  > "$res/ctest.txt" 2>&1
stamp "ctest rc $?: $(grep -E 'tests passed' "$res/ctest.txt" | tail -1)"
m=gpu__time_duration.sum,launch__registers_per_thread,launch__occupancy_limit_shared_mem,launch__occupancy_limit_registers,launch__grid_size,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,sm__inst_issued.avg.pct_of_peak_sustained_active,smsp__sass_inst_executed_op_global_ld.sum,smsp__sass_inst_executed_op_shared_ld.sum,dram__bytes.sum,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio,smsp__average_warps_issue_stalled_selected_per_issue_active.ratio,smsp__average_warps_issue_stalled_branch_resolving_per_issue_active.ratio,smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio,smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio,smsp__average_warps_issue_stalled_imc_miss_per_issue_active.ratio,smsp__average_warps_issue_stalled_misc_per_issue_active.ratio,smsp__average_warps_issue_stalled_drain_per_issue_active.ratio
ncu --csv --page raw --clock-control none --kernel-name regex:'conv_bwd_cf_staged' --launch-count 6 --metrics $m \
  --log-file "$res/ncu_rows8.csv" "$b/chapters/10_packed_sequences/ch10_packed_sequences" \
  --batch 8 --dim 4096 --seqlen 4096 --width 4 --dtype bf16 --initial-states --form rows --layout channel-first \
  --direction backward --seq-lens random:8 --iters 1 --warmup 0 > "$res/ncu_rows8.txt" 2>&1
rc=$?; sed -i '/^==[A-Z]*==/d' "$res/ncu_rows8.csv"; stamp "ncu rc $rc"
