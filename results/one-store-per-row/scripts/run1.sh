#!/usr/bin/env bash
# Call 1 (H100): chapter 08's channel-last kernel with one 16-byte store per row (store_vec) against
# the kernel before (B: experiments/B holds the committed cl_tiled.cuh; only chapter 08's main.cu is
# compiled again against it), and chapter 11's stage with the bank swizzle against the plain one (P:
# experiments/P holds the committed warp_runs.cuh). Tests of chapters 08, 10 and 11 on the new code.
# Run from the repository root with OUT set; experiments/ is not part of the repository.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
b=$root/${BUILD_DIR:-build/gpu-check}
start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$out/gpu.txt"
cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$out/configure.log" 2>&1

# variant NAME TARGET: TARGET's main.cu compiled again with experiments/NAME first on the include
# path, linked as $b/variant_NAME/<exe>.
variant() {
  local name=$1 target=$2 dir=$b/variant_$1 exe; exe=$(basename "$target")
  local obj; obj=$(dirname "$target")/CMakeFiles/$exe.dir/main.cu.o
  mkdir -p "$dir"
  ninja -C "$b" -t commands "$target" > "$dir/commands.txt"
  grep -- " -c .*$(dirname "$target")/main.cu" "$dir/commands.txt" |
    sed "s| -I$root | -I$root/experiments/$name -I$root |; s|$obj|$dir/main.cu.o|g" > "$dir/compile.sh"
  (cd "$b" && bash "$dir/compile.sh") > "$dir/build.log" 2>&1 || { tail -20 "$dir/build.log"; return 1; }
  local link; link=$(grep -- "-o $target " "$dir/commands.txt")
  link=${link//$obj/$dir/main.cu.o}; link=${link//-o $target /-o $dir/$exe }
  (cd "$b" && eval "$link") >> "$dir/build.log" 2>&1 || { tail -20 "$dir/build.log"; return 1; }
}
stamp build
variant B chapters/08_direct_forward/ch08_direct_forward & vb=$!
variant P chapters/11_decode_update/ch11_decode_update & vp=$!
cmake --build "$b" -j "$(nproc)" --target ch08_direct_forward conv1d_tests_ch08 ch10_packed_sequences \
  conv1d_tests_ch10 ch11_decode_update conv1d_tests_ch11 > "$out/build.log" 2>&1 || { tail -n 60 "$out/build.log"; exit 1; }
wait $vb || echo "variant B failed"; wait $vp || echo "variant P failed"
echo "build: $((SECONDS - start)) s, $(grep -c warning "$out/build.log") warning lines" | tee "$out/build_summary.txt"

stamp ctest
CONV1D_REQUIRE_GPU=1 ctest --test-dir "$b" -R 'ch08|Ch08|ch10|Ch10|ch11|Ch11' -j 4 --output-on-failure > "$out/ctest.log" 2>&1
echo "ctest rc $?: $(grep -E 'tests passed' "$out/ctest.log")"
grep -E "\*\*\*Failed|FAILED" "$out/ctest.log" | head -20
sed -i "s#$root/##g" "$out/ctest.log"

E8=$b/chapters/08_direct_forward/ch08_direct_forward; B8=$b/variant_B/ch08_direct_forward
E11=$b/chapters/11_decode_update/ch11_decode_update; P11=$b/variant_P/ch11_decode_update
for e in "$B8" "$E8"; do
  cuobjdump --dump-resource-usage "$e" | grep -A1 'conv_fwd_cl_tiledI' | paste - - |
    sed -E 's/.*cl_tiledI(6__half|13__nv_bfloat16|f)(Li[0-9]+E)(Li[0-9]+E)(Li[0-9]+E)N.*REG:([0-9]+) STACK:([0-9]+).*/\1 \2\3\4 REG \5 STACK \6/' |
    sed "s|^|$(basename "$(dirname "$e")") |"
done > "$out/resources_cl_tiled.txt"

bench() {  # bench TAG EXE ARGS...
  local tag=$1 exe=$2; shift 2
  "$exe" "$@" --summary "$out/bench_$tag.tsv" > /tmp/one.log 2>&1 || { echo "FAIL $tag $*"; tail -5 /tmp/one.log; }
  { echo "=== $tag $*"; cat /tmp/one.log; } >> "$out/bench.log"
  echo "$tag: $(grep -c VERIFIED /tmp/one.log) verified"
}
stamp "chapter 08 channel-last: before (B) and now, twice"
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --layout channel-last --variant tiled)
for rep in 1 2; do
  for v in B now; do
    exe=$E8; [[ $v == B ]] && exe=$B8
    bench "ch08_$v" "$exe" "${big[@]}" --dtype bf16
    bench "ch08_$v" "$exe" "${big[@]}" --dtype bf16 --bias --silu
    bench "ch08_$v" "$exe" "${big[@]}" --dtype fp32
    bench "ch08_$v" "$exe" --batch 32 --dim 2048 --seqlen 512 --width 4 --iters 20 --warmup 3 --layout channel-last --variant tiled --dtype bf16
    bench "ch08_$v" "$exe" --batch 1 --dim 4096 --seqlen 16384 --width 4 --iters 20 --warmup 3 --layout channel-last --variant tiled --dtype bf16
  done
done
stamp "chapter 11: plain stage (P) and swizzled (now), twice"
base=(--dim 4096 --width 4 --silu --steps 64 --iters 20 --warmup 3 --dtype bf16 --launch graph)
for rep in 1 2; do
  for shape in "256 4" "256 1" "256 2" "256 8" "64 1" "64 4"; do
    read -r bb t <<< "$shape"
    bench ch11_P "$P11" "${base[@]}" --batch "$bb" --seqlen "$t"
    bench ch11_now "$E11" "${base[@]}" --batch "$bb" --seqlen "$t"
  done
done
stamp done
cd "$out" && tar czf run.tgz --exclude=run.tgz . && find . -mindepth 1 ! -name run.tgz -delete
