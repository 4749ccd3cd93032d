#!/usr/bin/env bash
# Makes one_division.tsv of this folder, from the repository root, without a GPU: chapter 08's
# staged kernel (bf16, W = 4) with chapter 10's tap words and with chapter 08's, in four forms:
# before the vote (the twentieth version), the twenty-first (the vote), one division a tile (the
# twenty-second, as committed) and the same with the words asked a tile ahead; each the tree with
# its patches taken back out or put in, compiled for sm_90 with the project's flags: registers
# (ptxas) and the static size of the per-tile prologue (prologue_count.py). Needs nvcc and
# cuobjdump on PATH.
set -euo pipefail
here=results/one-path
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
printf 'form\tkernel\tregisters\tprologue_instructions\n' > "$here/one_division.tsv"
for form in before_vote twenty_first one_division one_division_ahead; do
  mkdir -p "$tmp/$form" && tar -cf - chapters common | tar -xf - -C "$tmp/$form"
  case $form in
    one_division) ;;
    *) patch -s -R -d "$tmp/$form" -p1 < "$here/one_division.patch" ;;&
    before_vote) patch -s -R -d "$tmp/$form" -p1 < "$here/warp_vote.patch" ;;
    one_division_ahead) patch -s -d "$tmp/$form" -p1 < "$here/one_division_ahead.patch" ;;
  esac
  nvcc -O3 -DNDEBUG -arch=sm_90 --expt-relaxed-constexpr -std=c++17 -I"$tmp/$form" -Xptxas -v -cubin \
    -o "$tmp/$form.cubin" results/cf-staged-one-path/instantiate.cu 2> "$tmp/$form.ptxas"
  cuobjdump -sass "$tmp/$form.cubin" > "$tmp/$form.sass"
  for k in TapWords EveryTap; do
    awk -v k="$k" '/Function :/ {on = ($0 ~ k)} on' "$tmp/$form.sass" > "$tmp/$form.$k.sass"
    regs=$(grep -A3 "Compiling entry.*$k" "$tmp/$form.ptxas" | grep -o "Used [0-9]* registers" | tr -dc 0-9)
    count=$(python3 "$here/prologue_count.py" "$tmp/$form.$k.sass" | sed 's/.*: \([0-9]*\) instructions/\1/')
    printf '%s\t%s\t%s\t%s\n' "$form" "$k" "$regs" "$count" >> "$here/one_division.tsv"
  done
done
cat "$here/one_division.tsv"
