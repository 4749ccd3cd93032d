#!/usr/bin/env python3
"""The tables behind docs/10's forty-fourth version (run from the repository root).

results/cf-bwd-loads/summary.tsv: run/'s A/B timings (result_tables ab_rows): the tree before
loads.patch (old) and after it (new), the packed whole backward and chapter 09's plain one timed
in the same process, medians over the rounds, the ratio's range.
results/cf-bwd-loads/ncu.tsv: one launch each of the channel-first kernels that the rows with 8
documents run: chapter 09's plain one and the packed one before the patch
(../cl-fwd-addresses/run) and the packed one after it (run/).
results/cf-bwd-loads/opcodes.tsv: the same three launches' executed instructions by opcode.
results/cf-bwd-loads/waits.tsv: the stall samples of the SASS lines where each launch waits most,
its ten busiest lines (source pages, scripts/ncu_source_summary.py's columns).
"""
import csv
import gzip
import pathlib
import sys

sys.path.insert(0, "scripts")
from result_tables import ab_rows, launch_tables, write_tsv  # noqa: E402

HERE = pathlib.Path("results/cf-bwd-loads")


def busiest_lines(source, n=10):
    """The n SASS lines with the most warp-stall samples: index, instruction, samples, executed."""
    with gzip.open(source, "rt", newline="") as f:
        rows = list(csv.reader(f))
    head = rows[1]
    text, samples = head.index("Source"), head.index("Warp Stall Sampling (All Samples)")
    executed = head.index("Instructions Executed")
    lines = [(int(r[samples] or 0), i, r[text].strip(), r[executed]) for i, r in enumerate(rows[2:])]
    total = sum(s for s, *_ in lines)
    return [{"line": i, "sass": sass, "samples": s, "samples_pct": f"{100 * s / total:.1f}",
             "executed": ex} for s, i, sass, ex in sorted(lines, key=lambda x: (-x[0], x[1]))[:n]]


def main():
    write_tsv(HERE / "summary.tsv", ab_rows(HERE / "run"))
    before = pathlib.Path("results/cl-fwd-addresses/run")
    run = HERE / "run"
    launches = [  # name, details page, source page
        ("plain", before / "details_cf_plain.csv", before / "source_cf_plain.csv.gz"),
        ("packed_old", before / "details_cf_packed.csv", before / "source_cf_packed.csv.gz"),
        ("packed_new", run / "details_cf_packed.csv", run / "source_cf_packed.csv.gz")]
    ncu_rows, opcode_rows = launch_tables(launches, "plain")
    write_tsv(HERE / "ncu.tsv", ncu_rows)
    write_tsv(HERE / "opcodes.tsv", opcode_rows)
    write_tsv(HERE / "waits.tsv", [{"kernel": name, **line} for name, _, source in launches
                                   for line in busiest_lines(source)])


if __name__ == "__main__":
    main()
