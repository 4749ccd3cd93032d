#!/usr/bin/env bash
# The first call of the thirty-sixth version (run as is; before it, in results/code-size/next/): two independent patches applied to the working tree by
# this script, silu-split.patch (SiLU compiled in or out of the channel-first forward with a
# map; chapter 08's file) and bwd-tile-words.patch (the thirty-fifth version's words from one
# address in chapter 09's staged backward; chapter 09's file), against the tree as committed (a
# copy without them), built side by side; each timed in turn, three times, forward and backward,
# at 8 x 4096 x 4096 (rows of 8 documents with states, the states alone, bf16 with bias + SiLU,
# fp32; 64 documents once); then the warp states and instruction counts of the patched forward. Run from the repository root: bash results/silu-split/scripts/run6.sh
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'exit 143' TERM
trap 'sed -i "s#$root/##g; s#$res/#<results>/#g; s#/tmp/tmp\.[A-Za-z0-9]*#<tmp>#g" "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"; cat "$res/gpu.txt"
base=$(mktemp -d); tar cf - --exclude=./build --exclude=./results . | tar xf - -C "$base"
git apply results/silu-split/silu-split.patch results/silu-split/bwd-tile-words.patch &&
  stamp "patches applied to the working tree"
build() {  # dir, source, extra flags
  cmake -S "$2" -B "$1" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
    ${3:+"-DCMAKE_CUDA_FLAGS=$3"} > "$res/build_$(basename "$1").txt.configure" 2>&1 &&
    timeout 300 cmake --build "$1" -j 8 --target ch10_packed_sequences > "$res/build_$(basename "$1").txt" 2>&1
}
build "$root/build/base6" "$base" "" & build "$root/build/ss" . "" & wait
stamp "builds: $(cat "$res"/build_*.txt | grep -c ' error') error lines, $(cat "$res"/build_*.txt | grep -c warning) warning lines"
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --initial-states --direction both
     --form rows --layout channel-first)
for round in 1 2 3; do
  for cfg in rows8 states silu fp32 rows64; do
    [[ $round != 1 && $cfg == rows64 ]] && continue
    case $cfg in
      rows8) args=(--dtype bf16 --seq-lens random:8) ;;
      states) args=(--dtype bf16 --seq-lens none) ;;
      silu) args=(--dtype bf16 --seq-lens random:8 --bias --silu) ;;
      fp32) args=(--dtype fp32 --seq-lens random:8) ;;
      rows64) args=(--dtype bf16 --seq-lens random:64) ;;
    esac
    for v in base6 ss; do
      log="$res/ch10_${cfg}_${v}_$round.txt"
      timeout 60 build/$v/chapters/10_packed_sequences/ch10_packed_sequences "${big[@]}" "${args[@]}" \
        --summary "$res/bench_${cfg}_${v}_$round.tsv" > "$log" 2>&1
      stamp "$cfg $v $round rc $?: $(awk '/^summary \(/ {s = 1; next} s && $2 ~ /^[0-9.]+$/ {printf "%s %s ms; ", $1, $4}' "$log")"
    done
  done
done
exe=build/ss/chapters/10_packed_sequences/ch10_packed_sequences
for form in plain silu; do
  extra=""; [ $form = silu ] && extra="--bias --silu"
  timeout 60 ncu --section WarpStateStats --section SourceCounters --section InstructionStats \
    --section LaunchStats --clock-control none --kernel-name-base demangled \
    --kernel-name regex:"conv_fwd_cf_staged.*TapWords" --launch-count 1 -o "$res/${form}_ss" -f $exe \
    --batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 1 --warmup 0 --initial-states --direction forward \
    --form rows --layout channel-first --dtype bf16 --seq-lens random:8 $extra > "$res/ncu_${form}_ss.txt" 2>&1
  stamp "ncu $form rc $?"
  ncu --import "$res/${form}_ss.ncu-rep" --page details --csv > "$res/details_${form}_ss.csv" 2>&1
  ncu --import "$res/${form}_ss.ncu-rep" --page source --csv --print-source sass > "$res/source_${form}_ss.csv" 2>&1
  gzip -9 "$res/source_${form}_ss.csv"; rm -f "$res/${form}_ss.ncu-rep"
done
sed -i "s#$root/##g; s#/tmp/tmp\.[A-Za-z0-9]*#<tmp>#g" "$res"/*.csv 2>/dev/null
