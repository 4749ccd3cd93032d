#!/usr/bin/env bash
# The last few minutes of a session's device time: column-blocks.patch built alone (chapter 10 only)
# and the channel-last rows backward timed once (8 and 64 documents, the states alone), each run
# beside chapter 09's plain kernel in the same process and verified against fp64. Run from the
# repository root with OUT set.
set -uo pipefail
start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
new=$(mktemp -d); tar cf - --exclude=./build --exclude=./results . | tar xf - -C "$new"
root=$(pwd); (cd "$new" && git apply "$root/results/cl-column-blocks/column-blocks.patch") || { stamp "the patch did not apply"; exit 1; }
cmake -S "$new" -B build/q -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > /dev/null 2>&1
timeout 165 cmake --build build/q -j 16 --target ch10_packed_sequences > $OUT/build.txt 2>&1; stamp "build rc $?"
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --initial-states --direction backward --layout channel-last --dtype bf16 --form rows)
for lens in random:8 none random:64; do
  t=${lens/:/}
  timeout 20 build/q/chapters/10_packed_sequences/ch10_packed_sequences "${big[@]}" --seq-lens $lens --summary $OUT/bench_${t}_new_1.tsv > $OUT/ch10_$t.txt 2>&1
  stamp "$lens rc $?: $(awk '/^summary \(/ {s = 1; next} s && $2 ~ /^[0-9.]+$/ {printf "%s %s ms; ", $1, $4}' $OUT/ch10_$t.txt)"
done
