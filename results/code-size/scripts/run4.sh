#!/usr/bin/env bash
# Fourth call: the tree to be committed (tile-words.patch applied): chapters 08's and 10's tests on
# the GPU, the two chapters' executables (each verifies against fp64), four sanitizers on the
# channel-first forward with seq_idx and states (short rows, whole rows a tile; long rows, a piece
# of a row a tile) and on chapter 08's staged kernel; then the rows and the states alone timed in
# two more processes.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'exit 143' TERM
trap 'sed -i "s#$root/##g; s#/tmp/tmp\.[A-Za-z0-9]*#<tmp>#g" "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"; cat "$res/gpu.txt"
cmake -S . -B build/chk -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/build.txt.configure" 2>&1 &&
  timeout 330 cmake --build build/chk -j 16 --target ch08_direct_forward ch10_packed_sequences conv1d_tests_ch08 \
    conv1d_tests_ch10 > "$res/build.txt" 2>&1
stamp "build rc $?: $(grep -c ' error' "$res/build.txt") error lines, $(grep -c warning "$res/build.txt") warning lines"
(CONV1D_REQUIRE_GPU=1 timeout 200 ctest --test-dir build/chk -R '[cC]h(08|10)' -j 12 --output-on-failure > "$res/ctest.txt" 2>&1)
stamp "ctest ch08+ch10 rc $?: $(grep -E 'tests passed' "$res/ctest.txt" | tail -1)"
e10=build/chk/chapters/10_packed_sequences/ch10_packed_sequences; e08=build/chk/chapters/08_direct_forward/ch08_direct_forward
for tool in memcheck racecheck initcheck synccheck; do
  for c in "short|--batch 2 --dim 72 --seqlen 80 --seq-lens random:5" "long|--batch 2 --dim 6 --seqlen 4096 --seq-lens random:9"; do
    tag=${c%%|*}; read -r -a args <<< "${c#*|}"
    timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 $e10 "${args[@]}" --width 4 --dtype bf16 \
      --initial-states --direction forward --form rows --layout channel-first --iters 1 --warmup 0 \
      > "$res/sanitizer_${tool}_$tag.txt" 2>&1
    stamp "$tool ch10 $tag rc $?: $(grep -E 'ERROR SUMMARY|VERIFIED|FAIL' "$res/sanitizer_${tool}_$tag.txt" | tr '\n' ' ' | cut -c1-160)"
  done
  timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 $e08 --batch 2 --dim 72 --seqlen 80 --width 4 \
    --dtype bf16 --layout channel-first --variant staged --iters 1 --warmup 0 > "$res/sanitizer_${tool}_ch08.txt" 2>&1
  stamp "$tool ch08 rc $?: $(grep -E 'ERROR SUMMARY' "$res/sanitizer_${tool}_ch08.txt" | tail -1)"
done
timeout 90 $e08 > "$res/ch08_default.txt" 2>&1; stamp "ch08 default rc $?: $(grep -c VERIFIED "$res/ch08_default.txt") VERIFIED lines, $(grep -ci 'fail' "$res/ch08_default.txt") fail"
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --initial-states --direction forward
     --form rows --layout channel-first --dtype bf16)
for round in 1 2; do
  for lens in random:8 none; do
    tag=${lens/:/}
    timeout 60 $e10 "${big[@]}" --seq-lens $lens --summary "$res/bench_${tag}_$round.tsv" > "$res/ch10_${tag}_$round.txt" 2>&1
    stamp "$tag $round rc $?: $(awk '/^summary \(/ {s = 1; next} s && $2 ~ /^[0-9.]+$/ {printf "%s %s ms; ", $1, $4}' "$res/ch10_${tag}_$round.txt")"
  done
done
