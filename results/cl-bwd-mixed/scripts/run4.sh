#!/usr/bin/env bash
# The zero row as committed (zero_row.patch; the step vote not kept): build chapter 10, then the GPU
# check's chapter-10 section (benchmarks, goals, Nsight Compute, sanitizers: with a new shape for
# the channel-last rows backward). The tests of chapters 09 and 10 ran on this code in run2.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'exit 143' TERM
trap 'sed -i "s#$root/##g" "$res"/*.txt "$res"/*/*.md 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
b=$root/build/gpu-check
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"; cat "$res/gpu.txt"
cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure.txt" 2>&1
cmake --build "$b" -j "$(nproc)" --target ch10_packed_sequences > "$res/build.txt" 2>&1
stamp "build rc $?: $(grep -c warning "$res/build.txt") warning lines, $(grep -c error "$res/build.txt") error lines"
BUILD_DIR=$b GPU_CHECK_STEPS=sections GPU_CHECK_SECTIONS="49b-*" scripts/gpu-check.sh "$res/section_49b" --skip-build \
  > "$res/section_49b.txt" 2>&1
stamp "section 49b rc $?: $(grep -c '| pass |' "$res/section_49b/summary.md") pass, $(grep -c '| FAIL |' "$res/section_49b/summary.md") FAIL"
