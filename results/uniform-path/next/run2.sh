#!/usr/bin/env bash
# Run once with the default TREES (run2/ beside it; README.md has the predictions and the result).
# 1. Two changes to chapter 09's staged backward on top of the thirty-eighth version, each timed
#    against the tree as committed (cur), in turn, two rounds: 8 and 64 documents, the states alone
#    (every run verified against fp64): pad, the thirty-seventh attempt's padding skip
#    (results/padding-skip/padding-skip.patch), and gather (gather.patch here: a tile's vectors
#    that need the words gathered into a second pass, as few warps as can take them).
# 2. One launch of the rows' kernel (8 documents, SiLU off) under Nsight Compute in every tree
#    built: instruction mix (the uniform pipe's share), warp states, source counters, launch
#    statistics. With TREES="pre btw prepad" this asks the thirty-seventh attempt's question: were
#    its two slower builds (pre: the tree before the thirty-eighth version, thread-words.patch taken
#    out; btw: pre + results/silu-split/bwd-tile-words.patch; prepad: pre + the padding skip)
#    slower because their tile-level work left the uniform datapath?
# 3. With cur built: the channel-last rows backward's kernel and its plain one under Nsight
#    Compute, for their source counters.
# Run from the repository root: bash results/uniform-path/next/run2.sh (default TREES="cur pad
# gather", about nine minutes; then TREES="pre btw prepad" in a second call).
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}; start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
res=$out/run; mkdir -p "$res"
trap 'exit 143' TERM
trap 'sed -i "s#$root/##g; s#/tmp/tmp\.[A-Za-z0-9]*#<tmp>#g" "$res"/*.txt "$res"/*.configure "$res"/*.csv 2>/dev/null; tar czf "$out/run.tgz" -C "$res" . && rm -rf "$res"' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"; cat "$res/gpu.txt"
tw=results/uniform-path/thread-words.patch pad=results/padding-skip/padding-skip.patch
btw=results/silu-split/bwd-tile-words.patch gather=results/uniform-path/next/gather.patch
declare -A reverse=([cur]="" [pad]="" [gather]="" [pre]=$tw [btw]=$tw [prepad]=$tw)
declare -A apply=([cur]="" [pad]=$pad [gather]=$gather [pre]="" [btw]=$btw [prepad]=$pad)
read -ra trees <<< "${TREES:-cur pad gather}"
for v in "${trees[@]}"; do
  src=$(mktemp -d); tar cf - --exclude=./build --exclude=./results . | tar xf - -C "$src"
  (cd "$src" && { [[ -z ${reverse[$v]} ]] || git apply -R "$root/${reverse[$v]}"; } &&
   { [[ -z ${apply[$v]} ]] || git apply "$root/${apply[$v]}"; }) || { stamp "$v: a patch did not apply"; exit 1; }
  (cmake -S "$src" -B "$root/build/n_$v" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
     > "$res/build_$v.txt.configure" 2>&1 &&
   timeout 400 cmake --build "$root/build/n_$v" -j 5 --target ch10_packed_sequences > "$res/build_$v.txt" 2>&1) &
done
wait
stamp "builds: $(cat "$res"/build_*.txt | grep -c ' error') error lines"
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --initial-states --direction backward
     --form rows --layout channel-first --dtype bf16)
for round in 1 2; do
  for cfg in rows8 rows64 states; do
    case $cfg in rows8) lens=random:8 ;; rows64) lens=random:64 ;; states) lens=none ;; esac
    for v in cur pad gather; do
      [[ " ${trees[*]} " == *" $v "* ]] || continue
      tag="${cfg}_${v}_$round"
      timeout 60 build/n_$v/chapters/10_packed_sequences/ch10_packed_sequences "${big[@]}" --seq-lens $lens \
        --summary "$res/bench_$tag.tsv" > "$res/ch10_$tag.txt" 2>&1
      stamp "$tag rc $?: $(awk '/^summary \(/ {s = 1; next} s && $2 ~ /^[0-9.]+$/ {printf "%s %s ms; ", $1, $4}' "$res/ch10_$tag.txt")"
    done
  done
done
# One launch of the kernels matching REGEX under Nsight Compute: details and source pages kept.
profile() {  # NAME EXE REGEX LAYOUT [ncu options...]
  local name=$1 exe=$2 regex=$3 layout=$4; shift 4
  timeout 90 ncu --section WarpStateStats --section SourceCounters --section InstructionStats \
    --section LaunchStats "$@" --clock-control none --kernel-name-base demangled \
    --kernel-name regex:"$regex" --launch-count 1 -o "$res/$name" -f "$exe" --batch 8 --dim 4096 \
    --seqlen 4096 --width 4 --iters 1 --warmup 0 --initial-states --direction backward --form rows \
    --layout "$layout" --dtype bf16 --seq-lens random:8 > "$res/ncu_$name.txt" 2>&1
  stamp "ncu $name rc $?"
  ncu --import "$res/$name.ncu-rep" --page details --csv > "$res/details_$name.csv" 2>&1
  ncu --import "$res/$name.ncu-rep" --page source --csv --print-source sass > "$res/source_$name.csv" 2>&1
  gzip -9 "$res/source_$name.csv"; rm -f "$res/$name.ncu-rep"
}
for v in "${trees[@]}"; do
  profile "$v" build/n_$v/chapters/10_packed_sequences/ch10_packed_sequences "conv_bwd_cf_staged.*RowTapsBwd" \
    channel-first --metrics smsp__inst_executed_pipe_uniform.sum,smsp__inst_executed.sum
done
# 3. The channel-last rows backward (1.088 x its plain kernel, the other goal missed).
if [[ " ${trees[*]} " == *" cur "* ]]; then
  for pol in PackedRows Baseline; do
    profile "cl_$pol" build/n_cur/chapters/10_packed_sequences/ch10_packed_sequences \
      "conv_bwd_cl_staged.*$pol" channel-last
  done
fi
stamp done
