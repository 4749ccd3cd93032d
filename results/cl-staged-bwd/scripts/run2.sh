#!/usr/bin/env bash
# run2: chapter 10's channel-last backward on chapter 09's staged kernel (its plain baseline, the
# rows and the varlen batches), against the same call's cl_tiled (--cl-backward tiled). Chapters
# 09 and 10 and their tests built; the tests; chapter 10's channel-last backward at 8 x 4096 x 4096
# W 4 in both kernels; chapter 09's channel-last report (cl_tiled now walks through the step it
# shares with cl_staged); compute-sanitizer's four tools on chapter 10's staged backward.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'exit 143' TERM
trap 'sed -i "s#$root/##g" "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"; cat "$res/gpu.txt"
cmake -S . -B build/cls -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
  > "$res/configure.txt" 2>&1 &&
  cmake --build build/cls -j "$(nproc)" --target ch09_direct_backward conv1d_tests_ch09 ch10_packed_sequences \
  conv1d_tests_ch10 > "$res/build.txt" 2>&1
stamp "build rc $?: $(grep -c warning "$res/build.txt") warning lines"
ch10=build/cls/chapters/10_packed_sequences/ch10_packed_sequences
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --initial-states --layout channel-last
     --direction backward)
bench() {  # bench KERNEL TAG DTYPE "ARGS"
  local args; read -r -a args <<< "$4"
  timeout 120 "$ch10" "${big[@]}" --cl-backward "$1" --dtype "$3" "${args[@]}" \
    --summary "$res/bench_$1_$2.tsv" > "$res/ch10_$1_$2.txt" 2>&1
  stamp "$1 $2 rc $?: $(grep -c FAIL "$res/ch10_$1_$2.txt") FAIL; $(awk '/^summary \(/ {s = 1; next} s && $2 ~ /^[0-9.]+$/ {printf "%s %s ms; ", $1, $4}' "$res/ch10_$1_$2.txt")"
}
for k in staged tiled; do
  bench "$k" rows8 bf16 "--form rows --seq-lens random:8"
  bench "$k" states bf16 "--form rows --seq-lens none"
  bench "$k" varlen bf16 "--form varlen --seq-lens random:64"
  bench "$k" silu8 bf16 "--form rows --seq-lens random:8 --bias --silu"
  bench "$k" fp32rows8 fp32 "--form rows --seq-lens random:8"
done
timeout 60 build/cls/chapters/09_direct_backward/ch09_direct_backward --batch 8 --dim 4096 --seqlen 4096 --width 4 \
  --iters 20 --warmup 3 --layout channel-last --reduction deterministic --summary "$res/bench09.tsv" > "$res/ch09.txt" 2>&1
stamp "ch09 rc $?: $(grep -c PASS "$res/ch09.txt") PASS, $(grep -c FAIL "$res/ch09.txt") FAIL"
CONV1D_REQUIRE_GPU=1 timeout 300 ctest --test-dir build/cls -R 'Ch09|Ch10|ch09|ch10' -j 8 --output-on-failure \
  > "$res/ctest.txt" 2>&1
stamp "ctest rc $?: $(grep -E 'tests passed' "$res/ctest.txt" | tail -1)"
for tool in memcheck racecheck initcheck synccheck; do
  timeout 100 compute-sanitizer --tool "$tool" --error-exitcode 9 "$ch10" --layout channel-last --direction backward \
    --form both --batch 3 --dim 264 --seqlen 300 --seq-lens random:5 --initial-states --bias --silu --iters 1 \
    --warmup 0 > "$res/san_$tool.txt" 2>&1
  stamp "$tool rc $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$res/san_$tool.txt" | tail -1)"
done
