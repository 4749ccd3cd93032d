"""The charts by file name, with the caption docs/ shows under each (scripts/docs_sync.py reads this
file too, so it must stay free of imports beyond the standard library)."""

CHARTS = (
    ("categories.png", "Where the time goes",
     "Each chapter's pipeline run split into allocations, copies to and from the device, host steps, "
     "kernels and frees: milliseconds per run on the left, shares on the right."),
    ("top_kernels.png", "The slowest kernels",
     "The five slowest kernels of each chapter, milliseconds per run on a log scale."),
    ("ladder.png", "The speed-up ladder",
     "End-to-end and device time per chapter on a log scale, with the copy floor of the shape (reading "
     "x and writing out once at the measured copy bandwidth); the × figures are end-to-end speed-ups "
     "over the first chapter."),
    ("timeline.png", "One run, per stream",
     "One timed run of the chapter that uses the most streams: host steps, copies and kernels on a "
     "common time axis, one lane per stream."),
    ("roofline.png", "Roofline",
     "Each chapter's main kernel: attained TFLOP/s against arithmetic intensity (napkin counts), under "
     "the measured copy bandwidth and cuBLAS GEMM peaks measured on an H200 (reference figures)."),
)
CHART_FILES = tuple(name for name, _, _ in CHARTS)
