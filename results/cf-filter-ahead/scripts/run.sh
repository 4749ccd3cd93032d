#!/usr/bin/env bash
# Prepared, not yet run (README.md beside it has the predictions). The channel-first staged
# backward's filters asked a tile ahead (filter_ahead.patch), against the tree without it (old:
# the working tree): built side by side (new whole, in a copy), timed in turn in two rounds, each
# run verified against fp64 — chapter 09's channel-first staged kernel alone at 8 x 4096 x 4096
# bf16 and fp32, chapter 10's channel-first rows backward with 8 and 64 documents and with the
# states alone (and bias + SiLU once) — then one profiled launch each of the new plain and packed
# kernels, for their waits by line, and chapters 09's and 10's tests on the new tree (the copy has
# no results/: the scripts' tests that read committed results are left out).
# Run from the repository root with OUT set (about 8 minutes):
#   timeout -s TERM 570 bash results/cf-filter-ahead/scripts/run.sh
source results/scripts/device_run.sh
build_pair results/cf-filter-ahead/filter_ahead.patch ch10_packed_sequences ch09_direct_backward || exit 1
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3)
for round in 1 2; do
  for v in old new; do
    for dt in bf16 fp32; do
      timeout 60 build/n_$v/chapters/09_direct_backward/ch09_direct_backward "${big[@]}" --dtype $dt \
        --layout channel-first --variant staged --summary "$res/bench09_${dt}_${v}_$round.tsv" \
        > "$res/ch09_${dt}_${v}_$round.txt" 2>&1
      stamp "ch09 $dt $v $round rc $?: $(awk -F'\t' 'NR > 1 {printf "%s %s %s ms; ", $3, $4, $5}' "$res/bench09_${dt}_${v}_${round}_kernels.tsv")"
    done
    for cfg in rows8 states rows64 rows8silu; do
      [[ $round == 2 && $cfg == rows8silu ]] && continue
      case $cfg in rows8) args=(--seq-lens random:8) ;; rows64) args=(--seq-lens random:64) ;;
                   states) args=(--seq-lens none) ;; rows8silu) args=(--seq-lens random:8 --bias --silu) ;; esac
      ch10_time "${cfg}_${v}_$round" build/n_$v/chapters/10_packed_sequences/ch10_packed_sequences "${big[@]}" \
        --dtype bf16 --direction backward --layout channel-first --form rows --initial-states "${args[@]}"
    done
  done
done
exe10=build/n_new/chapters/10_packed_sequences/ch10_packed_sequences
rows8=("${big[@]}" --dtype bf16 --direction backward --layout channel-first --form rows --seq-lens random:8
       --initial-states --iters 1 --warmup 0)
ncu_launch cf_plain "conv_bwd_cf_staged.*NoRowStates" $exe10 "${rows8[@]}"
ncu_launch cf_packed "conv_bwd_cf_staged.*RowTapsBwd" $exe10 "${rows8[@]}"
CONV1D_REQUIRE_GPU=1 timeout 150 ctest --test-dir build/n_new -R "Ch09|Ch10|ch09|ch10" -E "^scripts\." -j 4 \
  --output-on-failure > "$res/ctest_ch09_ch10.log" 2>&1
stamp "ctest ch09+ch10 rc $?: $(grep -E 'tests passed' "$res/ctest_ch09_ch10.log")"
stamp done
