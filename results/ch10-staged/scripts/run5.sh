#!/usr/bin/env bash
# Fifth call: the GPU check's section 49b (chapter 10's benchmark report, resources, Nsight Compute,
# compute-sanitizer at awkward packings) on the code of run4, unchanged. Builds chapter 10 alone.
# Run from the repository root with OUT set; everything comes back as run.tgz.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'sed -i "s#$root/##g" "$res"/*.txt "$res"/gpu-check/*.md 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
b=$root/build/gpu-check
cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure.txt" 2>&1
cmake --build "$b" -j "$(nproc)" --target ch10_packed_sequences > "$res/build.txt" 2>&1 || { tail -n 40 "$res/build.txt"; exit 1; }
stamp "build: $(grep -c warning "$res/build.txt") warning lines"
GPU_CHECK_STEPS='sections' GPU_CHECK_SECTIONS='49b*' scripts/gpu-check.sh "$res/gpu-check" --skip-build > "$res/gpu-check.txt" 2>&1
stamp "gpu-check rc $?"
cat "$res/gpu-check/summary.md"
grep -h 'against' "$res"/gpu-check/logs/*10*.log 2>/dev/null | head -40
