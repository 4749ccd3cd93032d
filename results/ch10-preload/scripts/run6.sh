#!/usr/bin/env bash
# Call 6 (H100), for a later step of chapter 08, not this one: chapter 08's channel-last tiled
# kernel as committed (`base`) against the same with the tenth version's prefetch wherever a tile
# has more rows than a batch, in 16-bit types (`pf`, ch08_pf.patch), at a few shapes, bf16 and
# fp16. Run from the repository root with OUT set; everything comes back as one run.tgz.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'sed -i "s#$root/##g" "$res"/*.log "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$res/gpu.txt"
pf=$(mktemp -d)
tar cf - --exclude=./build --exclude=./.git . | tar xf - -C "$pf"
(cd "$pf" && patch -p1 -s < "$root/results/ch10-preload/ch08_pf.patch") || exit 1
build() {  # build NAME SOURCE
  cmake -S "$2" -B "$root/build/exp-$1" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure_$1.log" 2>&1 &&
  cmake --build "$root/build/exp-$1" -j 8 --target ch08_direct_forward > "$res/build_$1.log" 2>&1
}
build base "$root" & p1=$!; build pf "$pf" & p2=$!
wait $p1 || { tail -n 30 "$res/build_base.log"; exit 1; }
wait $p2 || { tail -n 30 "$res/build_pf.log"; exit 1; }
stamp build
for shape in "4 512 2048" "8 4096 4096" "1 4096 32768" "16 1024 8192" "2 2048 2048" "8 768 4096"; do
  set -- $shape
  for dt in bf16 fp16; do
    for v in base pf; do
      tag=${v}_${dt}_B$1_D$2_L$3
      (( SECONDS - start < 560 )) || { stamp "skip $tag"; continue; }
      "$root/build/exp-$v/chapters/08_direct_forward/ch08_direct_forward" --layout channel-last \
        --variant tiled --dtype $dt --batch $1 --dim $2 --seqlen $3 --iters 20 --warmup 3 \
        --summary "$res/$tag.tsv" > "$res/$tag.log" 2>&1
      stamp "$tag rc $? $(grep -o 'main kernel.*' "$res/$tag.log" | tail -n 1)"
    done
  done
done
