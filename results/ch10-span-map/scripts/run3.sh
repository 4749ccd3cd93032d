#!/usr/bin/env bash
# Call 3 (H100): the GPU check's chapter 10 section (scripts/gpu-check.d/49b-chapter-10.sh: the
# benchmark report, registers, Nsight Compute, sanitizers) on the code with the span map, after
# building chapter 10 alone. Its result files replace results/gpu-check's chapter 10 files. Run
# from the repository root with OUT set; everything comes back as one run.tgz.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
b=$root/${BUILD_DIR:-build/gpu-check}
res=$(mktemp -d); start=$SECONDS
trap 'tar czf "$out/run.tgz" -C "$res" .' EXIT
cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure.log" 2>&1
cmake --build "$b" -j "$(nproc)" --target ch10_packed_sequences > "$res/build.log" 2>&1 || { tail -n 60 "$res/build.log"; exit 1; }
echo "build: $((SECONDS - start)) s, $(grep -c warning "$res/build.log") warning lines"
GPU_CHECK_STEPS=sections GPU_CHECK_SECTIONS='49b*' BUILD_DIR=$b scripts/gpu-check.sh "$res/check" --skip-build > "$res/check.log" 2>&1
echo "section rc $?"; cat "$res/check/summary.md"
grep -rl "$root" "$res" | xargs -r sed -i "s#$root/##g"
echo "done: $((SECONDS - start)) s"
