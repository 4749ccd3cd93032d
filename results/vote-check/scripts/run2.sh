#!/usr/bin/env bash
# The warp-vote version as committed (e246aa3), second call on the machine of run1.sh (its build
# kept): the GPU check's sections for chapters 08 and 10 (benchmarks, sanitizers on awkward shapes,
# resources), then chapter 09's if there is time.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'exit 143' TERM
trap 'sed -i "s#$root/##g" "$res"/*.txt "$res"/*/*.md 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
b=$root/build/gpu-check
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"; cat "$res/gpu.txt"
for s in 48 49b 49; do
  [[ $s == 49 && $((SECONDS - start)) -gt 400 ]] && { stamp "section 49 skipped (time)"; continue; }
  BUILD_DIR=$b GPU_CHECK_STEPS=sections GPU_CHECK_SECTIONS="$s-*" scripts/gpu-check.sh "$res/section_$s" --skip-build \
    > "$res/section_$s.txt" 2>&1
  stamp "section $s rc $?: $(grep -c '| pass |' "$res/section_$s/summary.md") pass, $(grep -c '| FAIL |' "$res/section_$s/summary.md") FAIL"
done
