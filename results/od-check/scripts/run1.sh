#!/usr/bin/env bash
# The twenty-second version (chapter 08's cf_staged finds a tile's batch row once where the tile is
# a piece of one row), first call: every target built, every test run with CONV1D_REQUIRE_GPU=1, then
# the GPU check's chapters step for chapters 08 to 11 (default shape, odd shapes in every dtype,
# --save-npy, the four sanitizers).
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'exit 143' TERM
trap 'sed -i "s#$root/##g" "$res"/*.txt "$res"/*/*.md 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
b=$root/build/gpu-check
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"; cat "$res/gpu.txt"
cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure.txt" 2>&1
cmake --build "$b" -j "$(nproc)" -- -k 0 > "$res/build.txt" 2>&1 || { grep -B2 -A12 "error" "$res/build.txt" | head -60; }
stamp "build: $(grep -c warning "$res/build.txt") warning lines"
CONV1D_REQUIRE_GPU=1 ctest --test-dir "$b" -j 4 --output-on-failure > "$res/ctest.txt" 2>&1
stamp "ctest rc $?: $(grep -E 'tests passed' "$res/ctest.txt")"
grep -E "Failed|\*\*\*Skipped|Not Run" "$res/ctest.txt" | head
for ch in 'ch08_*' 'ch09_*' 'ch10_*' 'ch11_*'; do
  BUILD_DIR=$b GPU_CHECK_STEPS=chapters GPU_CHECK_CHAPTERS=$ch GPU_CHECK_SECTIONS=none \
    scripts/gpu-check.sh "$res/chapters_${ch%_\*}" --skip-build > "$res/chapters_${ch%_\*}.txt" 2>&1
  stamp "chapters $ch rc $?: $(grep -c '| pass |' "$res/chapters_${ch%_\*}/summary.md") pass, $(grep -c '| FAIL |' "$res/chapters_${ch%_\*}/summary.md") FAIL"
done
