#!/usr/bin/env bash
# Call 2 (H100): both channel-last passes in two launches (not kept): the second launch (ClPass::mixed)
# one wave of blocks looping over the tiles, started early (programmatic dependent launch) so that
# it runs in the first launch's last wave, waiting for the first at its end; in the forward and in
# the rows backward. The forward, channel-last, 8 x 4096 x 4096 bf16 W 4 (rows with 8 documents and
# states, the states alone, no states, the varlen batch) and the backward (rows, states alone, no
# states); each launch's own duration under Nsight Compute; the tests of chapters 08 to 10. Run from
# the repository root with OUT set; everything comes back as one run.tgz.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'sed -i "s#$root/##g" "$res"/*.log "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"
b=$root/build/exp-split
cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure.log" 2>&1
cmake --build "$b" -j "$(nproc)" --target ch08_direct_forward ch09_direct_backward ch10_packed_sequences conv1d_tests_ch08 conv1d_tests_ch09 conv1d_tests_ch10 > "$res/build.log" 2>&1 || { tail -n 60 "$res/build.log"; exit 1; }
stamp build
E=$b/chapters/10_packed_sequences/ch10_packed_sequences
cuobjdump --dump-resource-usage "$E" | grep -A1 'conv_fwd_cl_tiled\|conv_bwd_cl' | c++filt > "$res/resources.txt"
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --layout channel-last --dtype bf16)
run() {  # run TAG ARGS...
  local tag=$1; shift
  "$E" "${big[@]}" "$@" --summary "$res/$tag.tsv" > "$res/$tag.log" 2>&1; stamp "$tag rc $?"
}
for d in forward backward; do
  run ${d}_rows --direction $d --form rows --seq-lens random:8 --initial-states
  run ${d}_states --direction $d --form rows --seq-lens none --initial-states
  run ${d}_nostates --direction $d --form rows --seq-lens none
done
run forward_varlen --direction forward --form varlen --seq-lens random:64 --initial-states
grep -h 'against' "$res"/*.log
ncu_one() {  # ncu_one TAG REGEX ARGS...
  local tag=$1 re=$2; shift 2
  ncu --csv --page raw --clock-control none --kernel-name regex:"$re" \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__warps_active.avg.pct_of_peak_sustained_active \
    --log-file "$res/ncu_$tag.csv" "$E" "${big[@]}" "$@" --iters 1 --warmup 0 > "$res/ncu_$tag.log" 2>&1
  sed -i '/^==PROF==/d' "$res/ncu_$tag.csv"; stamp "ncu $tag"
}
ncu_one forward_rows conv_fwd_cl --direction forward --form rows --seq-lens random:8 --initial-states
ncu_one forward_varlen conv_fwd_cl --direction forward --form varlen --seq-lens random:64 --initial-states
ncu_one backward_rows conv_bwd_cl --direction backward --form rows --seq-lens random:8 --initial-states
CONV1D_REQUIRE_GPU=1 ctest --test-dir "$b" -R 'Ch10|ch10|Ch09|ch09|Ch08|ch08' -j 4 --output-on-failure > "$res/ctest.txt" 2>&1
stamp "ctest rc $?: $(grep -E 'tests passed' "$res/ctest.txt")"
