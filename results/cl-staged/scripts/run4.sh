#!/usr/bin/env bash
# The GPU check's chapter-10 section on run3's build (chapter 10's channel-last forward on chapter
# 08's staged kernel; --cl-forward tiled beside it). run.tgz comes back.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'sed -i "s#$root/##g" "$res"/*.txt "$res"/gpu-check/*.md 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
b=$root/build/gpu-check
nvidia-smi --query-gpu=name --format=csv,noheader > "$res/gpu.txt"; cat "$res/gpu.txt"
cmake --build "$b" -j "$(nproc)" --target ch10_packed_sequences > "$res/build.txt" 2>&1
stamp "build rc $?"
GPU_CHECK_STEPS='sections' GPU_CHECK_SECTIONS='49b*' scripts/gpu-check.sh "$res/gpu-check" --skip-build > "$res/gpu-check.txt" 2>&1
stamp "gpu-check rc $?"
grep -E "bench|sanitizer|registers|FAIL" "$res/gpu-check/summary.md" | cut -c1-250
awk -F'\t' '/cl_|cf_packed|cf_plain/' "$res/gpu-check/results/bench_10_kernels.tsv" | cut -f3,4,5,8,11
