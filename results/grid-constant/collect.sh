#!/usr/bin/env bash
# Makes registers.tsv, ptx_param_loads.txt, measured.tsv and cl_tiled_packed.tsv of this folder (see
# README.md). Needs nvcc (no GPU): run from the repository root, on the commit this folder was made on.
set -euo pipefail
here=results/grid-constant
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for form in committed policy_only every_parameter cl_tiled_packed; do
  mkdir -p "$tmp/$form" && tar -cf - chapters common | tar -xf - -C "$tmp/$form"
  [[ $form == committed ]] || patch -s -d "$tmp/$form" -p1 < "$here/$form.patch"
done
nv=(nvcc -O3 -DNDEBUG -arch=sm_90 --expt-relaxed-constexpr -std=c++17)
printf 'vectors\tcommitted\tpolicy_only\tevery_parameter\n' > "$here/registers.tsv"
for v in 1 2 4; do
  line=$v
  for form in committed policy_only every_parameter; do
    r=$("${nv[@]}" -I"$tmp/$form" -DVECS=$v -Xptxas -v -cubin -o /dev/null "$here/instantiate.cu" 2>&1 |
        sed -n 's/.*Used \([0-9]*\) registers.*/\1/p')
    line+=$'\t'$r
  done
  echo "$line" >> "$here/registers.tsv"
done
{
  echo "ld.param instructions of conv_fwd_cf_chunked<bf16, W 4, 1 vector, OneSequencePerRow>, nvcc -O3 -arch=sm_90 -ptx"
  echo "param_0: DirectArgs (64 bytes); param_1: by_len; param_2: by_dim (a FastDivmod: the int64 divisor at +0, the"
  echo "uint64 magic number at +8, the int shift at +16); param_3: the policy (an empty struct)"
  for form in committed policy_only every_parameter; do
    "${nv[@]}" -I"$tmp/$form" -DVECS=1 -ptx -o "$tmp/$form.ptx" "$here/instantiate.cu"
    echo
    echo "## $form: $(grep -c 'ld\.param' "$tmp/$form.ptx") ld.param, $(grep -c 'ld\.param\.u8' "$tmp/$form.ptx") of them single bytes"
    grep 'ld\.param' "$tmp/$form.ptx" | sed -E 's/_ZN6conv1d4ch0819conv_fwd_cf_chunked[A-Za-z0-9_]*__(param_[0-9])/\1/; s/^[[:space:]]+//; s/\t/ /g'
  done
} > "$here/ptx_param_loads.txt"
# The GPU check's chapter-08 sweep in the previous session: run4 without the qualifier on chapter
# 08's kernels, run6 with it on every kernel that takes a policy (the second form).
printf 'vectors\tform\tregisters\tblocks_per_sm\tms\n' > "$here/measured.tsv"
for v in 1 2 4; do
  for r in run4:committed run6:policy_only; do
    log=results/ch10-frames/${r%%:*}/gpu-check/logs/bench_ch08_vectors_$v.log
    regs=$(sed -n 's/.*conv_fwd_cf_chunked, channel_first: \([0-9]*\) registers.*/\1/p' "$log" | head -n1)
    blocks=$(sed -n 's/.*conv_fwd_cf_chunked, channel_first: .* \([0-9]*\) blocks of 128.*/\1/p' "$log" | head -n1)
    ms=$(sed -n 's/.*main kernel conv_fwd_cf_chunked: \([0-9.]*\) ms.*/\1/p' "$log" | head -n1)
    printf '%s\t%s\t%s\t%s\t%s\n' "$v" "${r#*:}" "$regs" "$blocks" "$ms" >> "$here/measured.tsv"
  done
done
# Chapter 10's packed channel-last tiled kernels (fp32's forward, and 16-bit types' with --cl-forward
# tiled) with and without the qualifier on their policy (cl_tiled_packed.patch).
printf 'kernel\tform\tregisters\tstack_bytes\n' > "$here/cl_tiled_packed.tsv"
for form in committed cl_tiled_packed; do
  "${nv[@]}" -I"$tmp/$form" -Xptxas -v -cubin -o /dev/null "$here/instantiate_cl_tiled.cu" 2>&1 |
    awk -v form="$form" '
      /Compiling entry function/ {
        k = ($0 ~ /conv_fwd_cl_tiledIf/) ? "fp32" : "bf16"
        k = k (($0 ~ /Varlen/) ? " varlen" : " rows")
      }
      /Used [0-9]+ registers/ {
        match($0, /Used [0-9]+/); r = substr($0, RSTART + 5, RLENGTH - 5)
        s = 0; if (match($0, /[0-9]+ bytes cumulative stack/)) s = substr($0, RSTART, RLENGTH) + 0
        printf "%s\t%s\t%s\t%s\n", k, form, r, s
      }' >> "$here/cl_tiled_packed.tsv"
done
