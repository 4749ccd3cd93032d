"""The charts by file name, with the caption docs/ shows under each (scripts/docs_sync.py reads this
file too, so it must stay free of imports beyond the standard library)."""

CHARTS = (
    ("book.png", "The whole book",
     "Every chapter's headline kernel at the book's one shape per kind of work, from the tour's book.tsv: "
     "the forward, the backward and a decoding step, one panel each, titled with its shape. Bars: the "
     "chapter's device time on a log scale (a decoding step's in µs, per step); at each bar's end its "
     "share of the copy ceiling (the operator's bytes over that time, against the copy ceiling measured "
     "in the chapter's own run) and its speed-up over the first chapter of the same work (device time "
     "against device time). A chapter whose output did not match the reference is hatched and marked "
     "NOT VERIFIED. Drawn only where the result folder holds book.tsv."),
    ("categories.png", "Where the time goes",
     "Each chapter's pipeline run split into allocations, copies to and from the device, host steps, "
     "kernels and frees: on the left each category's milliseconds per run on a log scale (the outline is "
     "the whole run), so that chapters of microseconds stay legible next to chapters of milliseconds; "
     "shares on the right. A chapter whose kernels and copies overlap on several streams is drawn from "
     "a variant of it that runs them one after another (chapter 07: its serial variant): overlapping "
     "stages add up to more than the run. A chapter that the charted run does not hold, measured only by a "
     "benchmark without phase records, is named in the footer instead."),
    ("top_kernels.png", "The slowest kernels",
     "The five slowest kernels of each chapter, milliseconds per run on a log scale, with the number of "
     "launches per run. Chapter 07's come from its serial variant: on concurrent streams, a kernel's "
     "event pair also times its wait for the kernels of the other streams. A chapter that the charted run "
     "does not hold is named in the footer."),
    ("ladder.png", "The speed-up ladder",
     "End-to-end and device time per chapter on a log scale, with the copy floor of the shape (each "
     "tensor moved once at the copy bandwidth measured in the same run: x and out for a forward "
     "chapter, x, dout and dx for the backward one). Above the bars: end-to-end speed-ups over the "
     "first chapter (bold) and device-time speed-ups (green). † marks a chapter whose host steps shared "
     "with other chapters run slow in its process; ‡ the next chapter, whose end-to-end figure "
     "includes their return to normal speed. A chapter that the charted run does not hold is taken from "
     "another result file of the same device only at the same B, D, L and W (the file is named under its "
     "bars); otherwise the footer names the shapes it was measured at, which are not compared."),
    ("timeline.png", "One run, per stream",
     "Chapter 07's own stage timeline at the shape of its benchmark (the last timed pipelined and serial "
     "runs, one lane per stream, copies numbered by chunk and each chunk's kernels numbered above "
     "them); without such a file, one timed run of the chapter that uses the most streams, from its "
     "phase trace."),
    ("roofline.png", "Roofline",
     "Each chapter's main kernel: attained TFLOP/s against arithmetic intensity, from each kernel's "
     "napkin counts (the legend gives each count as a multiple of the convolution's own flops: chapter "
     "05's sparse kernel counts the tensor-core work it does, and each point's share of the copy "
     "ceiling), under the copy bandwidth measured in the same run and compute roofs from the fastest "
     "library GEMM measured per dtype; a datasheet figure, labelled as one, where none was measured. "
     "A chapter whose variants come in both layouts (chapter 08) has a point per layout, its headline "
     "channel-first and channel-last kernels. A chapter "
     "that the charted run does not hold comes from a benchmark's kernel table of the same device, at "
     "that table's shape, which its legend entry and the footer name."),
)
CHART_FILES = tuple(name for name, _, _ in CHARTS)

# The table `python -m profiling plot` writes beside the charts (profiling/analysis.py, variant_runs):
# every run of every variant in the loaded summary tables, with the bytes its kernels move, its copy
# floor and its share of the copy ceiling.
VARIANT_RUNS = "variant_runs.tsv"
