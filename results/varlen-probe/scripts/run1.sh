#!/usr/bin/env bash
# Verifies the committed code of chapters 08 and 10 (their unit and CLI tests, the GPU check's
# section 48) and, in a copy with results/varlen-probe/probe.patch applied, times chapter 10's
# varlen forward with parts switched off at run time (CH10_PROBE bits: 1 no edge work, 2 no edge
# blocks, 4 every span full, 8 a mixed tile's batches full; wrong answers, for timing only).
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'sed -i "s#$root/##g" "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
b=$root/build/gpu-check
nvidia-smi --query-gpu=name --format=csv,noheader > "$res/gpu.txt"; cat "$res/gpu.txt"
cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure.txt" 2>&1
cmake --build "$b" -j "$(nproc)" --target ch08_direct_forward conv1d_tests_ch08 ch10_packed_sequences \
  conv1d_tests_ch10 ch05_wmma_gemm -- -k 0 > "$res/build.txt" 2>&1 || { grep -B2 -A12 "error" "$res/build.txt" | head -60; }
stamp "build: $(grep -c warning "$res/build.txt") warning lines"
# The probe's copy, built while the tests run.
p=/tmp/probe; rm -rf $p; mkdir -p $p
tar --exclude=./build --exclude=./.git -cf - . | tar -xf - -C $p
(cd $p && git apply "$root/results/varlen-probe/probe.patch" && \
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/probe_configure.txt" 2>&1 && \
  nice cmake --build build -j 12 --target ch10_packed_sequences > "$res/probe_build.txt" 2>&1; echo "probe build rc $?" >> "$res/probe_build.txt") &
pb=$!
CONV1D_REQUIRE_GPU=1 ctest --test-dir "$b" -R 'unit\.Ch08|unit\.Ch10|chapter\.ch08|chapter\.ch10' -j 4 --output-on-failure > "$res/ctest.txt" 2>&1
stamp "ctest rc $?: $(grep -E 'tests passed' "$res/ctest.txt")"
BUILD_DIR=$b GPU_CHECK_STEPS=sections GPU_CHECK_SECTIONS='48*' timeout 300 scripts/gpu-check.sh "$res/gpu-check" --skip-build > "$res/gpu-check48.txt" 2>&1
stamp "section 48 rc $?"; cat "$res/gpu-check/summary.md"
wait $pb; tail -n 1 "$res/probe_build.txt"; stamp "probe build"
E=$p/build/chapters/10_packed_sequences/ch10_packed_sequences
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 30 --warmup 3 --initial-states --direction forward --dtype bf16)
"$E" "${big[@]}" --form rows --layout channel-last --seq-lens random:8 --summary "$res/bench_rows.tsv" > "$res/rows.txt" 2>&1 || echo "rows FAIL"
for k in 0 1 2 8 4 6 0; do
  CH10_PROBE=$k "$E" "${big[@]}" --form varlen --seq-lens random:64 --summary "$res/bench_p$k.tsv" > "$res/varlen_p$k.txt" 2>&1
  stamp "probe $k: $(grep -h 'main kernel' "$res/varlen_p$k.txt")"
done
grep -h 'main kernel' "$res/rows.txt"
