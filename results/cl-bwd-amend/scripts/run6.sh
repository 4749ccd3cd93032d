#!/usr/bin/env bash
# run6: run5's tree (../units.patch) and ../run6.patch: the walk exactly chapter 09's (padding
# left to the amend) and the amend's four spans read together. Builds chapter 10 and its tests,
# runs the tests, the channel-last backward at 8 x 4096 x 4096 W 4
# (rows with 8 documents, the states alone, bias and SiLU, fp32, varlen), Nsight Compute on the
# walk and the amend (8 documents a row), and, if the rows beat 1.25 x chapter 09's time, the GPU
# check's chapter-10 section on the remaining time.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'exit 143' TERM
trap 'sed -i "s#$root/##g" "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"; cat "$res/gpu.txt"
cmake -S . -B build/gpu-check -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
  > "$res/configure.txt" 2>&1 &&
  cmake --build build/gpu-check -j 16 --target ch10_packed_sequences conv1d_tests_ch10 \
  > "$res/build.txt" 2>&1
stamp "build rc $?: $(grep -c warning "$res/build.txt") warning lines"
CONV1D_REQUIRE_GPU=1 timeout 150 ctest --test-dir build/gpu-check -R 'Ch10' -j 8 --output-on-failure \
  > "$res/ctest.txt" 2>&1
stamp "ctest rc $?: $(grep -E 'tests passed' "$res/ctest.txt" | tail -1)"
exe=build/gpu-check/chapters/10_packed_sequences/ch10_packed_sequences
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --initial-states --layout channel-last
     --direction backward)
bench() {  # bench TAG DTYPE "ARGS"
  local args; read -r -a args <<< "$3"
  timeout 120 "$exe" "${big[@]}" --dtype "$2" "${args[@]}" --summary "$res/bench_$1.tsv" > "$res/ch10_$1.txt" 2>&1
  stamp "$1 rc $?: $(awk '/^summary \(/ {s = 1; next} s && $2 ~ /^[0-9.]+$/ {printf "%s %s ms; ", $1, $4}' "$res/ch10_$1.txt")"
}
bench rows8 bf16 "--form rows --seq-lens random:8"
bench states bf16 "--form rows --seq-lens none"
bench silu8 bf16 "--form rows --seq-lens random:8 --bias --silu"
bench fp32rows8 fp32 "--form rows --seq-lens random:8"
bench varlen bf16 "--form varlen --seq-lens random:64"
ncu --csv --page raw --clock-control none --kernel-name regex:'conv_bwd_cl' \
  --metrics gpu__time_duration.sum,launch__grid_size,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio \
  --log-file "$res/ncu_random.csv" "$exe" --batch 8 --dim 4096 --seqlen 4096 --width 4 --dtype bf16 \
  --initial-states --seq-lens random:8 --layout channel-last --direction backward --form rows \
  --iters 1 --warmup 0 > "$res/ncu_random.log" 2>&1
stamp "ncu rc $?"; sed -i '/^==PROF==/d; /^==WARNING==/d' "$res/ncu_random.csv"
# The amend at the instruction level: where its instructions and its warps' waits are.
timeout 120 ncu --set full -k regex:conv_bwd_cl_amend -c 1 -o "$res/amend" "$exe" --batch 8 --dim 4096 \
  --seqlen 4096 --width 4 --dtype bf16 --initial-states --seq-lens random:8 --layout channel-last \
  --direction backward --form rows --iters 1 --warmup 0 > "$res/amend_ncu.log" 2>&1
stamp "ncu full rc $?"
ncu -i "$res/amend.ncu-rep" --page source --csv --print-source sass > "$res/amend_sass.csv" 2> "$res/amend_sass.err"
stamp "source page rc $?: $(wc -l < "$res/amend_sass.csv") lines"
ncu -i "$res/amend.ncu-rep" --page details --csv > "$res/amend_details.csv" 2>&1
ratio=$(awk -F'\t' '$3 == "cl_packed_bwd" && $4 == "whole backward" {p = $5} $3 == "cl_plain_bwd" && $4 == "whole backward" {q = $5}
  END {if (p && q) printf "%.3f", p / q}' "$res/bench_rows8_kernels.tsv")
stamp "rows ratio $ratio"
if awk -v r="$ratio" 'BEGIN {exit !(r != "" && r < 1.25)}'; then
  BUILD_DIR=$root/build/gpu-check GPU_CHECK_STEPS=sections GPU_CHECK_SECTIONS="49b-*" \
    timeout $((570 - (SECONDS - start))) scripts/gpu-check.sh "$res/section_49b" --skip-build > "$res/section_49b.txt" 2>&1
  stamp "section 49b rc $?: $(grep -c '| pass |' "$res/section_49b/summary.md") pass, $(grep -c '| FAIL |' "$res/section_49b/summary.md") FAIL"
fi
