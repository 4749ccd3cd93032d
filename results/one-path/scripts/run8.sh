#!/usr/bin/env bash
# Why the words fetched with the tiles were slower (run7): Nsight Compute on the channel-first rows
# forward with 8 documents, 8 x 4096 x 4096 bf16, the tree as committed (base) and with
# tile_words.patch (tw): duration, the blocks a multiprocessor can hold by shared memory and by
# registers, the warps active, instructions, issue slots, and the stalls at the barrier and on
# memory. On the warm machine of run7 it reuses run7's builds; else it builds them again.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'exit 143' TERM
trap 'sed -i "s#$root/##g; s#/tmp/probe-[a-z]*/##g" "$res"/*.txt "$res"/*.csv 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"; cat "$res/gpu.txt"
declare -A src=([base]=$root [tw]=/tmp/probe-tw)
if [[ ! -d ${src[tw]}/build/probe ]]; then
  mkdir -p "${src[tw]}" && tar --exclude=./build --exclude=./.git -cf - . | tar -xf - -C "${src[tw]}"
  (cd "${src[tw]}" && git init -q && git apply results/one-path/tile_words.patch)
fi
for t in base tw; do
  (cmake -S "${src[$t]}" -B "${src[$t]}/build/probe" -G Ninja -DCMAKE_BUILD_TYPE=Release \
     -DCMAKE_CUDA_ARCHITECTURES=native > /dev/null &&
   cmake --build "${src[$t]}/build/probe" -j 8 --target ch10_packed_sequences > "$res/build_$t.txt" 2>&1) &
done
wait
stamp "builds (up to date when run7's were kept)"
m=gpu__time_duration.sum,launch__occupancy_limit_shared_mem,launch__occupancy_limit_registers,launch__shared_mem_per_block_dynamic,launch__registers_per_thread,launch__grid_size,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,sm__inst_issued.avg.pct_of_peak_sustained_active,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,dram__bytes_read.sum
for t in base tw; do
  ncu --csv --page raw --clock-control none --kernel-name regex:'conv_fwd_cf_staged' --metrics $m \
    --log-file "$res/ncu_rows8_$t.csv" "${src[$t]}/build/probe/chapters/10_packed_sequences/ch10_packed_sequences" \
    --batch 8 --dim 4096 --seqlen 4096 --width 4 --dtype bf16 --initial-states --form rows --layout channel-first \
    --direction forward --seq-lens random:8 --iters 1 --warmup 0 > "$res/ncu_rows8_$t.txt" 2>&1
  rc=$?
  sed -i '/^==[A-Z]*==/d' "$res/ncu_rows8_$t.csv"
  stamp "$t rc $rc"
done
