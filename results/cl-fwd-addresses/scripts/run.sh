#!/usr/bin/env bash
# Prepared, not yet run (README.md beside it has the predictions). Chapter 08's channel-last
# forwards with their rows' addresses by sums (addresses.patch), against the tree without it
# (old: the patch not applied): built side by side (chapter 08 and chapter 10), timed in turn in
# two rounds, each run verified against fp64 — chapter 10's channel-last forward (rows with 8
# documents and states, the states alone, varlen), chapter 08's channel-last staged and tiled
# kernels at 8 x 4096 x 4096 bf16 and fp32 — then, for the next look at the channel-first
# backward, one profiled launch each of its plain and packed kernels, and chapters 08's and 10's
# tests on the new tree.
# Run from the repository root with OUT set (about 8 minutes):
#   timeout -s TERM 570 bash results/cl-fwd-addresses/scripts/run.sh
source results/scripts/device_run.sh
new=$(mktemp -d)
tree_copy "$new" results/cl-fwd-addresses/addresses.patch || { stamp "the patch did not apply"; exit 1; }
build_tree old . build/n_old 6 ch10_packed_sequences ch08_direct_forward &
build_tree new "$new" build/n_new 10 &
wait
stamp "builds: $(cat "$res"/build_*.txt | grep -c ' error') error lines, $(grep -c warning "$res/build_new.txt") warning lines (new)"
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --direction forward --layout channel-last)
for round in 1 2; do
  for v in old new; do
    ch10_time "rows8_${v}_$round" build/n_$v/chapters/10_packed_sequences/ch10_packed_sequences "${big[@]}" \
      --dtype bf16 --form rows --seq-lens random:8 --initial-states
    ch10_time "states_${v}_$round" build/n_$v/chapters/10_packed_sequences/ch10_packed_sequences "${big[@]}" \
      --dtype bf16 --form rows --seq-lens none --initial-states
    ch10_time "varlen_${v}_$round" build/n_$v/chapters/10_packed_sequences/ch10_packed_sequences "${big[@]}" \
      --dtype bf16 --form varlen --seq-lens random:64 --initial-states
    for dt in bf16 fp32; do
      timeout 60 build/n_$v/chapters/08_direct_forward/ch08_direct_forward --batch 8 --dim 4096 --seqlen 4096 \
        --width 4 --iters 20 --warmup 3 --layout channel-last --dtype $dt --summary "$res/bench08_${dt}_${v}_$round.tsv" \
        > "$res/ch08_${dt}_${v}_$round.txt" 2>&1
      stamp "ch08 $dt $v $round rc $?: $(awk -F'\t' '$3 ~ /^cl_/ {printf "%s %s ms; ", $3, $5}' "$res/bench08_${dt}_${v}_$round.tsv")"
    done
  done
done
# Not this patch's: the channel-first rows backward's kernels (chapter 09's plain and the packed
# one with seq_idx), one launch each, for counting their instructions by kind (the last goal).
for k in "conv_bwd_cf_staged.*NoRowStates" "conv_bwd_cf_staged.*RowTapsBwd"; do
  tag=$([[ $k == *RowTaps* ]] && echo cf_packed || echo cf_plain)
  timeout 60 ncu --section WarpStateStats --section SourceCounters --section InstructionStats --section LaunchStats \
    --section SpeedOfLight --clock-control none --kernel-name-base demangled --kernel-name regex:"$k" --launch-count 1 \
    -o "$res/$tag" -f build/n_new/chapters/10_packed_sequences/ch10_packed_sequences --batch 8 --dim 4096 --seqlen 4096 \
    --width 4 --dtype bf16 --direction backward --layout channel-first --form rows --seq-lens random:8 --initial-states \
    --iters 1 --warmup 0 > "$res/ncu_$tag.txt" 2>&1
  stamp "ncu $tag rc $?"
  ncu --import "$res/$tag.ncu-rep" --page details --csv > "$res/details_$tag.csv" 2>&1
  ncu --import "$res/$tag.ncu-rep" --page source --csv --print-source sass > "$res/source_$tag.csv" 2>&1
  gzip -9 "$res/source_$tag.csv"; rm -f "$res/$tag.ncu-rep"
done
CONV1D_REQUIRE_GPU=1 timeout 150 ctest --test-dir build/n_new -R "Ch08|Ch10|ch08|ch10" -j 4 --output-on-failure > "$res/ctest_ch08_ch10.log" 2>&1
stamp "ctest ch08+ch10 rc $?: $(grep -E 'tests passed' "$res/ctest_ch08_ch10.log")"
stamp done
