# shellcheck shell=bash disable=SC2154  # out, build, root, row and step come from scripts/gpu-check.sh
# The whole book at one shape per kind of work: the tour (chapters/tour.cpp) runs every chapter at
# the book's headline shapes (forward 8 x 4096 x 4096 fp16 channel-first, backward the same in bf16
# channel-last, a decoding step of 64 x 4096 bf16) and writes one table of them: README's and
# docs/what-we-learned.md's table and the chart beside it (python -m profiling book).
#
# Result files (under $out/results):
#   book.tsv                                   the table: work, chapter, headline variant, device
#                                              time, share of the copy ceiling, speed-up, end-to-end
#   book_summary.tsv, book_summary_kernels.tsv the chapters' --summary rows it was made from
# Not yet timed on a GPU; estimated at about four minutes on an H100 (chapters 01-04 spend about a
# second a run on the host and in their naive GEMM at this shape).

step "book: every chapter at the headline shapes (the tour)"
book_dir=$out/logs/book
book_start=$SECONDS
# shellcheck disable=SC2086  # $chapters: one executable a line, a list on purpose
if "$build/conv1d_tour" --out "$book_dir" --charts-skipped "the GPU check draws them in its profiling section" \
     $chapters > "$out/logs/book.log" 2>&1 && [[ -s $book_dir/book.tsv ]]; then
  cp "$book_dir/book.tsv" "$out/results/book.tsv"
  cp "$book_dir/summary.tsv" "$out/results/book_summary.tsv"
  cp "$book_dir/summary_kernels.tsv" "$out/results/book_summary_kernels.tsv"
  row book "every chapter at the headline shapes (tour)" pass \
    "$((SECONDS - book_start)) s; $(awk -F'\t' 'NR > 1 {printf "%s %s %.1f%%; ", $1, $2, $7}' "$out/results/book.tsv")"
else
  row book "every chapter at the headline shapes (tour)" FAIL "see logs/book.log"
  tail -n 20 "$out/logs/book.log"
fi
