#!/usr/bin/env bash
# Prepared, not yet run (README.md beside it has the predictions). Chapter 09's reduce_partials
# with 8 of a group's units asked for before it adds them (reduce_ahead.patch), against the tree
# without it (old: the working tree): built side by side (new whole, in a copy), then
#  - the same bits: chapter 09's staged kernels with deterministic sums and --save-npy at
#    7 x 200 x 8200 bf16 (both layouts; units that do not divide into the 8 groups, and in
#    channel-first 3 pieces a row, so a group's steps carry from a2 into a1) in both trees, dweight
#    and dbias compared byte for byte (cmp);
#  - timed in turn, two rounds, each run verified against fp64: chapter 09's staged kernels in both
#    layouts at 8 x 4096 x 4096 bf16 and fp32 (their reduce_partials is a row of the kernels'
#    table), chapter 10's rows backward with 8 documents in both layouts and its varlen backward;
#  - one profiled launch of each tree's channel-last reduce_partials, and chapters 09's and 10's
#    tests on the new tree (the copy has no results/: the scripts' tests are left out).
# Run from the repository root with OUT set (about 8 minutes):
#   timeout -s TERM 570 bash results/reduce-ahead/scripts/run.sh
source results/scripts/device_run.sh
build_pair results/reduce-ahead/reduce_ahead.patch ch10_packed_sequences ch09_direct_backward || exit 1
for v in old new; do
  timeout 60 build/n_$v/chapters/09_direct_backward/ch09_direct_backward --batch 7 --dim 200 --seqlen 8200 --width 4 \
    --dtype bf16 --variant staged --reduction deterministic --iters 1 --warmup 0 --save-npy "$res/npy_$v" > "$res/npy_$v.txt" 2>&1
  stamp "npy $v rc $?: $(ls "$res/npy_$v" | grep -c 'dweight\|dbias') dweight/dbias files"
done
same=0; differ=0
for f in "$res"/npy_old/*; do
  case $(basename "$f") in *dweight*|*dbias*) ;; *) continue ;; esac
  if cmp -s "$f" "$res/npy_new/$(basename "$f")"; then same=$((same + 1)); else differ=$((differ + 1)); fi
done
stamp "dweight/dbias byte for byte: $same the same, $differ different"
rm -rf "$res"/npy_old "$res"/npy_new
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3)
for round in 1 2; do
  for v in old new; do
    for dt in bf16 fp32; do
      timeout 60 build/n_$v/chapters/09_direct_backward/ch09_direct_backward "${big[@]}" --dtype $dt --variant staged \
        --reduction deterministic --summary "$res/bench09_${dt}_${v}_$round.tsv" > "$res/ch09_${dt}_${v}_$round.txt" 2>&1
      stamp "ch09 $dt $v $round rc $?: $(awk -F'\t' 'NR > 1 && $4 !~ /^conv/ {printf "%s %s %s ms; ", $3, $4, $5}' "$res/bench09_${dt}_${v}_${round}_kernels.tsv")"
    done
    for cfg in cl_rows8 cf_rows8 varlen; do
      case $cfg in cl_rows8) args=(--form rows --seq-lens random:8 --layout channel-last) ;;
                   cf_rows8) args=(--form rows --seq-lens random:8 --layout channel-first) ;;
                   varlen) args=(--form varlen --seq-lens random:64 --layout channel-last) ;; esac
      ch10_time "${cfg}_${v}_$round" build/n_$v/chapters/10_packed_sequences/ch10_packed_sequences "${big[@]}" \
        --dtype bf16 --direction backward --initial-states "${args[@]}"
    done
  done
done
for v in old new; do
  ncu_launch reduce_$v "reduce_partials" build/n_$v/chapters/09_direct_backward/ch09_direct_backward "${big[@]}" \
    --dtype bf16 --variant staged --layout channel-last --reduction deterministic --iters 1 --warmup 0
done
CONV1D_REQUIRE_GPU=1 timeout 150 ctest --test-dir build/n_new -R "Ch09|Ch10|ch09|ch10" -E "^scripts\." -j 4 \
  --output-on-failure > "$res/ctest_ch09_ch10.log" 2>&1
stamp "ctest ch09+ch10 rc $?: $(grep -E 'tests passed' "$res/ctest_ch09_ch10.log")"
stamp done
