#!/usr/bin/env bash
# Makes divergence.tsv and sass_ops.txt of this folder (see README.md), from the repository root:
# the kernel as committed and with one_path.patch, compiled for sm_90 with the project's flags.
# Needs nvcc, g++, a configured build/default (its common library) and cuobjdump (with nvdisasm) on
# PATH; no GPU.
set -euo pipefail
here=results/cf-staged-one-path
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
g++ -O2 -std=c++17 -fopenmp -I. "$here/divergence.cpp" chapters/10_packed_sequences/packing.cpp \
  build/default/common/libconv1d_common.a -L/usr/local/cuda/lib64 -lcudart -o "$tmp/divergence"
{
  printf 'seq_lens\tvectors\tfull_pct\tpadding_pct\tmixed_pct\twarp_steps\tboth_forms_pct\n'
  "$tmp/divergence" random:8
  "$tmp/divergence" random:64
} > "$here/divergence.tsv"
: > "$here/sass_ops.txt"
for form in committed one_path; do
  mkdir -p "$tmp/$form" && tar -cf - chapters common | tar -xf - -C "$tmp/$form"
  [[ $form == committed ]] || patch -s -d "$tmp/$form" -p1 < "$here/$form.patch"
  nvcc -O3 -DNDEBUG -arch=sm_90 --expt-relaxed-constexpr -std=c++17 -I"$tmp/$form" -cubin \
    -o "$tmp/$form.cubin" "$here/instantiate.cu"
  cuobjdump -sass "$tmp/$form.cubin" > "$tmp/$form.sass"
  {
    echo "## $form"
    cuobjdump -res-usage "$tmp/$form.cubin" |
      awk '/Function/ {k = ($0 ~ /TapWords/) ? "packed" : "plain"} /REG:/ {match($0, /REG:[0-9]+/); print k " registers " substr($0, RSTART + 4, RLENGTH - 4)}'
    python3 "$here/sass_ops.py" "$tmp/$form.sass"
  } >> "$here/sass_ops.txt"
done
