#!/usr/bin/env bash
# Second call: every target built again (a fresh machine); chapters 09 and 10's tests on the
# change under test (chapter 10's mixed channel-last backward tiles asking their flags once, by the
# warp's lanes together); the tests the first call's time limit cut off; chapter 10's channel-last
# backward at 8 x 4096 x 4096 bf16 (rows, states alone, rows with SiLU, varlen).
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'exit 143' TERM
trap 'sed -i "s#$root/##g" "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"; cat "$res/gpu.txt"
cmake -S . -B build/gpu-check -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
  > "$res/configure.txt" 2>&1 && cmake --build build/gpu-check -j "$(nproc)" -- -k 0 > "$res/build.txt" 2>&1
stamp "build rc $?: $(grep -c warning "$res/build.txt") warning lines"
exe=build/gpu-check/chapters/10_packed_sequences/ch10_packed_sequences
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --initial-states --dtype bf16
     --direction backward)
bench() {  # bench TAG ARGS...
  timeout 60 "$exe" "${big[@]}" "${@:2}" --summary "$res/bench_$1.tsv" > "$res/bench_$1.txt" 2>&1
  stamp "bench $1 rc $?: $(grep -c PASS "$res/bench_$1.txt") PASS, $(grep -c FAIL "$res/bench_$1.txt") FAIL"
}
bench rows --form rows --layout channel-last --seq-lens random:8
bench states --form rows --layout channel-last --seq-lens none
bench varlen --form varlen --seq-lens random:64
bench rows_silu --form rows --layout channel-last --seq-lens random:8 --bias --silu
CONV1D_REQUIRE_GPU=1 timeout 200 ctest --test-dir build/gpu-check -R 'Ch09|Ch10|ch09|ch10' -j 12 \
  --output-on-failure > "$res/ctest_ch09_ch10.txt" 2>&1
stamp "ctest ch09+ch10 rc $?: $(grep -E 'tests passed' "$res/ctest_ch09_ch10.txt" | tail -1); $(grep -cE '\*\*\*Skipped|Not Run' "$res/ctest_ch09_ch10.txt") skipped"
left=$((590 - (SECONDS - start)))
CONV1D_REQUIRE_GPU=1 timeout "$left" ctest --test-dir build/gpu-check -j 8 --output-on-failure \
  -R 'bench_host_transpose|bench_reference|chapter\.ch1[01]_|docs\.in_sync|python\.|scripts\.ch10_goals|tour\.table_aligned|ReferenceBackward\.MatchesFinite' \
  -E 'chapter\.ch10_packed_sequences\.(bf16|fp16|fp32)\.default' > "$res/ctest_rest.txt" 2>&1
stamp "ctest rest rc $?: $(grep -E 'tests passed' "$res/ctest_rest.txt" | tail -1)"
