#!/usr/bin/env bash
# The channel-first staged backward's per-tile loads in another order (README.md beside it): the
# tree without the change (old: loads.patch reversed on a copy) and with it (new: the working
# tree, built whole in build/gpu-check so that the GPU check can follow with --skip-build), in
# turn, two rounds, each run verified against fp64: channel-first rows with 8 and 64 documents and
# the states alone, and (once) rows of 8 documents with bias + SiLU. Then one launch of the new
# packed kernel under Nsight Compute (rows, 8 documents; the old one's page is
# ../cl-fwd-addresses/run) and chapters 08's, 09's and 10's tests on the new tree.
# Run from the repository root with OUT set: timeout -s TERM 570 bash results/cf-bwd-loads/scripts/run.sh
source results/scripts/device_run.sh
old=$(mktemp -d)
tree_copy "$old" results/cf-bwd-loads/loads.patch -R || { stamp "the patch did not reverse"; exit 1; }
build_tree old "$old" build/n_old 4 ch10_packed_sequences &
build_tree new . build/gpu-check 12 &
wait
stamp "builds: $(cat "$res"/build_*.txt | grep -c ' error') error lines, $(grep -c warning "$res/build_new.txt") warning lines (new)"
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --initial-states --direction backward
     --dtype bf16 --layout channel-first --form rows)
declare -A exe=([old]=build/n_old [new]=build/gpu-check)
for round in 1 2; do
  for cfg in rows8 states rows64 rows8silu; do
    [[ $round == 2 && $cfg == rows8silu ]] && continue
    case $cfg in rows8) args=(--seq-lens random:8) ;; rows64) args=(--seq-lens random:64) ;;
                 states) args=(--seq-lens none) ;; rows8silu) args=(--seq-lens random:8 --bias --silu) ;; esac
    for v in old new; do
      ch10_time "${cfg}_${v}_$round" ${exe[$v]}/chapters/10_packed_sequences/ch10_packed_sequences "${big[@]}" "${args[@]}"
    done
  done
done
tag=cf_packed
timeout 60 ncu --section WarpStateStats --section SourceCounters --section InstructionStats --section LaunchStats \
  --section SpeedOfLight --clock-control none --kernel-name-base demangled --kernel-name regex:"conv_bwd_cf_staged.*RowTapsBwd" \
  --launch-count 1 -o "$res/$tag" -f build/gpu-check/chapters/10_packed_sequences/ch10_packed_sequences "${big[@]}" \
  --seq-lens random:8 --iters 1 --warmup 0 > "$res/ncu_$tag.txt" 2>&1
stamp "ncu $tag rc $?"
ncu --import "$res/$tag.ncu-rep" --page details --csv > "$res/details_$tag.csv" 2>&1
ncu --import "$res/$tag.ncu-rep" --page source --csv --print-source sass > "$res/source_$tag.csv" 2>&1
gzip -9 "$res/source_$tag.csv"; rm -f "$res/$tag.ncu-rep"
CONV1D_REQUIRE_GPU=1 timeout 170 ctest --test-dir build/gpu-check -R "Ch0[89]|Ch10|ch0[89]|ch10" -j 6 --output-on-failure > "$res/ctest_ch08_ch10.log" 2>&1
stamp "ctest ch08-ch10 rc $?: $(grep -E 'tests passed' "$res/ctest_ch08_ch10.log")"
stamp done
