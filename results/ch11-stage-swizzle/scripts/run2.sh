#!/usr/bin/env bash
# Call 2 (H100) and call 3 (H200): chapter 11 with the stage flipped for runs of 4 chunks only,
# against the plain stage (P: experiments/P holds the warp_runs.cuh committed before; only chapter
# 11's main.cu is compiled again against it). Chapter 11's tests and two sanitizers on the new code,
# then the goal shapes and steps of 2 and 8 tokens, P then now, once. Run from the repository root
# with OUT set; experiments/ is not part of the repository. Everything comes back as one run.tgz.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
b=$root/${BUILD_DIR:-build/gpu-check}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
finish() { tar czf "$out/run.tgz" -C "$res" .; }
trap finish EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"
cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure.log" 2>&1
# variant NAME TARGET: TARGET's main.cu compiled again with experiments/NAME first on the include
# path (variant_compile, beside the main build), then linked like TARGET (variant_link, after it).
variant_compile() {
  local name=$1 target=$2 dir=$b/variant_$1 exe; exe=$(basename "$target")
  local obj; obj=$(dirname "$target")/CMakeFiles/$exe.dir/main.cu.o
  mkdir -p "$dir"
  ninja -C "$b" -t commands "$target" > "$dir/commands.txt"
  grep -- " -c .*$(dirname "$target")/main.cu" "$dir/commands.txt" |
    sed "s| -I$root | -I$root/experiments/$name -I$root |; s|$obj|$dir/main.cu.o|g" > "$dir/compile.sh"
  (cd "$b" && bash "$dir/compile.sh") > "$dir/build.log" 2>&1 || { tail -20 "$dir/build.log"; return 1; }
}
variant_link() {
  local name=$1 target=$2 dir=$b/variant_$1 exe; exe=$(basename "$target")
  local obj; obj=$(dirname "$target")/CMakeFiles/$exe.dir/main.cu.o
  local link; link=$(grep -- "-o $target " "$dir/commands.txt")
  link=${link//$obj/$dir/main.cu.o}; link=${link//-o $target /-o $dir/$exe }
  (cd "$b" && eval "$link") >> "$dir/build.log" 2>&1 || { tail -20 "$dir/build.log"; return 1; }
}
stamp build
variant_compile P chapters/11_decode_update/ch11_decode_update & vp=$!
cmake --build "$b" -j "$(nproc)" --target ch11_decode_update conv1d_tests_ch11 > "$res/build.log" 2>&1 || { tail -n 60 "$res/build.log"; exit 1; }
wait $vp && variant_link P chapters/11_decode_update/ch11_decode_update || echo "variant P failed"
echo "build: $((SECONDS - start)) s, $(grep -c warning "$res/build.log") warning lines" | tee "$res/build_summary.txt"
E=$b/chapters/11_decode_update/ch11_decode_update; P=$b/variant_P/ch11_decode_update
for e in "$P" "$E"; do
  cuobjdump --dump-resource-usage "$e" | grep -A1 'decode_update_vectorI13__nv_bfloat16Li4E' | paste - - |
    sed -E 's/.*vectorI13__nv_bfloat16Li4ELi([0-9])ELb([01])E.*REG:([0-9]+) STACK:([0-9]+).*/T=\1 spans=\2 REG \3 STACK \4/' |
    sed "s|^|$(basename "$(dirname "$e")") |"
done > "$res/resources.txt"
stamp ctest
if [[ ${SKIP_TESTS:-0} != 1 ]]; then
  CONV1D_REQUIRE_GPU=1 ctest --test-dir "$b" -R 'Ch11|ch11' -j 4 --output-on-failure > "$res/ctest_ch11.txt" 2>&1
  echo "ctest rc $?: $(grep -E 'tests passed' "$res/ctest_ch11.txt")"
  sed -i "s#$root/##g" "$res/ctest_ch11.txt"
  for tool in memcheck racecheck; do
    for args in "--spans on --gather --bias --silu --batch 5 --dim 1000 --seqlen 4 --width 4 --dtype bf16 --threads 128 --steps 3" \
                "--spans on --batch 3 --dim 200 --seqlen 4 --width 3 --dtype fp32 --threads 512 --steps 2"; do
      if compute-sanitizer --tool $tool --error-exitcode 9 "$E" $args --iters 1 --warmup 0 > /tmp/san.log 2>&1; then r=pass; else r=FAIL; fi
      echo "$tool [$args]: $r $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' /tmp/san.log | head -1)" | tee -a "$res/sanitizers.txt"
    done
  done
fi
bench() {  # bench TAG EXE ARGS...
  local tag=$1 exe=$2; shift 2
  "$exe" "$@" --summary "$res/bench_$tag.tsv" > /tmp/one.log 2>&1 || { echo "FAIL $tag $*"; tail -5 /tmp/one.log; }
  { echo "=== $tag $*"; cat /tmp/one.log; } >> "$res/bench.log"
}
stamp "goal shapes and T = 2, 8: P then now"
base=(--dim 4096 --width 4 --silu --steps 64 --iters 20 --warmup 3 --dtype bf16 --launch graph)
for shape in "256 4" "256 1" "64 1" "1 1" "256 2" "256 8" "64 4"; do
  read -r bb t <<< "$shape"
  bench P "$P" "${base[@]}" --batch "$bb" --seqlen "$t"
  bench now "$E" "${base[@]}" --batch "$bb" --seqlen "$t"
done
sed -i "s#$root/##g" "$res/bench.log"
stamp done
