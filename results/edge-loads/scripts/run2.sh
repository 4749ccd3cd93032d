#!/usr/bin/env bash
# Second call: the GPU check's chapter-10 section whole (benchmarks, goals, resources, sanitizers)
# on the working tree with edge_loads.patch, then Nsight Compute's source counters for the packed
# rows' channel-last backward kernel (where its instructions and stalls are, by SASS line).
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
mkdir -p "$res/section_49b/logs"
trap 'exit 143' TERM
trap 'sed -i "s#$root/##g" "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"; cat "$res/gpu.txt"
cmake -S . -B build/gpu-check -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
  > "$res/configure.txt" 2>&1 && cmake --build build/gpu-check -j "$(nproc)" --target ch10_packed_sequences \
  > "$res/build.txt" 2>&1
stamp "build rc $?: $(grep -c warning "$res/build.txt") warning lines"
GPU_CHECK_ARCHIVE=$res/section_49b.tgz BUILD_DIR=$root/build/gpu-check GPU_CHECK_STEPS=sections \
  GPU_CHECK_SECTIONS="49b-*" timeout 280 scripts/gpu-check.sh "$res/section_49b" --skip-build \
  > "$res/section_49b/logs/check.log" 2>&1
stamp "section 49b rc $?"; cat "$res/section_49b/summary.md"
exe=build/gpu-check/chapters/10_packed_sequences/ch10_packed_sequences
left=$((585 - (SECONDS - start)))
timeout "$left" ncu --set basic --section SourceCounters --section WarpStateStats --clock-control none \
  --kernel-name regex:'conv_bwd_cl_staged' --launch-count 2 -o "$res/rows8" -f "$exe" --batch 8 --dim 4096 \
  --seqlen 4096 --width 4 --dtype bf16 --initial-states --seq-lens random:8 --layout channel-last \
  --direction backward --form rows --iters 1 --warmup 0 > "$res/ncu_rows8.txt" 2>&1
stamp "ncu rc $?"
ncu --import "$res/rows8.ncu-rep" --page source --csv --print-source sass > "$res/ncu_rows8_source.csv" 2> "$res/ncu_source_err.txt"
stamp "source page rc $?: $(wc -l < "$res/ncu_rows8_source.csv") lines"
gzip -9 "$res/ncu_rows8_source.csv"; rm -f "$res/rows8.ncu-rep"
