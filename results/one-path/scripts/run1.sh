#!/usr/bin/env bash
# A probe (two patches, not yet committed): results/cf-staged-one-path/one_path.patch (chapter 08's
# cf_staged gives every vector the predicated masked form) and results/grid-constant/
# cl_tiled_packed.patch (__grid_constant__ on the packed cl_tiled's policy). Builds chapters 08 and
# 10 twice at once, as committed (build/base) and patched (a scratch copy), then runs each forward
# benchmark the patches touch on both builds back to back, then the patched build's chapter 08 and
# 10 tests.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'exit 143' TERM
trap 'sed -i "s#$root/##g; s#/tmp/probe/##g" "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
p=/tmp/probe; rm -rf $p; mkdir -p $p
tar --exclude=./build --exclude=./.git -cf - . | tar -xf - -C $p
(cd $p && git init -q && git apply results/cf-staged-one-path/one_path.patch results/grid-constant/cl_tiled_packed.patch) &&
  stamp "patches applied"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"; cat "$res/gpu.txt"
targets=(ch08_direct_forward ch10_packed_sequences)
build() {  # build SRC DIR LOG TARGETS...
  cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$3.configure" 2>&1 &&
    cmake --build "$2" -j 8 --target "${@:4}" > "$3" 2>&1
}
build "$root" "$root/build/base" "$res/build_base.txt" "${targets[@]}" &
build $p $p/build "$res/build_patched.txt" "${targets[@]}" conv1d_tests_ch08 conv1d_tests_ch10 &
wait
stamp "builds: base $(grep -c 'error' "$res/build_base.txt") / patched $(grep -c 'error' "$res/build_patched.txt") error lines"
big=(--batch 8 --dim 4096 --seqlen 4096 --width 4 --iters 20 --warmup 3 --initial-states --direction forward)
configs=("rows_bf16|--dtype bf16 --form rows --seq-lens random:8"
         "rows64_bf16|--dtype bf16 --form rows --seq-lens random:64 --layout channel-first"
         "rows_bf16_bias_silu|--dtype bf16 --form rows --seq-lens random:8 --bias --silu"
         "states_bf16|--dtype bf16 --form rows --seq-lens none --layout channel-first"
         "rows_fp32|--dtype fp32 --form rows --seq-lens random:8"
         "varlen_fp32|--dtype fp32 --form varlen --seq-lens random:64"
         "varlen_bf16|--dtype bf16 --form varlen --seq-lens random:64"
         "varlen_bf16_bias_silu|--dtype bf16 --form varlen --seq-lens random:64 --bias --silu")
for c in "${configs[@]}"; do
  tag=${c%%|*}; read -r -a args <<< "${c#*|}"
  for b in base patched; do
    exe=$root/build/base/chapters/10_packed_sequences/ch10_packed_sequences
    [[ $b == patched ]] && exe=$p/build/chapters/10_packed_sequences/ch10_packed_sequences
    "$exe" "${big[@]}" "${args[@]}" --summary "$res/bench_$b.tsv" > "$res/ch10_${tag}_$b.txt" 2>&1
    stamp "$tag $b rc $?: $(awk '/^summary \(/ {s = 1; next} s && $2 ~ /^[0-9.]+$/ {printf "%s %s ms; ", $1, $4}' "$res/ch10_${tag}_$b.txt")"
  done
done
for b in base patched; do
  exe=$root/build/base/chapters/08_direct_forward/ch08_direct_forward
  [[ $b == patched ]] && exe=$p/build/chapters/08_direct_forward/ch08_direct_forward
  for dt in bf16 fp32; do
    "$exe" --batch 8 --dim 4096 --seqlen 4096 --width 4 --dtype $dt --layout channel-first --iters 20 --warmup 3 \
      --summary "$res/bench08_$b.tsv" > "$res/ch08_${dt}_$b.txt" 2>&1
    stamp "ch08 $dt $b rc $?: $(awk '/^summary \(/ {s = 1; next} s && $2 ~ /^[0-9.]+$/ {printf "%s %s ms; ", $1, $4}' "$res/ch08_${dt}_$b.txt")"
  done
done
(cd $p && CONV1D_REQUIRE_GPU=1 timeout 200 ctest --test-dir build -R '[cC]h(08|10)' -j 4 --output-on-failure > "$res/ctest_patched.txt" 2>&1)
stamp "ctest patched rc $?: $(grep -E 'tests passed' "$res/ctest_patched.txt" | tail -1)"
