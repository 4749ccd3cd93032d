#!/usr/bin/env bash
# Chapter 10's twenty-third version on the GPU: rows with seq_idx on chapter 09's staged kernel with
# the forward's tap words. Builds, in the same call, the tree as it is (new) and the new tree with a
# warp vote (vote: vote.patch, the words' arithmetic only in warps that need it); then what the
# phase named by the argument asks for:
#   A  chapter 10's rows backward tests on the new tree; the channel-first rows backward at
#      8 x 4096 x 4096 with 8 documents a row (bf16, bf16 with bias and SiLU, fp32) and 64 (bf16)
#      on both trees, and the states alone (new)
#   B  memcheck and racecheck on the new kernel at two awkward shapes
# (The tree before this version is measured in results/od-check, on the same kind of GPU; every run
# here has the plain kernel beside the packed one.) A second call while the machine is warm finds
# the builds done. Results under $OUT/run.tgz.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}; phase=${1:?phase A or B}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'exit 143' TERM
trap 'sed -i "s#$root/##g; s#/tmp/probe-[a-z0-9]*/##g" "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"; cat "$res/gpu.txt"
declare -A src=([new]=$root [vote]=/tmp/probe-vote)
if [[ ! -d /tmp/probe-vote/build/probe ]]; then
  rm -rf "${src[vote]}"; mkdir -p "${src[vote]}"
  tar --exclude=./build --exclude=./.git -cf - . | tar -xf - -C "${src[vote]}"
  (cd "${src[vote]}" && git init -q && git apply results/staged-taps/vote.patch) && stamp "vote: patch applied"
fi
build() {  # build TREE TARGETS...
  local s=${src[$1]}
  cmake -S "$s" -B "$s/build/probe" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
    > "$res/configure_$1.txt" 2>&1 && cmake --build "$s/build/probe" -j 8 --target "${@:2}" > "$res/build_$1.txt" 2>&1
}
build new ch10_packed_sequences conv1d_tests_ch10 &
build vote ch10_packed_sequences &
wait
stamp "builds done: $(for t in new vote; do printf '%s %s error lines, %s warnings; ' $t "$(grep -c 'error' "$res/build_$t.txt")" "$(grep -c 'warning' "$res/build_$t.txt")"; done)"
exe() { echo "${src[$1]}/build/probe/chapters/10_packed_sequences/ch10_packed_sequences"; }
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --initial-states --form rows
     --layout channel-first --direction backward)
bench() {  # bench TAG DTYPE "ARGS" TREES...
  local tag=$1 dt=$2 args; read -r -a args <<< "$3"
  for t in "${@:4}"; do
    timeout 150 "$(exe $t)" "${big[@]}" --dtype "$dt" "${args[@]}" --summary "$res/bench_${tag}_$t.tsv" \
      > "$res/ch10_${tag}_$t.txt" 2>&1
    stamp "$tag $t rc $?: $(awk '/^summary \(/ {s = 1; next} s && $2 ~ /^[0-9.]+$/ {printf "%s %s ms; ", $1, $4}' "$res/ch10_${tag}_$t.txt")"
  done
}
if [[ $phase == A ]]; then
  CONV1D_REQUIRE_GPU=1 timeout 120 ctest --test-dir "${src[new]}/build/probe" -R 'Ch10RowsBackward' -j 8 \
    --output-on-failure > "$res/ctest_new.txt" 2>&1
  stamp "ctest new rc $?: $(grep -E 'tests passed' "$res/ctest_new.txt" | tail -1)"
  bench rows8 bf16 "--seq-lens random:8" new vote
  bench silu8 bf16 "--seq-lens random:8 --bias --silu" new vote
  bench fp32rows8 fp32 "--seq-lens random:8" new vote
  bench rows64 bf16 "--seq-lens random:64" new vote
  bench states bf16 "--seq-lens none" new
else
  small=(--width 4 --dtype bf16 --initial-states --form rows --layout channel-first --direction backward
         --seq-lens random:8 --bias --silu --iters 1 --warmup 0)
  for tool in memcheck racecheck; do
    for shape in "--batch 2 --dim 96 --seqlen 4104" "--batch 3 --dim 37 --seqlen 512"; do
      read -r -a sh <<< "$shape"; name=${tool}_L${sh[5]}
      timeout 120 compute-sanitizer --tool $tool --error-exitcode 1 "$(exe new)" "${sh[@]}" "${small[@]}" \
        > "$res/sanitizer_$name.txt" 2>&1
      stamp "$name rc $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$res/sanitizer_$name.txt")"
    done
  done
fi
