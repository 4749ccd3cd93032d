#!/usr/bin/env bash
# Third call (H100 or H200): the staged forward rewritten lean (tiles follow rows, one filter a
# tile, a word of taps a vector; chapter 10's rows forward with a map of those words): build
# chapters 08 and 10 and the tests of chapters 08, 10 and 11; run those tests; compute-sanitizer
# (memcheck, racecheck, initcheck, synccheck) on the staged kernel's unit tests and both chapters
# at awkward shapes; then chapter 08 at its goal shapes and chapter 10's channel-first forward at
# 8 x 4096 x 4096 (8 and 64 documents a row, states alone; bf16, fp32, bf16 with bias and SiLU),
# twice. Run from the repository root with OUT set; everything comes back as run.tgz.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'sed -i "s#$root/##g" "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
b=$root/build/gpu-check
cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure.txt" 2>&1
cmake --build "$b" -j "$(nproc)" --target ch08_direct_forward ch10_packed_sequences conv1d_tests_ch08 conv1d_tests_ch10 conv1d_tests_ch11 > "$res/build.txt" 2>&1 || { tail -n 40 "$res/build.txt"; exit 1; }
stamp "build: $(grep -c warning "$res/build.txt") warning lines"
nvidia-smi --query-gpu=name --format=csv,noheader > "$res/gpu.txt"
CONV1D_REQUIRE_GPU=1 ctest --test-dir "$b" -R 'unit\.Ch08|unit\.Ch10|unit\.Ch11|chapter\.ch08|chapter\.ch10' -j 4 --output-on-failure > "$res/ctest.txt" 2>&1
stamp "ctest rc $?: $(grep -E 'tests passed' "$res/ctest.txt")"
E8=$b/chapters/08_direct_forward/ch08_direct_forward
E10=$b/chapters/10_packed_sequences/ch10_packed_sequences
T8=$b/tests/conv1d_tests_ch08
T10=$b/tests/conv1d_tests_ch10
for tool in memcheck racecheck initcheck synccheck; do
  {
    compute-sanitizer --tool $tool --error-exitcode 9 "$T8" --gtest_filter='*Staged*'
    compute-sanitizer --tool $tool --error-exitcode 9 "$T10" --gtest_filter='Ch10Rows.SpanMapGivesTheSameBits'
    compute-sanitizer --tool $tool --error-exitcode 9 "$E8" --variant staged --batch 2 --dim 37 --seqlen 67 --width 3 --dtype fp32 --bias --silu --iters 1 --warmup 0
    compute-sanitizer --tool $tool --error-exitcode 9 "$E8" --variant staged --batch 3 --dim 5 --seqlen 5 --width 4 --dtype bf16 --iters 1 --warmup 0
    compute-sanitizer --tool $tool --error-exitcode 9 "$E10" --layout channel-first --direction forward --batch 2 --dim 24 --seqlen 64 --width 4 --dtype bf16 --initial-states --seq-lens 1,0,2,9,5 --iters 1 --warmup 0
    compute-sanitizer --tool $tool --error-exitcode 9 "$E10" --layout channel-first --direction forward --batch 3 --dim 37 --seqlen 5 --width 3 --dtype fp32 --bias --silu --initial-states --seq-lens random:4 --iters 1 --warmup 0
  } > "$res/sanitizer_$tool.txt" 2>&1
  stamp "$tool rc $?: $(grep -cE '(ERROR|RACECHECK) SUMMARY: 0 (errors|hazards)' "$res/sanitizer_$tool.txt") clean summaries of 6, $(grep -E 'SUMMARY: [1-9]' "$res/sanitizer_$tool.txt" | head -n 2 | tr '\n' ' ')"
done
for rep in 1 2; do
  for shape in "8 4096 4096 bf16" "8 4096 4096 fp32" "8 4096 4096 fp16" "32 2048 512 bf16" "1 4096 16384 bf16" "8 4096 4095 bf16" "4 64 1024 bf16"; do
    set -- $shape
    "$E8" --layout channel-first --batch $1 --dim $2 --seqlen $3 --dtype $4 --iters 20 --warmup 3 \
      --summary "$res/bench_08_$rep.tsv" > "$res/ch08_${1}x${2}x${3}_${4}_$rep.txt" 2>&1
    stamp "ch08 $shape rc $?: $(grep -E '^  cf_(staged|chunked)' "$res/ch08_${1}x${2}x${3}_${4}_$rep.txt" | tr -s ' ' | tr '\n' ' ')"
  done
  "$E8" --layout channel-first --batch 8 --dim 4096 --seqlen 4096 --dtype bf16 --bias --silu --iters 20 --warmup 3 \
    --summary "$res/bench_08_$rep.tsv" > "$res/ch08_silu_$rep.txt" 2>&1
  for c in "rows bf16 --seq-lens random:8" "states bf16 --seq-lens none" "rows_fp32 fp32 --seq-lens random:8" "rows_silu bf16 --seq-lens random:8 --bias --silu" "rows64 bf16 --seq-lens random:64"; do
    set -- $c
    "$E10" --batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --layout channel-first \
      --direction forward --initial-states --form rows --dtype $2 "${@:3}" \
      --summary "$res/bench_10_$1_$rep.tsv" > "$res/ch10_$1_$rep.txt" 2>&1
    stamp "ch10 $1 rc $?: $(grep 'against' "$res/ch10_$1_$rep.txt" | tr '\n' ' ')"
  done
done
