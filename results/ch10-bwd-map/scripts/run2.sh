#!/usr/bin/env bash
# Call 2 (H100): the spans asked before the first store (chapter 09's cf_fused for every policy,
# chapter 08's cf_chunked for chapter 10's), the span map in the backward as in call 1. Tests of
# chapters 08, 09 and 10; registers; the channel-first rows forward and backward at 8 x 4096 x 4096
# bf16 (8 documents a row, states and their gradients; the states alone) with --span-map off and
# on, interleaved, twice. Run from the repository root with OUT set; one run.tgz back.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
b=$root/${BUILD_DIR:-build/gpu-check}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'sed -i "s#$root/##g" "$res"/*.log "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"
cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure.log" 2>&1
cmake --build "$b" -j "$(nproc)" --target ch10_packed_sequences conv1d_tests_ch10 ch09_direct_backward conv1d_tests_ch09 ch08_direct_forward conv1d_tests_ch08 > "$res/build.log" 2>&1 || { tail -n 60 "$res/build.log"; exit 1; }
stamp "build: $(grep -c warning "$res/build.log") warning lines" | tee "$res/build_summary.txt"
E=$b/chapters/10_packed_sequences/ch10_packed_sequences
cuobjdump --dump-resource-usage "$E" | grep -A1 'conv_bwd_cf\|conv_fwd_cf_chunked\|make_span_map' | c++filt > "$res/resources.txt"
bench() {  # bench TAG ARGS...
  local tag=$1; shift
  "$E" "$@" --summary "$res/bench_$tag.tsv" > "$res/one.log" 2>&1 || { echo "FAIL $tag $*"; tail -5 "$res/one.log"; }
  { echo "=== $tag $*"; cat "$res/one.log"; } >> "$res/bench.log"
}
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --initial-states --dtype bf16 --form rows --layout channel-first)
for rep in 1 2; do
  for lens in random:8 none; do
    tag=rows; [[ $lens == none ]] && tag=states
    bench "${tag}_off" "${big[@]}" --seq-lens $lens --span-map off
    bench "${tag}_on" "${big[@]}" --seq-lens $lens --span-map on
  done
done
stamp bench
CONV1D_REQUIRE_GPU=1 ctest --test-dir "$b" -R 'Ch10|ch10|Ch09|ch09|Ch08|ch08' -j 4 --output-on-failure > "$res/ctest.txt" 2>&1
stamp "ctest rc $?: $(grep -E 'tests passed' "$res/ctest.txt")"
