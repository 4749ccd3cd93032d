#!/usr/bin/env bash
# Call 2 (H100): the second form of the span map (the map also holds a mixed vector's flags, which
# the convolution reads, and cf_row_heads takes only each row's first vector and final states),
# against --span-map off, and a variant of it held to 48 registers (lb10: experiments/lb10 holds
# chapter 08's cf_chunked.cuh with __launch_bounds__(128, 10) on the span map's kernel; chapter
# 10's bf16 forward is compiled again against it into a copy of the library, and the chapter linked
# with that). Tests of chapters 08 and 10, registers, the rows forward at 8 x 4096 x 4096 bf16 (8
# documents a row and states; states alone) off, on, lb10 interleaved, twice; Nsight Compute on
# the map's three kernels; compute-sanitizer's four tools on the map's path. Run from the
# repository root with OUT set; experiments/ is not part of the repository. Everything comes back
# as one run.tgz.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
b=$root/${BUILD_DIR:-build/gpu-check}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'sed -i "s#$root/##g" "$res"/*.log "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"
cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure.log" 2>&1
lib=chapters/10_packed_sequences/libconv1d_ch10.a exe=chapters/10_packed_sequences/ch10_packed_sequences
v=$b/variant_lb10; mkdir -p "$v"
ninja -C "$b" -t commands "$exe" > "$v/commands.txt"
grep -- " -c .*forward_bf16.cu " "$v/commands.txt" | sed "s| -I$root | -I$root/experiments/lb10 -I$root |; s| -o [^ ]*forward_bf16.cu.o| -o $v/forward_bf16.cu.o|; s| -MD -MT [^ ]* -MF [^ ]*||" > "$v/compile.sh"
(cd "$b" && bash "$v/compile.sh") > "$v/build.log" 2>&1 & vp=$!
cmake --build "$b" -j "$(nproc)" --target ch10_packed_sequences conv1d_tests_ch10 ch08_direct_forward conv1d_tests_ch08 > "$res/build.log" 2>&1 || { tail -n 60 "$res/build.log"; exit 1; }
if wait $vp; then
  cp "$b/$lib" "$v/libconv1d_ch10.a" && (cd "$v" && ar r libconv1d_ch10.a forward_bf16.cu.o)
  link=$(grep -- "-o $exe " "$v/commands.txt"); link=${link//$lib/$v/libconv1d_ch10.a}; link=${link//-o $exe /-o $v/ch10_packed_sequences }
  (cd "$b" && eval "$link") >> "$v/build.log" 2>&1 || echo "variant link failed"
else
  echo "variant compile failed"; tail -20 "$v/build.log"
fi
stamp "build: $(grep -c warning "$res/build.log") warning lines" | tee "$res/build_summary.txt"
E=$b/$exe; L=$v/ch10_packed_sequences
for e in "$E" "$L"; do
  echo "== $(basename "$(dirname "$e")")"
  cuobjdump --dump-resource-usage "$e" | grep -A1 'conv_fwd_cf_chunked\|make_span_map\|cf_row_heads\|cf_row_edges' | c++filt
done > "$res/resources.txt"
bench() {  # bench TAG EXE ARGS...
  local tag=$1 e=$2; shift 2
  "$e" "$@" --summary "$res/bench_$tag.tsv" > "$res/one.log" 2>&1 || { echo "FAIL $tag $*"; tail -5 "$res/one.log"; }
  { echo "=== $tag $(basename "$(dirname "$e")") $*"; cat "$res/one.log"; } >> "$res/bench.log"
}
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --initial-states --dtype bf16 --form rows --layout channel-first --direction forward)
for rep in 1 2; do
  for lens in random:8 none; do
    tag=rows; [[ $lens == none ]] && tag=states
    bench "${tag}_off" "$E" "${big[@]}" --seq-lens $lens --span-map off
    bench "${tag}_on" "$E" "${big[@]}" --seq-lens $lens --span-map on
    [[ -x $L ]] && bench "${tag}_lb10" "$L" "${big[@]}" --seq-lens $lens --span-map on
  done
done
bench rows_bias_silu "$E" "${big[@]}" --seq-lens random:8 --bias --silu
bench rows_fp32 "$E" "${big[@]/bf16/fp32}" --seq-lens random:8
stamp bench
ncu --csv --page raw --clock-control none --kernel-name regex:'conv_fwd_cf_chunked|make_span_map|cf_row_heads' \
  --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,launch__registers_per_thread,launch__occupancy_limit_registers \
  --log-file "$res/ncu.csv" "$E" "${big[@]}" --seq-lens random:8 --iters 1 --warmup 0 > "$res/ncu.log" 2>&1
sed -i '/^==PROF==/d' "$res/ncu.csv"
stamp ncu
CONV1D_REQUIRE_GPU=1 ctest --test-dir "$b" -R 'Ch10|ch10|Ch08|ch08' -j 4 --output-on-failure > "$res/ctest.txt" 2>&1
stamp "ctest rc $?: $(grep -E 'tests passed' "$res/ctest.txt")"
: > "$res/sanitizers.txt"
for shape in "--batch 3 --dim 37 --seqlen 64 --width 3 --bias --silu --dtype bf16 --initial-states --seq-lens random:9" \
             "--batch 2 --dim 40 --seqlen 12 --width 4 --dtype fp32 --initial-states --seq-lens 1,0,2,3,1" \
             "--batch 2 --dim 16 --seqlen 48 --width 4 --dtype fp16 --initial-states --seq-lens none --chunks 3"; do
  for tool in memcheck racecheck initcheck synccheck; do
    # shellcheck disable=SC2086  # $shape is a list of flags
    compute-sanitizer --tool $tool --error-exitcode 99 "$E" $shape --layout channel-first --form rows --iters 1 --warmup 0 > "$res/one.log" 2>&1
    echo "$tool rc=$? | $shape | $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$res/one.log" | tail -n1)" | tee -a "$res/sanitizers.txt"
    { echo "=== $tool $shape"; cat "$res/one.log"; } >> "$res/sanitizers.log"
  done
done
stamp done
