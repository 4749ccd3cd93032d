#!/usr/bin/env bash
# run3: chapter 10's channel-last backward on the staged kernel, its tile's span asked after the
# first copies are on their way (the tree as it is, "now"), against the same with every batch of a
# mixed tile walked with flags (../probe_flags_tile.patch, -DCLS_FLAGS_WHOLE_TILE, "flags");
# Nsight Compute on "now"'s packed and plain kernels, with and without SiLU.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'exit 143' TERM
trap 'sed -i "s#$root/##g; s#/tmp/flags-tree/##g" "$res"/*.txt "$res"/*.csv 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"; cat "$res/gpu.txt"
rm -rf /tmp/flags-tree && mkdir /tmp/flags-tree && git ls-files -z | xargs -0 cp --parents -t /tmp/flags-tree &&
  cp -r chapters/09_direct_backward/cl_staged.cuh /tmp/flags-tree/chapters/09_direct_backward/ &&
  (cd /tmp/flags-tree && git apply "$root/results/cl-staged-bwd/probe_flags_tile.patch")
stamp "flags tree rc $?"
build() {  # build TAG SOURCE "CUDA FLAGS"
  cmake -S "$2" -B "$root/build/$1" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
    -DCMAKE_CUDA_FLAGS="$3" > "$res/configure_$1.txt" 2>&1 &&
    cmake --build "$root/build/$1" -j 8 --target ch10_packed_sequences > "$res/build_$1.txt" 2>&1
  stamp "build $1 rc $?"
}
build now . "" &
build flags /tmp/flags-tree "-DCLS_FLAGS_WHOLE_TILE=1" &
wait
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --initial-states --layout channel-last
     --direction backward)
bench() {  # bench BUILD TAG DTYPE "ARGS"
  local args; read -r -a args <<< "$4"
  timeout 120 "build/$1/chapters/10_packed_sequences/ch10_packed_sequences" "${big[@]}" --dtype "$3" "${args[@]}" \
    --summary "$res/bench_$1_$2.tsv" > "$res/ch10_$1_$2.txt" 2>&1
  stamp "$1 $2 rc $?: $(grep -c FAIL "$res/ch10_$1_$2.txt") FAIL; $(awk '/^summary \(/ {s = 1; next} s && $2 ~ /^[0-9.]+$/ {printf "%s %s ms; ", $1, $4}' "$res/ch10_$1_$2.txt")"
}
for b in now flags; do
  bench "$b" rows8 bf16 "--form rows --seq-lens random:8"
  bench "$b" silu8 bf16 "--form rows --seq-lens random:8 --bias --silu"
  bench "$b" states bf16 "--form rows --seq-lens none"
  bench "$b" varlen bf16 "--form varlen --seq-lens random:64"
done
for tag in rows8 silu8; do
  extra=(); [ "$tag" = silu8 ] && extra=(--bias --silu)
  ncu --csv --page raw --clock-control none --kernel-name regex:'conv_bwd_cl_staged' \
    --metrics gpu__time_duration.sum,launch__registers_per_thread,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active \
    --log-file "$res/ncu_$tag.csv" build/now/chapters/10_packed_sequences/ch10_packed_sequences --batch 8 --dim 4096 \
    --seqlen 4096 --width 4 --dtype bf16 --initial-states --seq-lens random:8 --layout channel-last \
    --direction backward --form rows --iters 1 --warmup 0 "${extra[@]}" > "$res/ncu_$tag.txt" 2>&1
  stamp "ncu $tag rc $?"; sed -i '/^==PROF==/d; /^==WARNING==/d' "$res/ncu_$tag.csv"
done
