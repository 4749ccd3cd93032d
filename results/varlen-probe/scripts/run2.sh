#!/usr/bin/env bash
# The twentieth version (no stack frame written by every thread; a mixed tile's batches asked
# through a cursor): chapters 08 and 10's unit and CLI tests, chapter 10's channel-last forward at
# 8x4096x4096 bf16, memcheck on two packed shapes; and, in a copy with probe2.patch applied, the
# edge work's blocks at the grid's tail instead of its head (CH10_PROBE bits: 2 no edge blocks,
# 4 every span full, 16 edge blocks at the tail; 2 and 4 give wrong answers, for timing only).
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'sed -i "s#$root/##g" "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
b=$root/build/gpu-check
nvidia-smi --query-gpu=name --format=csv,noheader > "$res/gpu.txt"; cat "$res/gpu.txt"
cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure.txt" 2>&1
cmake --build "$b" -j "$(nproc)" --target ch08_direct_forward conv1d_tests_ch08 ch10_packed_sequences \
  conv1d_tests_ch10 -- -k 0 > "$res/build.txt" 2>&1 || { grep -B2 -A12 "error" "$res/build.txt" | head -60; }
stamp "build: $(grep -c warning "$res/build.txt") warning lines"
p=/tmp/probe; rm -rf $p; mkdir -p $p
tar --exclude=./build --exclude=./.git -cf - . | tar -xf - -C $p
(cd $p && git apply "$root/results/varlen-probe/probe2.patch" && \
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/probe_configure.txt" 2>&1 && \
  nice cmake --build build -j 12 --target ch10_packed_sequences > "$res/probe_build.txt" 2>&1; echo "probe build rc $?" >> "$res/probe_build.txt") &
pb=$!
CONV1D_REQUIRE_GPU=1 ctest --test-dir "$b" -R 'unit\.Ch08|unit\.Ch10|chapter\.ch08|chapter\.ch10' -j 4 --output-on-failure > "$res/ctest.txt" 2>&1
stamp "ctest rc $?: $(grep -E 'tests passed' "$res/ctest.txt")"
exe=$b/chapters/10_packed_sequences/ch10_packed_sequences
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 30 --warmup 3 --initial-states --direction forward --dtype bf16)
"$exe" "${big[@]}" --form rows --layout channel-last --seq-lens random:8 --summary "$res/bench_10.tsv" > "$res/rows.txt" 2>&1 || echo "rows FAIL"
"$exe" "${big[@]}" --form rows --layout channel-last --seq-lens none --summary "$res/bench_10.tsv" > "$res/states.txt" 2>&1 || echo "states FAIL"
"$exe" "${big[@]}" --form varlen --seq-lens random:64 --summary "$res/bench_10.tsv" > "$res/varlen.txt" 2>&1 || echo "varlen FAIL"
"$exe" "${big[@]}" --form varlen --seq-lens random:64 --bias --silu --summary "$res/bench_10.tsv" > "$res/varlen_silu.txt" 2>&1 || echo "varlen silu FAIL"
"$exe" "${big[@]}" --form rows --layout channel-last --seq-lens random:8 --bias --silu --summary "$res/bench_10.tsv" > "$res/rows_silu.txt" 2>&1 || echo "rows silu FAIL"
stamp "bench"; grep -h -E 'main kernel|registers' "$res"/rows.txt "$res"/states.txt "$res"/varlen.txt "$res"/varlen_silu.txt "$res"/rows_silu.txt
n=0
for args in "--batch 2 --dim 16 --seqlen 150 --width 4 --dtype bf16 --silu --initial-states --form rows --layout channel-last --direction forward --seq-lens 1,0,70,3,50" \
            "--batch 1 --dim 40 --seqlen 90 --width 4 --dtype bf16 --initial-states --form varlen --direction forward --seq-lens 1,0,2,3,0,84" \
            "--batch 1 --dim 64 --seqlen 700 --width 3 --dtype fp16 --initial-states --form varlen --direction forward --seq-lens random:40"; do
  compute-sanitizer --tool memcheck "$exe" $args --iters 1 --warmup 0 > "$res/memcheck_$((++n)).txt" 2>&1
  echo "memcheck $n rc $?: $(grep 'ERROR SUMMARY' "$res/memcheck_$n.txt")"
done
wait $pb; tail -n 1 "$res/probe_build.txt"; stamp "probe build"
E=$p/build/chapters/10_packed_sequences/ch10_packed_sequences
for k in 0 16 6 22 0; do
  CH10_PROBE=$k "$E" "${big[@]}" --form varlen --seq-lens random:64 --summary "$res/probe_varlen_$k.tsv" > "$res/probe_varlen_$k.txt" 2>&1
  stamp "varlen probe $k: $(grep -h 'main kernel' "$res/probe_varlen_$k.txt")"
done
for k in 0 16; do
  CH10_PROBE=$k "$E" "${big[@]}" --form rows --layout channel-last --seq-lens random:8 --summary "$res/probe_rows_$k.tsv" > "$res/probe_rows_$k.txt" 2>&1
  stamp "rows probe $k: $(grep -h 'main kernel' "$res/probe_rows_$k.txt" | tr '\n' ' ')"
done
