#!/usr/bin/env bash
# One-off, call 2: chapter 11 with --spans on/off from one build, against A (the kernel as
# committed before: HEAD files in experiments/A, only its main.cu compiled again).
set -uo pipefail
root=$(pwd); out=${1:?}
build=$root/build/gpu-check
res=/tmp/exp2; rm -rf $res; mkdir -p $res/logs $res/results
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
pack() { tar czf "$out/exp2.tgz" -C $res results logs; }

stamp configure
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > $res/logs/configure.log 2>&1 || { tail -30 $res/logs/configure.log; exit 1; }
target=chapters/11_decode_update/ch11_decode_update
obj=chapters/11_decode_update/CMakeFiles/ch11_decode_update.dir/main.cu.o
ninja -C "$build" -t commands "$target" > $res/logs/commands.txt
mkdir -p "$build/variant_A"
grep -- " -c .*11_decode_update/main.cu" $res/logs/commands.txt | sed "s| -I$root | -I$root/experiments/A -I$root |; s|$obj|$build/variant_A/main.cu.o|g; s| $root/chapters/11_decode_update/main.cu | $root/experiments/A/chapters/11_decode_update/main.cu |" > "$build/variant_A/compile.sh"
(cd "$build" && bash "$build/variant_A/compile.sh") > $res/logs/build_A.log 2>&1 &
stamp "build ch11 + its tests (and A's main.cu beside them)"
cmake --build "$build" -j "$(nproc)" --target ch11_decode_update conv1d_tests_ch11 > $res/logs/build.log 2>&1 || { tail -40 $res/logs/build.log; pack; exit 1; }
wait
link=$(grep -- "-o $target " $res/logs/commands.txt)
link=${link//$obj/$build/variant_A/main.cu.o}
link=${link//-o $target /-o $build/variant_A/ch11_decode_update }
(cd "$build" && eval "$link") >> $res/logs/build_A.log 2>&1 || { tail -30 $res/logs/build_A.log; pack; exit 1; }
echo "warning lines: $(grep -c warning $res/logs/build.log)"
C=$build/$target; A=$build/variant_A/ch11_decode_update
for e in "$A" "$C"; do cuobjdump --dump-resource-usage "$e" | grep -A1 'decode_update_vectorI13__nv_bfloat16Li4ELi[14]E' | paste - - | sed -E 's/.*vectorI13__nv_bfloat16(Li4ELi[0-9]E(Lb[01]E)?).*REG:([0-9]+) STACK:([0-9]+).*/\1 REG \3 STACK \4/' | sed "s|^|$(basename $(dirname $e)) |"; done | tee $res/results/resources.txt

stamp "ctest (chapter 11)"
CONV1D_REQUIRE_GPU=1 ctest --test-dir "$build" -R 'Ch11|ch11' -j 4 > $res/logs/ctest_ch11.log 2>&1; echo "ctest rc $?"
grep -E "tests passed|Failed|FAILED" $res/logs/ctest_ch11.log | head

bench() {  # bench TAG EXE ARGS...
  local tag=$1 exe=$2; shift 2
  "$exe" "$@" --summary $res/results/bench_$tag.tsv > /tmp/one.log 2>&1 || { echo "FAIL $tag $*"; tail -5 /tmp/one.log; }
  { echo "=== $tag $*"; cat /tmp/one.log; } >> $res/logs/bench.log
  echo "$tag $* :: $(grep -E '^  (linear|circular)_graph +[0-9.]+ us' /tmp/one.log | awk '{printf "%s %s us; ", $1, $2}') $(grep -c VERIFIED /tmp/one.log) verified"
}
base=(--dim 4096 --width 4 --silu --steps 64 --iters 20 --warmup 3 --dtype bf16 --launch graph)
stamp "goal shapes: A, spans off, spans on, twice"
for shape in "256 1" "64 1" "1 1" "256 4"; do
  read -r b t <<< "$shape"
  for rep in 1 2; do
    [[ $t == 4 && $rep == 2 ]] && continue
    bench goal_A "$A" "${base[@]}" --batch $b --seqlen $t
    bench goal_off "$C" "${base[@]}" --batch $b --seqlen $t --spans off
    bench goal_on "$C" "${base[@]}" --batch $b --seqlen $t --spans on
  done
done
pack
stamp "where spans start to pay: B = 1 .. 64, T = 1 and 4, linear"
for t in 1 4; do for b in 1 2 4 8 16 32 64; do for sp in off on; do
  bench cross_$sp "$C" "${base[@]}" --buffer linear --batch $b --seqlen $t --spans $sp
done; done; done
pack
stamp ncu
for v in A:off C:off C:on; do
  exe=${v%%:*}; sp=${v##*:}; [[ $exe == A ]] && exe=$A || exe=$C
  for t in 1 4; do
    [[ $v == A:off && $t == 4 ]] && continue
    ncu --csv --page raw --clock-control none --kernel-name regex:decode_update_vector \
      --section SpeedOfLight --section MemoryWorkloadAnalysis_Tables --section LaunchStats --section Occupancy --section WarpStateStats \
      --log-file $res/results/ncu_${v/:/_}_t$t.csv "$exe" --batch 256 --dim 4096 --seqlen $t --width 4 --dtype bf16 --silu \
      --steps 3 --iters 1 --warmup 0 --buffer linear --launch direct $([[ $v == A:off ]] || echo --spans $sp) > $res/logs/ncu_${v/:/_}_t$t.log 2>&1 || echo "ncu $v t$t failed"
    sed -i '/^==PROF==/d' $res/results/ncu_${v/:/_}_t$t.csv
  done
done
pack
stamp sanitizers
for tool in memcheck racecheck; do
  for args in "--spans on --gather --bias --silu --batch 5 --dim 1000 --seqlen 3 --width 4 --dtype bf16 --threads 128 --steps 3" \
              "--spans on --batch 3 --dim 200 --seqlen 8 --width 3 --dtype fp32 --threads 512 --steps 2"; do
    if compute-sanitizer --tool $tool --error-exitcode 9 "$C" $args --iters 1 --warmup 0 > /tmp/san.log 2>&1; then r=pass; else r=FAIL; fi
    echo "$tool [$args]: $r $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' /tmp/san.log | head -1)" | tee -a $res/results/sanitizers.txt
    cat /tmp/san.log >> $res/logs/sanitizers.log
  done
done
pack
stamp done
