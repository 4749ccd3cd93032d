#!/usr/bin/env bash
# The GPU check (H100) of the fourteenth version as committed (chapter 10's channel-first packed
# backward, 16-bit storage without SiLU: 8 lanes a row, four rows a warp; chapters 08 to 10 and
# what they share): build those chapters, chapters 05 and 06 and their tests; the tests of
# chapters 08 to 10; then the GPU check's chapters step for chapters 08 to 10 (every dtype and odd
# shape, --save-npy) and its section 49b (chapter 10: benchmarks, resources, Nsight Compute,
# compute-sanitizer); PART=b runs sections 48 and 49 instead. Last, chapter 10's channel-first
# rows backward and the states alone in fp16, and both with SiLU in bf16. Run from the repository
# root with OUT set; everything comes back as run.tgz.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'sed -i "s#$root/##g" "$res"/*.txt "$res"/gpu-check/*.md 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
b=$root/build/gpu-check
cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure.txt" 2>&1
cmake --build "$b" -j "$(nproc)" --target ch05_wmma_gemm ch06_channel_last_backward ch08_direct_forward ch09_direct_backward ch10_packed_sequences conv1d_tests_ch08 conv1d_tests_ch09 conv1d_tests_ch10 > "$res/build.txt" 2>&1 || { tail -n 40 "$res/build.txt"; exit 1; }
stamp "build: $(grep -c warning "$res/build.txt") warning lines"
part=${PART:-a}
if [[ $part == a ]]; then
CONV1D_REQUIRE_GPU=1 ctest --test-dir "$b" -R 'Ch10|ch10|Ch09|ch09|Ch08|ch08' -j 4 --output-on-failure > "$res/ctest.txt" 2>&1
stamp "ctest rc $?: $(grep -E 'tests passed' "$res/ctest.txt")"
GPU_CHECK_STEPS='chapters sections' GPU_CHECK_CHAPTERS='ch[01][089]_*' GPU_CHECK_SECTIONS='49b*' \
  scripts/gpu-check.sh "$res/gpu-check" --skip-build > "$res/gpu-check.txt" 2>&1
else
GPU_CHECK_STEPS='sections' GPU_CHECK_SECTIONS='4[89]-*' \
  scripts/gpu-check.sh "$res/gpu-check" --skip-build > "$res/gpu-check.txt" 2>&1
fi
stamp "gpu-check rc $?"
grep -v '| pass |$' "$res/gpu-check/summary.md" | head -40
grep -h 'against\|% of the copy' "$res"/gpu-check/logs/*10*.log 2>/dev/null | head -40
grep -c '| pass |' "$res/gpu-check/summary.md"
# fp16 (not in the benchmark report), and SiLU with the states alone: the channel-first backward
# against chapter 09's kernel.
E=$b/chapters/10_packed_sequences/ch10_packed_sequences
for c in "rows fp16 --seq-lens random:8" "states fp16 --seq-lens none" "states_silu bf16 --seq-lens none --bias --silu"; do
  set -- $c
  "$E" --batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --layout channel-first \
    --direction backward --initial-states --form rows --dtype $2 "${@:3}" \
    --summary "$res/extra_$1.tsv" > "$res/extra_$1.txt" 2>&1
  stamp "$1 rc $?: $(grep 'whole backward' "$res/extra_$1.txt" | head -n 2 | tr -s ' ' | tr '\n' ' ')"
done
