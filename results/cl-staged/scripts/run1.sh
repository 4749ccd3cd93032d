#!/usr/bin/env bash
# Channel-last forward prototype (results/cl-staged/prototype/cl_proto.cu) beside chapter 08's
# cl_tiled and the copy ceiling; meanwhile chapter 10's unit tests (the staged backward test's kernel
# assertions had not run on a GPU). Everything comes back as run.tgz.
set -uo pipefail
root=$(pwd); out=${OUT:?set OUT}
res=$(mktemp -d); start=$SECONDS; stamp() { echo "[$((SECONDS - start)) s] $*"; }
trap 'sed -i "s#$root/##g" "$res"/*.txt 2>/dev/null; tar czf "$out/run.tgz" -C "$res" .' EXIT
b=$root/build/gpu-check
nvidia-smi --query-gpu=name --format=csv,noheader > "$res/gpu.txt"; cat "$res/gpu.txt"
cmake -S . -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native > "$res/configure.txt" 2>&1
cmake --build "$b" -j 12 --target conv1d_common > "$res/build_common.txt" 2>&1 || { tail -n 30 "$res/build_common.txt"; exit 1; }
stamp "common built"
( nvcc -O3 -std=c++17 -arch=native -I. results/cl-staged/prototype/cl_proto.cu "$b/common/libconv1d_common.a" -lgomp -o "$b/cl_proto" > "$res/proto_build.txt" 2>&1 ) &
cmake --build "$b" -j 12 --target conv1d_tests_ch10 > "$res/build.txt" 2>&1 || { tail -n 40 "$res/build.txt"; exit 1; }
stamp "tests built"
wait
stamp "prototype built: $(grep -c error "$res/proto_build.txt") error lines"
"$b/cl_proto" > "$res/proto.txt" 2>&1; stamp "prototype rc $?"
CONV1D_REQUIRE_GPU=1 ctest --test-dir "$b" -R 'unit\.Ch10' -j 4 --output-on-failure > "$res/ctest.txt" 2>&1
stamp "ctest rc $?: $(grep -E 'tests passed' "$res/ctest.txt")"
column -t -s $'\t' "$res/proto.txt" | cut -c1-150
