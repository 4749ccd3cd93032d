#!/usr/bin/env bash
# The review's refactor (load_states/store_states take the base pointer and an offset, zeros for a
# null base; aligned_to reused), checked on the H100: chapter 10 and its tests built, the
# chapter-10 tests, the varlen forward (bf16, fp32) and the rows form at 8 x 4096 x 4096 verified
# and timed, then compute-sanitizer memcheck and initcheck on small awkward shapes, forward (the
# backward's objects compile to the same SASS). Run from the repository root with OUT set.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'sed -i "s#$root/##g" "$res"/*.log "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"
b=$root/build/refactor
cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure.txt" 2>&1
cmake --build "$b" -j "$(nproc)" --target ch10_packed_sequences conv1d_tests_ch10 > "$res/build.txt" 2>&1 || { tail -n 30 "$res/build.txt"; exit 1; }
stamp "build: $(grep -c warning "$res/build.txt") warning lines"
(cd "$b" && CONV1D_REQUIRE_GPU=1 ctest -R 'ch10|Ch10' --output-on-failure > "$res/ctest.txt" 2>&1); stamp "ctest rc $?: $(grep 'tests passed' "$res/ctest.txt")"
E=$b/chapters/10_packed_sequences/ch10_packed_sequences
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --layout channel-last --direction forward --initial-states)
for c in "varlen_bf16 bf16 varlen random:64" "varlen_fp32 fp32 varlen random:64" "rows_bf16 bf16 rows random:8"; do
  set -- $c
  "$E" "${big[@]}" --dtype $2 --form $3 --seq-lens $4 --summary "$res/$1.tsv" > "$res/$1.log" 2>&1
  stamp "$1 rc $?: $(grep -c VERIFIED "$res/$1.log") VERIFIED, $(grep '= .*% of the copy' "$res/$1.log" | tail -n 1)"
done
i=0
for s in "--batch 2 --dim 40 --seqlen 67 --seq-lens random:9 --width 3 --initial-states" \
         "--batch 3 --dim 255 --seqlen 300 --seq-lens random:40 --dtype fp32 --initial-states" \
         "--batch 2 --dim 64 --seqlen 100 --seq-lens random:30 --dtype fp16" \
         "--batch 1 --dim 512 --seqlen 700 --seq-lens random:50 --width 2 --initial-states"; do
  for tool in memcheck initcheck; do
    i=$((i + 1)); echo "$tool $s" > "$res/san_$i.log"
    compute-sanitizer --tool $tool --error-exitcode 9 "$E" $s --iters 1 --warmup 0 --direction forward >> "$res/san_$i.log" 2>&1
    stamp "sanitizer $tool ($s) rc $?"
  done
done
