#!/usr/bin/env bash
# The channel-last rows backward's two launches side by side: the launch of the warps with flags on
# a second stream of the highest priority, forked from and joined to the caller's
# (side_stream.patch, the tree as it is, `cur`), against the code before it (`base`, the patch
# taken back), built side by side. The tests of chapters 09 and 10 on cur; the channel-last
# backward at 8 x 4096 x 4096 W 4 on both; and where cur's rows are faster than base's, the GPU
# check's chapter-10 section on cur (benchmarks, goals, Nsight Compute, the four sanitizers).
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'exit 143' TERM
trap 'sed -i "s#$root/##g; s#/tmp/probe-[a-z0-9]*/##g" "$res"/*.txt "$res"/*/*.md 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"; cat "$res/gpu.txt"
declare -A src=([cur]=$root [base]=/tmp/probe-base)
rm -rf "${src[base]}"; mkdir -p "${src[base]}"
tar --exclude=./build --exclude=./.git -cf - . | tar -xf - -C "${src[base]}"
(cd "${src[base]}" && git init -q && git apply -R results/cl-bwd-occupancy/side_stream.patch) || stamp "base: patch FAILED"
build() {
  local s=${src[$1]}
  cmake -S "$s" -B "$s/build/gpu-check" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
    > "$res/configure_$1.txt" 2>&1 && cmake --build "$s/build/gpu-check" -j "$2" --target "${@:3}" > "$res/build_$1.txt" 2>&1
}
build cur 11 ch10_packed_sequences conv1d_tests_ch09 conv1d_tests_ch10 &
build base 5 ch10_packed_sequences &
wait
stamp "builds done: $(for t in cur base; do printf '%s %s error lines, %s warning lines; ' $t "$(grep -c 'error' "$res/build_$t.txt")" "$(grep -c 'warning' "$res/build_$t.txt")"; done)"
CONV1D_REQUIRE_GPU=1 timeout 150 ctest --test-dir "$root/build/gpu-check" -R 'Ch09|Ch10' -j 8 --output-on-failure \
  > "$res/ctest_cur.txt" 2>&1
stamp "ctest cur rc $?: $(grep -E 'tests passed' "$res/ctest_cur.txt" | tail -1)"
exe() { echo "${src[$1]}/build/gpu-check/chapters/10_packed_sequences/ch10_packed_sequences"; }
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --initial-states --layout channel-last
     --direction backward)
ms() { awk -F'\t' -v v="$2" '$3 == v && $4 == "whole backward" {print $5; exit}' "$res/bench_$1_kernels.tsv"; }
bench() {  # bench TAG DTYPE "ARGS" TREES...
  local tag=$1 dt=$2 args; read -r -a args <<< "$3"
  for t in "${@:4}"; do
    timeout 120 "$(exe $t)" "${big[@]}" --dtype "$dt" "${args[@]}" --summary "$res/bench_${tag}_$t.tsv" \
      > "$res/ch10_${tag}_$t.txt" 2>&1
    stamp "$tag $t rc $?: $(awk '/^summary \(/ {s = 1; next} s && $2 ~ /^[0-9.]+$/ {printf "%s %s ms; ", $1, $4}' "$res/ch10_${tag}_$t.txt")"
  done
}
bench rows8 bf16 "--form rows --seq-lens random:8" base cur base cur
bench states bf16 "--form rows --seq-lens none" base cur
faster=$(awk -v c="$(ms rows8_cur cl_packed_bwd)" -v b="$(ms rows8_base cl_packed_bwd)" 'BEGIN {print (c != "" && b != "" && c < 0.99 * b) ? 1 : 0}')
stamp "cur faster than base by more than 1 %: $faster"
if [ "$faster" = 1 ]; then
  BUILD_DIR=$root/build/gpu-check GPU_CHECK_STEPS=sections GPU_CHECK_SECTIONS="49b-*" \
    timeout $((560 - (SECONDS - start))) scripts/gpu-check.sh "$res/section_49b" --skip-build > "$res/section_49b.txt" 2>&1
  stamp "section 49b rc $?: $(grep -c '| pass |' "$res/section_49b/summary.md") pass, $(grep -c '| FAIL |' "$res/section_49b/summary.md") FAIL"
else
  bench silu8 bf16 "--form rows --seq-lens random:8 --bias --silu" base cur
  bench fp32rows8 fp32 "--form rows --seq-lens random:8" base cur
  bench varlen bf16 "--form varlen --seq-lens random:64" base cur
fi
