#!/usr/bin/env bash
# First call of the thirty-eighth version (run1/, with TREES="base tw"). Tests the thirty-seventh attempt's reading: that the
# two slower changes to chapter 09's staged backward (results/silu-split/bwd-tile-words.patch,
# results/padding-skip/padding-skip.patch) are slower because the compiler moved tile-level work
# off the uniform datapath and reloads kernel parameters into vector registers; and times a form
# of the words change that keeps it there (thread-words.patch: 72 registers instead of 96).
# Four trees built side by side (as committed; with each patch), the channel-first rows backward
# timed in each in turn (two rounds: 8 documents in all four; 64, the states alone and bias + SiLU
# in the committed tree and thread-words), then one launch of the kernel the rows with 8
# documents run (RowTapsBwd, SiLU off) under Nsight Compute in each tree: warp states,
# source counters, instruction mix (the uniform pipe's share). (The SASS of each build, by opcode,
# is in results/padding-skip/sass_opcodes.tsv, from a local compile.)
# Run from the repository root: bash results/uniform-path/scripts/run1.sh
# (Since commit 7387434 thread-words.patch is in the tree: each tree starts from the tree with it
# taken out, as committed when this ran, so that the four trees are the same as then.)
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}; start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
res=$out/run; mkdir -p "$res"
trap 'exit 143' TERM
trap 'sed -i "s#$root/##g; s#/tmp/tmp\.[A-Za-z0-9]*#<tmp>#g" "$res"/*.txt "$res"/*.configure "$res"/*.csv 2>/dev/null; tar czf "$out/run.tgz" -C "$res" . && rm -rf "$res"' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"; cat "$res/gpu.txt"
declare -A patch=([base]="" [tw]=results/uniform-path/thread-words.patch
                  [btw]=results/silu-split/bwd-tile-words.patch [pad]=results/padding-skip/padding-skip.patch)
read -ra trees <<< "${TREES:-base tw btw pad}"  # (TREES="base tw": fewer builds, a shorter call)
for v in "${trees[@]}"; do
  src=$(mktemp -d); tar cf - --exclude=./build --exclude=./results . | tar xf - -C "$src"
  (cd "$src" && git apply -R --check "$root/${patch[tw]}" 2>/dev/null && git apply -R "$root/${patch[tw]}")
  [[ -n ${patch[$v]} ]] && (cd "$src" && git apply "$root/${patch[$v]}") && stamp "$v: ${patch[$v]} applied"
  (cmake -S "$src" -B "$root/build/u_$v" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
     > "$res/build_$v.txt.configure" 2>&1 &&
   timeout 420 cmake --build "$root/build/u_$v" -j 4 --target ch10_packed_sequences > "$res/build_$v.txt" 2>&1) &
done
wait
stamp "builds: $(cat "$res"/build_*.txt | grep -c ' error') error lines"
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --initial-states --direction backward
     --form rows --layout channel-first --dtype bf16)
for round in 1 2; do
  for cfg in rows8 rows64 states silu; do
    case $cfg in
      rows8) args=(--seq-lens random:8); vs=("${trees[@]}") ;;
      rows64) args=(--seq-lens random:64); vs=(base tw) ;;
      states) args=(--seq-lens none); vs=(base tw) ;;
      silu) args=(--seq-lens random:8 --bias --silu); vs=(base tw) ;;
    esac
    for v in "${vs[@]}"; do
      [[ " ${trees[*]} " == *" $v "* ]] || continue
      tag="${cfg}_${v}_$round"
      timeout 60 build/u_$v/chapters/10_packed_sequences/ch10_packed_sequences "${big[@]}" "${args[@]}" \
        --summary "$res/bench_$tag.tsv" > "$res/ch10_$tag.txt" 2>&1
      stamp "$tag rc $?: $(awk '/^summary \(/ {s = 1; next} s && $2 ~ /^[0-9.]+$/ {printf "%s %s ms; ", $1, $4}' "$res/ch10_$tag.txt")"
    done
  done
done
for v in "${trees[@]}"; do
  exe=build/u_$v/chapters/10_packed_sequences/ch10_packed_sequences
  timeout 90 ncu --section WarpStateStats --section SourceCounters --section InstructionStats \
    --section LaunchStats --metrics smsp__inst_executed_pipe_uniform.sum,smsp__inst_executed.sum \
    --clock-control none --kernel-name-base demangled --kernel-name regex:"conv_bwd_cf_staged.*RowTapsBwd" \
    --launch-count 1 -o "$res/bwd_$v" -f $exe --batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 1 \
    --warmup 0 --initial-states --direction backward --form rows --layout channel-first --dtype bf16 \
    --seq-lens random:8 > "$res/ncu_$v.txt" 2>&1
  stamp "ncu $v rc $?"
  ncu --import "$res/bwd_$v.ncu-rep" --page details --csv > "$res/details_$v.csv" 2>&1
  ncu --import "$res/bwd_$v.ncu-rep" --page source --csv --print-source sass > "$res/source_$v.csv" 2>&1
  gzip -9 "$res/source_$v.csv"; rm -f "$res/bwd_$v.ncu-rep"
done
stamp done
