#!/usr/bin/env bash
# Call 3 (H100): an experiment, not committed code. Why chapter 09's full walk runs slower inside the
# packed kernel than in chapter 09's own (run1: the same instructions, 1.5 times the cycles). Two
# builds: -DCONV1D_EXP_NO_MIXED=1 (the packed kernel without its mixed path: every warp walks as if
# full, no edge work; wrong results where sequences begin, same memory traffic: the timing alone
# matters) and -DCONV1D_EXP_NO_SHARED=1 (the mixed path reads its flags position by position from
# the policy instead of from shared memory: no shared memory in the kernel). Channel-last backward,
# 8 x 4096 x 4096 bf16 W 4: no states, the states alone, 8 documents a row with states.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'sed -i "s#$root/##g" "$res"/*.log "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"
build() {  # build NAME FLAGS
  cmake -S . -B "$root/build/exp-$1" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native "-DCMAKE_CUDA_FLAGS=$2" > "$res/configure_$1.log" 2>&1 &&
  cmake --build "$root/build/exp-$1" -j 8 --target ch10_packed_sequences > "$res/build_$1.log" 2>&1
}
build no_mixed "-DCONV1D_EXP_NO_MIXED=1" & p1=$!
build no_shared "-DCONV1D_EXP_NO_SHARED=1" & p2=$!
wait $p1 || { tail -n 40 "$res"/build_no_mixed.log; exit 1; }
wait $p2 || { tail -n 40 "$res"/build_no_shared.log; exit 1; }
stamp build
common=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --layout channel-last --form rows --direction backward --dtype bf16)
for v in no_mixed no_shared; do
  E=$root/build/exp-$v/chapters/10_packed_sequences/ch10_packed_sequences
  "$E" "${common[@]}" --seq-lens none > "$res/${v}_nostates.log" 2>&1; stamp "$v nostates rc $?"
  "$E" "${common[@]}" --seq-lens none --initial-states > "$res/${v}_states.log" 2>&1; stamp "$v states rc $?"
  "$E" "${common[@]}" --seq-lens random:8 --initial-states > "$res/${v}_rows.log" 2>&1; stamp "$v rows rc $?"
done
