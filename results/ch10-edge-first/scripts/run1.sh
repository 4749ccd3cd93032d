#!/usr/bin/env bash
# Call 1 (H100): the channel-last forward with its edge work in threads of its own at the head of
# the grid (edge_work) instead of in the tiles that hold a sequence's start (tile_edges). The
# forward, channel-last, 8 x 4096 x 4096 bf16 W 4: rows with 8 documents and states, the states
# alone, no states, the varlen batch (64 sequences); each convolution's duration under Nsight
# Compute; the tests of chapters 08 to 10. Run from the repository root with OUT set; everything
# comes back as one run.tgz.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'sed -i "s#$root/##g" "$res"/*.log "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"
b=$root/build/exp-edge
cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure.log" 2>&1
cmake --build "$b" -j "$(nproc)" --target ch08_direct_forward ch09_direct_backward ch10_packed_sequences conv1d_tests_ch08 conv1d_tests_ch09 conv1d_tests_ch10 > "$res/build.log" 2>&1 || { tail -n 40 "$res/build.log"; exit 1; }
stamp build
E=$b/chapters/10_packed_sequences/ch10_packed_sequences
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --layout channel-last --dtype bf16)
run() {  # run TAG ARGS...
  local tag=$1; shift
  "$E" "${big[@]}" "$@" --summary "$res/$tag.tsv" > "$res/$tag.log" 2>&1; stamp "$tag rc $?"
}
for rep in 1 2; do
  run forward_rows_$rep --direction forward --form rows --seq-lens random:8 --initial-states
  run forward_states_$rep --direction forward --form rows --seq-lens none --initial-states
  run forward_nostates_$rep --direction forward --form rows --seq-lens none
  run forward_varlen_$rep --direction forward --form varlen --seq-lens random:64 --initial-states
done
for f in rows varlen; do
  sl=random:8; [[ $f == varlen ]] && sl=random:64
  ncu --csv --page raw --clock-control none --kernel-name regex:conv_fwd_cl \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum \
    --log-file "$res/ncu_$f.csv" "$E" "${big[@]}" --direction forward --form $f --seq-lens $sl --initial-states --iters 1 --warmup 0 > "$res/ncu_$f.log" 2>&1
  sed -i '/^==PROF==/d' "$res/ncu_$f.csv"
done
stamp ncu
for f in "$res"/*.log; do grep -H 'against\|= .*% of the copy' "$f" | tail -n 2; done | sed "s#$res/##"
CONV1D_REQUIRE_GPU=1 ctest --test-dir "$b" -R 'Ch10|ch10|Ch09|ch09|Ch08|ch08' -j 4 --output-on-failure > "$res/ctest.txt" 2>&1
stamp "ctest rc $?: $(grep -E 'tests passed' "$res/ctest.txt")"
