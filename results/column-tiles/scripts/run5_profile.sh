#!/usr/bin/env bash
# Calls 6 and 7, on the machine run5.sh had just built on (build/r8o kept there): Nsight Compute's
# source counters for the states alone, one launch of each kernel, and the source pages as CSV.
# (Call 6 matched the kernels by their base name, which does not hold the policy: no kernel; call
# 7, this script, by the demangled name.)
set -u; res=$(mktemp -d); exe=build/r8o/chapters/10_packed_sequences/ch10_packed_sequences
for k in TapWords EveryTap; do
  timeout 40 ncu --section SourceCounters --section WarpStateStats --clock-control none --kernel-name-base demangled \
    --kernel-name regex:"conv_fwd_cf_staged.*$k" --launch-count 1 -o "$res/$k" -f $exe --batch 8 --dim 4096 \
    --seqlen 4096 --width 4 --initial-states --direction forward --form rows --layout channel-first --dtype bf16 \
    --seq-lens none --iters 1 --warmup 0 > "$res/ncu_$k.txt" 2>&1
  echo "ncu $k rc $?"
  ncu --import "$res/$k.ncu-rep" --page source --csv --print-source sass > "$res/source_$k.csv" 2>"$res/err_$k.txt"
  echo "export $k $(wc -l < $res/source_$k.csv)"
  gzip -9 "$res/source_$k.csv"; rm -f "$res/$k.ncu-rep"
done
sed -i "s#$res/#<results>/#g; s#$(pwd)/##g" $res/ncu_*.txt; cp $res/*.gz $res/ncu_*.txt $OUT/
