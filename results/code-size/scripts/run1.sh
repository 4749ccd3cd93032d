#!/usr/bin/env bash
# First call: is the channel-first rows forward waiting for instructions? The committed tree built
# once; Nsight Compute's warp states and source counters for one launch of chapter 08's plain
# kernel (EveryTap) and one of the packed kernel (TapWords), rows of 8 documents with states,
# without and with bias + SiLU; the details pages and the source pages as CSV.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'exit 143' TERM
trap 'sed -i "s#$root/##g; s#$res/#<results>/#g" "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"; cat "$res/gpu.txt"
cmake -S . -B build/rel -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
  > "$res/build.txt.configure" 2>&1 &&
  timeout 260 cmake --build build/rel -j 16 --target ch10_packed_sequences > "$res/build.txt" 2>&1
stamp "build rc $?: $(grep -c warning "$res/build.txt") warning lines"
exe=build/rel/chapters/10_packed_sequences/ch10_packed_sequences
for form in plain silu; do
  extra=""; [ $form = silu ] && extra="--bias --silu"
  for k in TapWords EveryTap; do
    timeout 60 ncu --section WarpStateStats --section SourceCounters --section InstructionStats \
      --section LaunchStats --clock-control none --kernel-name-base demangled \
      --kernel-name regex:"conv_fwd_cf_staged.*$k" --launch-count 1 -o "$res/${form}_$k" -f $exe \
      --batch 8 --dim 4096 --seqlen 4096 --width 4 --initial-states --direction forward --form rows \
      --layout channel-first --dtype bf16 --seq-lens random:8 $extra --iters 1 --warmup 0 \
      > "$res/ncu_${form}_$k.txt" 2>&1
    stamp "ncu $form $k rc $?"
    ncu --import "$res/${form}_$k.ncu-rep" --page details --csv > "$res/details_${form}_$k.csv" 2>&1
    ncu --import "$res/${form}_$k.ncu-rep" --page source --csv --print-source sass \
      > "$res/source_${form}_$k.csv" 2> "$res/source_${form}_${k}_err.txt"
    stamp "export $form $k: $(wc -l < "$res/source_${form}_$k.csv") source lines"
    gzip -9 "$res/source_${form}_$k.csv"; rm -f "$res/${form}_$k.ncu-rep"
  done
done
sed -i "s#$root/##g; s#/tmp/tmp\.[A-Za-z0-9]*#<tmp>#g" "$res"/*.csv 2>/dev/null
