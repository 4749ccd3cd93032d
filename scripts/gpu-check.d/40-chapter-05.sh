# Chapter 05: the benchmark report behind docs/05_wmma_gemm.md, and what the compiler made
# of the tensor-core kernels.
#
# Result files (under $out/results):
#   bench_05.tsv, bench_05_kernels.tsv   every variant at B=8 D=1024 L=4096 W=4 fp16 (M=32768,
#                                        K=4096, N=1024), the block variant once per --block-tile,
#                                        and the default shape; the kernels file carries ms, TFLOP/s
#                                        and GB/s of each kernel
#   ch05_resources.txt                   registers, shared memory, stack per kernel (cuobjdump) and
#                                        the count of HMMA instructions in each tensor-core kernel

bench5=$out/results/bench_05.tsv
rm -f "$bench5" "${bench5%.tsv}_kernels.tsv"
exe5=$build/chapters/05_wmma_gemm/ch05_wmma_gemm
big5=(--batch 8 --dim 1024 --seqlen 4096 --width 4 --iters 10 --warmup 2)

run5() {  # run5 TAG ARGS...
  local tag=$1
  shift
  local log=$out/logs/bench_ch05_$tag.log
  step "bench ch05 $tag"
  if "$exe5" "$@" --summary "$bench5" > "$log" 2>&1; then
    row ch05_wmma_gemm "bench $tag" pass "$(awk '/^summary \(/ {s = 1; next} s && $2 ~ /^[0-9.]+$/ {printf "%s %s ms/%s ms %s TFLOP/s; ", $1, $2, $4, $6}' "$log")"
  else
    row ch05_wmma_gemm "bench $tag" FAIL "see logs/$(basename "$log")"
  fi
}

if [[ -x $exe5 ]]; then
  run5 big "${big5[@]}"
  run5 big_bias_silu "${big5[@]}" --bias --silu --variant sparse
  for tile in 128x128x32 64x64x32; do
    run5 "big_block_$tile" "${big5[@]}" --variant block --block-tile "$tile"
  done
  run5 default --bias --silu

  res=$out/results/ch05_resources.txt
  {
    echo "# cuobjdump --dump-resource-usage (tensor-core kernels)"
    cuobjdump --dump-resource-usage "$exe5" | grep -A1 -E 'Function .*wmma' | grep -v '^--'
    echo
    echo "# HMMA instructions per kernel (cuobjdump --dump-sass)"
    cuobjdump --dump-sass "$exe5" | awk '/Function : / {f = $3} /HMMA/ {n[f]++} END {for (k in n) print n[k], k}' | grep wmma | sort -k2
  } > "$res" 2>&1
  if grep -q 'wmma_gemm_block' "$res" && awk '/HMMA instructions/ {s = 1; next} s && $1 > 0 {found = 1} END {exit !found}' "$res"; then
    row ch05_wmma_gemm "HMMA in the tensor-core kernels" pass "$(awk '/HMMA instructions/ {s = 1; next} s {printf "%s ", $1}' "$res")"
  else
    row ch05_wmma_gemm "HMMA in the tensor-core kernels" FAIL "see results/ch05_resources.txt"
  fi
else
  row ch05_wmma_gemm bench FAIL "$exe5 not built"
fi
