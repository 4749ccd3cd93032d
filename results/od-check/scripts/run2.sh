#!/usr/bin/env bash
# The twenty-second version, the GPU check's sections named as arguments (48: chapter 08, 49b:
# chapter 10; benchmarks, Nsight Compute, resources, sanitizers on awkward shapes). On a fresh machine
# it first builds the targets they run (chapters 05, 08, 09 and 10).
#   results/od-check/scripts/run2.sh 48 49b
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'exit 143' TERM
trap 'sed -i "s#$root/##g" "$res"/*.txt "$res"/*/*.md 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
b=$root/build/gpu-check
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"; cat "$res/gpu.txt"
if [[ ! -f $b/build.ninja ]]; then
  cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure.txt" 2>&1
  cmake --build "$b" -j "$(nproc)" --target ch05_wmma_gemm ch08_direct_forward ch09_direct_backward \
    ch10_packed_sequences -- -k 0 > "$res/build.txt" 2>&1 || { grep -B2 -A12 "error" "$res/build.txt" | head -60; }
  stamp "build: $(grep -c warning "$res/build.txt") warning lines"
fi
for s in "$@"; do
  BUILD_DIR=$b GPU_CHECK_STEPS=sections GPU_CHECK_SECTIONS="$s-*" scripts/gpu-check.sh "$res/section_$s" --skip-build \
    > "$res/section_$s.txt" 2>&1
  stamp "section $s rc $?: $(grep -c '| pass |' "$res/section_$s/summary.md") pass, $(grep -c '| FAIL |' "$res/section_$s/summary.md") FAIL"
done
