#!/usr/bin/env bash
# Prepared, not yet run (README.md beside it has the predictions). Two changes to chapter 09's
# channel-last staged backward for packed sequences, each against the committed tree (old), built
# side by side and timed in turn in two rounds, each run verified against fp64: colblk
# (column-blocks.patch: a block's warps across 4 columns of channels) and spanby (span-by.patch:
# a tile's span asked by the warp's lanes together). Channel-last rows with 8 and 64 documents and
# the states alone in every tree; the varlen backward and the rows with bias + SiLU once in old and
# colblk. Then one launch of the colblk kernel under Nsight Compute (rows, 8 documents) and
# chapters 09's and 10's tests on the colblk tree (built whole).
# Run from the repository root with OUT set: bash results/cl-column-blocks/run.sh (about 9 minutes)
source results/scripts/device_run.sh
declare -A patch=([colblk]=column-blocks.patch [spanby]=span-by.patch)
for v in colblk spanby; do
  src=$(mktemp -d)
  tree_copy "$src" "results/cl-column-blocks/${patch[$v]}" || { stamp "$v: the patch did not apply"; exit 1; }
  target=(--target ch10_packed_sequences); jobs=4
  [[ $v == colblk ]] && target=() jobs=8
  (cmake -S "$src" -B build/n_$v -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure_$v.txt" 2>&1 &&
   timeout 420 cmake --build build/n_$v -j $jobs "${target[@]}" > "$res/build_$v.txt" 2>&1) &
done
(cmake -S . -B build/n_old -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure_old.txt" 2>&1 &&
 timeout 420 cmake --build build/n_old -j 4 --target ch10_packed_sequences > "$res/build_old.txt" 2>&1) &
wait
stamp "builds: $(cat "$res"/build_*.txt | grep -c ' error') error lines, $(cat "$res"/build_*.txt | grep -c warning) warning lines"
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --initial-states --direction backward
     --layout channel-last --dtype bf16)
for round in 1 2; do
  for cfg in rows8 rows64 states rows8silu varlen; do
    case $cfg in rows8) args=(--form rows --seq-lens random:8) ;; rows64) args=(--form rows --seq-lens random:64) ;;
                 rows8silu) args=(--form rows --seq-lens random:8 --bias --silu) ;;
                 states) args=(--form rows --seq-lens none) ;; varlen) args=(--form varlen --seq-lens random:64) ;; esac
    for v in old colblk spanby; do
      [[ ($cfg == rows8silu || $cfg == varlen) && ($round == 2 || $v == spanby) ]] && continue
      ch10_time "${cfg}_${v}_$round" build/n_$v/chapters/10_packed_sequences/ch10_packed_sequences "${big[@]}" "${args[@]}"
    done
  done
done
timeout 90 ncu --section WarpStateStats --section SourceCounters --section InstructionStats --section LaunchStats \
  --section SpeedOfLight --clock-control none --kernel-name-base demangled --kernel-name regex:"conv_bwd_cl_staged.*PackedRows" \
  --launch-count 1 -o "$res/cl_colblk" -f build/n_colblk/chapters/10_packed_sequences/ch10_packed_sequences "${big[@]}" \
  --form rows --seq-lens random:8 --iters 1 --warmup 0 > "$res/ncu_cl_colblk.txt" 2>&1
stamp "ncu rc $?"
ncu --import "$res/cl_colblk.ncu-rep" --page details --csv > "$res/details_cl_colblk.csv" 2>&1
ncu --import "$res/cl_colblk.ncu-rep" --page source --csv --print-source sass > "$res/source_cl_colblk.csv" 2>&1
gzip -9 "$res/source_cl_colblk.csv"; rm -f "$res/cl_colblk.ncu-rep"
CONV1D_REQUIRE_GPU=1 timeout 150 ctest --test-dir build/n_colblk -R "Ch09|Ch10|ch09|ch10" -j 4 --output-on-failure > "$res/ctest_ch09_ch10.log" 2>&1
stamp "ctest ch09+ch10 rc $?: $(grep -E 'tests passed' "$res/ctest_ch09_ch10.log")"
stamp done
