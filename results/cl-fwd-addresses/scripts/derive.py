#!/usr/bin/env python3
"""The tables behind docs/08's and docs/10's forty-third version (run from the repository root).

results/cl-fwd-addresses/summary.tsv: run/'s chapter-10 forward A/B timings (result_tables
ab_rows, forward): the tree before addresses.patch (old) and after it (new), the packed forward
and chapter 08's plain kernel timed in the same process, medians over the two rounds, the ratio's
range (varlen: its time alone).
results/cl-fwd-addresses/ch08.tsv: chapter 08's channel-last kernels in the same call, 8 x 4096 x
4096, bf16 and fp32: each kernel's time by tree, the median over the two rounds (bench08_*).
"""
import csv
import pathlib
import statistics
import sys

sys.path.insert(0, "scripts")
from result_tables import ab_rows, write_tsv  # noqa: E402

HERE = pathlib.Path("results/cl-fwd-addresses")


def main():
    run = HERE / "run"
    write_tsv(HERE / "summary.tsv", ab_rows(run, direction="forward"))
    times = {}
    for path in sorted(run.glob("bench08_*_*_[0-9]_kernels.tsv")):
        dtype, tree, _ = path.name[len("bench08_"):-len("_kernels.tsv")].split("_")
        with path.open(newline="") as f:
            for r in csv.DictReader(f, delimiter="\t"):
                if r["variant"].startswith("cl_"):
                    times.setdefault((dtype, r["variant"], tree), []).append(float(r["ms"]))
    rows = []
    for dtype, variant in sorted({(d, v) for d, v, _ in times}):
        old, new = (statistics.median(times[(dtype, variant, t)]) for t in ("old", "new"))
        rows.append({"dtype": dtype, "variant": variant, "old_ms": f"{old:.4f}", "new_ms": f"{new:.4f}",
                     "change_pct": f"{100 * (new / old - 1):+.1f}"})
    write_tsv(HERE / "ch08.tsv", rows)


if __name__ == "__main__":
    main()
