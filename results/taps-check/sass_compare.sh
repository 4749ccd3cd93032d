#!/usr/bin/env bash
# Chapter 10's backward library (backward_{bf16,fp16,fp32}.cu, every kernel it instantiates) compiled
# for sm_90 at the commit the GPU check ran (run1: c4d646c) and at the tree given, kernel by kernel:
# the SASS instructions compared (addresses dropped). Needs nvcc and cuobjdump on PATH.
#   results/taps-check/sass_compare.sh OLD_TREE NEW_TREE > results/taps-check/sass_compare.txt
set -euo pipefail
tmp=$(mktemp -d)
for tree in "$1" "$2"; do
  tag=$([[ $tree == "$1" ]] && echo old || echo new)
  for d in bf16 fp16 fp32; do
    nvcc -O3 -DNDEBUG -arch=sm_90 --expt-relaxed-constexpr -std=c++17 -I"$tree" -cubin \
      -o "$tmp/$tag-$d.cubin" "$tree/chapters/10_packed_sequences/backward_$d.cu"
    cuobjdump -sass "$tmp/$tag-$d.cubin" | sed 's#/\*[0-9a-f]\{4,5\}\*/##' > "$tmp/$tag-$d.sass"
  done
done
for d in bf16 fp16 fp32; do
  python3 - "$tmp/old-$d.sass" "$tmp/new-$d.sass" "$d" <<'PY'
import re, sys
def kernels(path):
    out, cur = {}, None
    for line in open(path):
        m = re.search(r'Function : (\S+)', line)
        if m:
            cur = m.group(1); out[cur] = []
        elif cur and ';' in line:
            out[cur].append(line.split(';')[0].strip())
    return out
a, b = kernels(sys.argv[1]), kernels(sys.argv[2])
same = sum(1 for k in a if a[k] == b.get(k))
print(f"{sys.argv[3]}: {len(a)} kernels before, {len(b)} after, {same} with the same SASS")
PY
done
