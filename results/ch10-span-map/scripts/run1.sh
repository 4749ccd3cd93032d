#!/usr/bin/env bash
# Call 1 (H100): chapter 10's channel-first rows forward with the span map (span_map.cuh,
# cf_mixed_vectors.cuh) against the same without it (--span-map off) and chapter 08's kernel.
# Builds chapters 08 and 10 with their tests, runs the tests, the registers of the kernels, the
# rows forward at 8 x 4096 x 4096 bf16 (8 documents a row and states; states alone), map off and
# on interleaved, twice, then compute-sanitizer's four tools on the map's path (rows of a length
# the vector divides). Run from the repository root with OUT set; everything comes back as one
# run.tgz.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
b=$root/${BUILD_DIR:-build/gpu-check}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'sed -i "s#$root/##g" "$res"/*.log "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"
cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure.log" 2>&1
cmake --build "$b" -j "$(nproc)" --target ch10_packed_sequences conv1d_tests_ch10 ch08_direct_forward conv1d_tests_ch08 > "$res/build.log" 2>&1 || { tail -n 60 "$res/build.log"; exit 1; }
stamp "build: $(grep -c warning "$res/build.log") warning lines" | tee "$res/build_summary.txt"
E=$b/chapters/10_packed_sequences/ch10_packed_sequences
cuobjdump --dump-resource-usage "$E" | grep -A1 'conv_fwd_cf_chunked\|make_span_map\|cf_mixed_vectors\|cf_row_edges' |
  c++filt > "$res/resources.txt"
bench() {  # bench TAG ARGS...
  local tag=$1; shift
  "$E" "$@" --summary "$res/bench_$tag.tsv" > "$res/one.log" 2>&1 || { echo "FAIL $tag $*"; tail -5 "$res/one.log"; }
  { echo "=== $tag $*"; cat "$res/one.log"; } >> "$res/bench.log"
}
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --initial-states --dtype bf16 --form rows --layout channel-first --direction forward)
for rep in 1 2; do
  for m in off on; do
    bench rows "${big[@]}" --seq-lens random:8 --span-map $m
    bench states "${big[@]}" --seq-lens none --span-map $m
  done
done
bench rows_bias_silu "${big[@]}" --seq-lens random:8 --bias --silu
stamp bench
CONV1D_REQUIRE_GPU=1 ctest --test-dir "$b" -R 'Ch10|ch10|Ch08|ch08' -j 4 --output-on-failure > "$res/ctest.txt" 2>&1
stamp "ctest rc $?: $(grep -E 'tests passed' "$res/ctest.txt")"
: > "$res/sanitizers.txt"
for shape in "--batch 3 --dim 37 --seqlen 64 --width 3 --bias --silu --dtype bf16 --initial-states --seq-lens random:9" \
             "--batch 2 --dim 40 --seqlen 12 --width 4 --dtype fp32 --initial-states --seq-lens 1,0,2,3,1" \
             "--batch 2 --dim 16 --seqlen 48 --width 4 --dtype fp16 --initial-states --seq-lens none --chunks 3"; do
  for tool in memcheck racecheck initcheck synccheck; do
    # shellcheck disable=SC2086  # $shape is a list of flags
    compute-sanitizer --tool $tool --error-exitcode 99 "$E" $shape --layout channel-first --form rows --iters 1 --warmup 0 > "$res/one.log" 2>&1
    echo "$tool rc=$? | $shape | $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$res/one.log" | tail -n1)" | tee -a "$res/sanitizers.txt"
    { echo "=== $tool $shape"; cat "$res/one.log"; } >> "$res/sanitizers.log"
  done
done
stamp done
