#!/usr/bin/env bash
# Call 4 (H100): the channel-last backward of rows in two launches (chapter 09's cl_tiled,
# ClPass::cuts then ClPass::flags): the tests of chapters 09 and 10; the channel-last rows backward
# at 8 x 4096 x 4096 W 4 (bf16: 8 documents a row with states, the states alone, no states; bias +
# SiLU; fp32), each against chapter 09's kernel in the same run; compute-sanitizer on small shapes
# of each kind of tile. Run from the repository root with OUT set; everything comes back as one
# run.tgz.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
b=$root/${BUILD_DIR:-build/gpu-check}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'sed -i "s#$root/##g" "$res"/*.log "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"
cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure.log" 2>&1
cmake --build "$b" -j "$(nproc)" --target ch10_packed_sequences conv1d_tests_ch10 ch09_direct_backward conv1d_tests_ch09 > "$res/build.log" 2>&1 || { tail -n 60 "$res/build.log"; exit 1; }
stamp "build: $(grep -c warning "$res/build.log") warning lines" | tee "$res/build_summary.txt"
E=$b/chapters/10_packed_sequences/ch10_packed_sequences
cuobjdump --dump-resource-usage "$E" | grep -A1 'conv_bwd_cl' | c++filt > "$res/resources.txt"
bench() {  # bench TAG ARGS...
  local tag=$1; shift
  "$E" "$@" --summary "$res/bench_$tag.tsv" > "$res/one.log" 2>&1 || { echo "FAIL $tag $*"; tail -5 "$res/one.log"; }
  { echo "=== $tag $*"; cat "$res/one.log"; } >> "$res/bench.log"
}
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --form rows --layout channel-last --direction backward)
bench rows "${big[@]}" --dtype bf16 --initial-states --seq-lens random:8
bench states "${big[@]}" --dtype bf16 --initial-states --seq-lens none
bench nostates "${big[@]}" --dtype bf16 --seq-lens none
bench rows_bias_silu "${big[@]}" --dtype bf16 --initial-states --seq-lens random:8 --bias --silu
bench rows_fp32 "${big[@]}" --dtype fp32 --initial-states --seq-lens random:8
stamp "bench: $(grep -c FAIL "$res/bench.log") failures"
grep -E 'against' "$res/bench.log"
CONV1D_REQUIRE_GPU=1 ctest --test-dir "$b" -R 'Ch10|ch10|Ch09|ch09' -j 4 --output-on-failure > "$res/ctest.txt" 2>&1
stamp "ctest rc $?: $(grep -E 'tests passed' "$res/ctest.txt")"
for tool in memcheck initcheck racecheck synccheck; do
  for args in "--batch 2 --dim 24 --seqlen 64 --width 2 --dtype bf16 --seq-lens 1,0,2,9,5" \
              "--batch 3 --dim 40 --seqlen 96 --width 4 --dtype fp32 --bias --silu --seq-lens random:5" \
              "--batch 2 --dim 16 --seqlen 512 --width 4 --dtype bf16 --seq-lens random:1" \
              "--batch 2 --dim 16 --seqlen 300 --width 3 --dtype fp16 --silu --seq-lens none"; do
    [[ $tool == racecheck || $tool == synccheck ]] && [[ $args == *none* || $args == *fp32* ]] && continue
    # shellcheck disable=SC2086
    compute-sanitizer --tool $tool --error-exitcode 9 "$E" $args --initial-states --form rows \
      --layout channel-last --direction backward --iters 1 --warmup 0 > "$res/one.log" 2>&1
    rc=$?
    echo "$tool rc $rc [$args] $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$res/one.log" | tail -1)" | tee -a "$res/sanitizers.txt"
    [[ $rc == 0 ]] || head -n 40 "$res/one.log" >> "$res/sanitizer_failures.log"
  done
done
stamp done
