#!/usr/bin/env bash
# Why the words fetched with the tiles were slower on three stages too (run9): as run8.sh, on the
# tree as committed (base), three stages (s3) and the words with the tiles on three stages (tw3),
# with each stall reason a warp can have and the loads by kind. Reuses run9's builds on its warm
# machine; else builds them again.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'exit 143' TERM
trap 'sed -i "s#$root/##g; s#/tmp/probe-[a-z0-9]*/##g" "$res"/*.txt "$res"/*.csv 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"; cat "$res/gpu.txt"
declare -A src=([base]=$root [s3]=/tmp/probe-s3 [tw3]=/tmp/probe-tw3)
declare -A patch=([s3]=stages3.patch [tw3]=tile_words_3stages.patch)
for t in s3 tw3; do
  if [[ ! -d ${src[$t]}/build/probe ]]; then
    mkdir -p "${src[$t]}" && tar --exclude=./build --exclude=./.git -cf - . | tar -xf - -C "${src[$t]}"
    (cd "${src[$t]}" && git init -q && git apply "results/one-path/${patch[$t]}")
  fi
done
for t in base s3 tw3; do
  (cmake -S "${src[$t]}" -B "${src[$t]}/build/probe" -G Ninja -DCMAKE_BUILD_TYPE=Release \
     -DCMAKE_CUDA_ARCHITECTURES=native > /dev/null &&
   cmake --build "${src[$t]}/build/probe" -j 8 --target ch10_packed_sequences > "$res/build_$t.txt" 2>&1) &
done
wait
stamp "builds (up to date when run9's were kept)"
m=gpu__time_duration.sum,launch__occupancy_limit_shared_mem,launch__grid_size,launch__shared_mem_per_block_dynamic,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,sm__inst_issued.avg.pct_of_peak_sustained_active,smsp__sass_inst_executed_op_global_ld.sum,smsp__sass_inst_executed_op_shared_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio,smsp__average_warps_issue_stalled_selected_per_issue_active.ratio,smsp__average_warps_issue_stalled_membar_per_issue_active.ratio,smsp__average_warps_issue_stalled_drain_per_issue_active.ratio,smsp__average_warps_issue_stalled_branch_resolving_per_issue_active.ratio,smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio,smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio,smsp__average_warps_issue_stalled_imc_miss_per_issue_active.ratio,smsp__average_warps_issue_stalled_misc_per_issue_active.ratio,smsp__average_warps_issue_stalled_sleeping_per_issue_active.ratio,smsp__average_warps_issue_stalled_tex_throttle_per_issue_active.ratio
for t in base s3 tw3; do
  ncu --csv --page raw --clock-control none --kernel-name regex:'conv_fwd_cf_staged' --metrics $m \
    --log-file "$res/ncu_rows8_$t.csv" "${src[$t]}/build/probe/chapters/10_packed_sequences/ch10_packed_sequences" \
    --batch 8 --dim 4096 --seqlen 4096 --width 4 --dtype bf16 --initial-states --form rows --layout channel-first \
    --direction forward --seq-lens random:8 --iters 1 --warmup 0 > "$res/ncu_rows8_$t.txt" 2>&1
  rc=$?
  sed -i '/^==[A-Z]*==/d' "$res/ncu_rows8_$t.csv"
  stamp "$t rc $rc"
done
