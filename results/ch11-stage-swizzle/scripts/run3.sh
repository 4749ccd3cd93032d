#!/usr/bin/env bash
# Call 4 (H200): the flipped stage's step at B = 256 with blocks of 64, 128, 256 and 512 threads
# (--threads; the launch picks 256 there), T = 4 and T = 1, twice. Run from the repository root
# with OUT set; everything comes back as one run.tgz.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
b=$root/${BUILD_DIR:-build/gpu-check}
res=$(mktemp -d); start=$SECONDS
trap 'tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"
cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure.log" 2>&1
cmake --build "$b" -j "$(nproc)" --target ch11_decode_update > "$res/build.log" 2>&1 || { tail -n 60 "$res/build.log"; exit 1; }
echo "build: $((SECONDS - start)) s"
E=$b/chapters/11_decode_update/ch11_decode_update
base=(--dim 4096 --width 4 --silu --steps 64 --iters 20 --warmup 3 --dtype bf16 --launch graph --buffer linear --batch 256)
for rep in 1 2; do
  for t in 4 1; do
    for th in 64 128 256 512; do
      "$E" "${base[@]}" --seqlen $t --threads $th --summary "$res/bench_threads.tsv" > /tmp/one.log 2>&1 || { echo "FAIL T=$t threads=$th"; tail -3 /tmp/one.log; }
      { echo "=== T=$t threads=$th"; cat /tmp/one.log; } >> "$res/bench.log"
    done
  done
done
sed -i "s#$root/##g" "$res/bench.log"
echo "done: $((SECONDS - start)) s"
