#!/usr/bin/env bash
# Third call: the GPU check's chapter-10 section whole, then what the first call's time limit cut
# off of chapter 09's (its last two benchmarks, the resources, Nsight Compute, the sanitizers on
# awkward shapes: section 49 from `res9=` on, put together below). Builds chapters 09 and 10 only
# where the machine does not still hold the second call's build.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
mkdir -p "$res/section_49b/logs" "$res/section_49_tail/logs"
trap 'exit 143' TERM
trap 'sed -i "s#$root/##g" "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"; cat "$res/gpu.txt"
cmake -S . -B build/gpu-check -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
  > "$res/configure.txt" 2>&1 && cmake --build build/gpu-check -j "$(nproc)" --target ch09_direct_backward \
  ch10_packed_sequences > "$res/build.txt" 2>&1
stamp "build rc $?: $(grep -c warning "$res/build.txt") warning lines"
GPU_CHECK_ARCHIVE=$res/section_49b.tgz BUILD_DIR=$root/build/gpu-check GPU_CHECK_STEPS=sections \
  GPU_CHECK_SECTIONS="49b-*" timeout 300 scripts/gpu-check.sh "$res/section_49b" --skip-build \
  > "$res/section_49b/logs/check.log" 2>&1
stamp "section 49b rc $?"; cat "$res/section_49b/summary.md"
sec=scripts/gpu-check.d/49-chapter-09.sh
{ sed -n '1,/^if \[\[ -x \$exe9 \]\]; then/p' "$sec"
  sed -n '/^  big9=/p' "$sec"
  echo '  run9 "$exe9" "$sweep9" rows_64_access_8 "${big9[@]}" --dtype bf16 --layout channel-last --variant tiled --reduction deterministic --rows 64 --access-bytes 8'
  echo '  run9 "$exe9" "$sweep9" staged_rows_64 "${big9[@]}" --dtype bf16 --layout channel-last --variant staged --reduction deterministic --rows 64'
  sed -n '/^  res9=/,$p' "$sec"
} > scripts/gpu-check.d/49t-chapter-09-tail.sh
left=$((590 - (SECONDS - start)))
GPU_CHECK_ARCHIVE=$res/section_49_tail.tgz BUILD_DIR=$root/build/gpu-check GPU_CHECK_STEPS=sections \
  GPU_CHECK_SECTIONS="49t-*" timeout "$left" scripts/gpu-check.sh "$res/section_49_tail" --skip-build \
  > "$res/section_49_tail/logs/check.log" 2>&1
stamp "section 49 tail rc $?"; cat "$res/section_49_tail/summary.md"
rm -f scripts/gpu-check.d/49t-chapter-09-tail.sh
