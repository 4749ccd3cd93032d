#!/usr/bin/env bash
# The channel-last staged backward's row addresses by sums (README.md beside it): the tree before
# the change (old: addresses.patch reversed on a copy) and after it (new: the working tree, built
# whole in build/gpu-check so that the GPU check can follow with --skip-build), in turn, two
# rounds, each run verified against fp64: rows with 8 and 64 documents and the states alone; the
# varlen backward, the rows with bias + SiLU and the channel-first rows (a control: not changed)
# once. Then one launch each of the new packed and plain kernels under Nsight Compute (rows, 8
# documents) and chapters 09's and 10's tests on the new tree.
# Run from the repository root with OUT set: timeout -s TERM 570 bash results/cl-bwd-addresses/scripts/run.sh
source results/scripts/device_run.sh
old=$(mktemp -d)
tree_copy "$old" results/cl-bwd-addresses/addresses.patch -R || { stamp "the patch did not reverse"; exit 1; }
(cmake -S "$old" -B build/n_old -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure_old.txt" 2>&1 &&
 timeout 400 cmake --build build/n_old -j 4 --target ch10_packed_sequences > "$res/build_old.txt" 2>&1) &
(cmake -S . -B build/gpu-check -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure_new.txt" 2>&1 &&
 timeout 400 cmake --build build/gpu-check -j 14 > "$res/build_new.txt" 2>&1) &
wait
stamp "builds: $(cat "$res"/build_*.txt | grep -c ' error') error lines, $(grep -c warning "$res/build_new.txt") warning lines (new)"
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --initial-states --direction backward --dtype bf16)
declare -A exe=([old]=build/n_old [new]=build/gpu-check)
for round in 1 2; do
  for cfg in rows8 states rows64 varlen rows8silu cf_rows8; do
    [[ $round == 2 && $cfg =~ ^(varlen|rows8silu|cf_rows8)$ ]] && continue
    case $cfg in rows8) args=(--form rows --seq-lens random:8) ;; rows64) args=(--form rows --seq-lens random:64) ;;
                 states) args=(--form rows --seq-lens none) ;; varlen) args=(--form varlen --seq-lens random:64) ;;
                 rows8silu) args=(--form rows --seq-lens random:8 --bias --silu) ;;
                 cf_rows8) args=(--form rows --seq-lens random:8 --layout channel-first) ;; esac
    [[ $cfg == cf_rows8 ]] || args+=(--layout channel-last)
    for v in old new; do
      ch10_time "${cfg}_${v}_$round" ${exe[$v]}/chapters/10_packed_sequences/ch10_packed_sequences "${big[@]}" "${args[@]}"
    done
  done
done
for k in PackedRows Baseline; do
  timeout 60 ncu --section WarpStateStats --section SourceCounters --section InstructionStats --section LaunchStats \
    --section SpeedOfLight --clock-control none --kernel-name-base demangled --kernel-name regex:"conv_bwd_cl_staged.*$k" \
    --launch-count 1 -o "$res/cl_$k" -f build/gpu-check/chapters/10_packed_sequences/ch10_packed_sequences "${big[@]}" \
    --layout channel-last --form rows --seq-lens random:8 --iters 1 --warmup 0 > "$res/ncu_cl_$k.txt" 2>&1
  stamp "ncu $k rc $?"
  ncu --import "$res/cl_$k.ncu-rep" --page details --csv > "$res/details_cl_$k.csv" 2>&1
  ncu --import "$res/cl_$k.ncu-rep" --page source --csv --print-source sass > "$res/source_cl_$k.csv" 2>&1
  gzip -9 "$res/source_cl_$k.csv"; rm -f "$res/cl_$k.ncu-rep"
done
CONV1D_REQUIRE_GPU=1 timeout 150 ctest --test-dir build/gpu-check -R "Ch09|Ch10|ch09|ch10" -j 4 --output-on-failure > "$res/ctest_ch09_ch10.log" 2>&1
stamp "ctest ch09+ch10 rc $?: $(grep -E 'tests passed' "$res/ctest_ch09_ch10.log")"
stamp done
