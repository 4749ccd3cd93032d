#!/usr/bin/env python3
"""The tables behind docs/10's thirty-ninth and fortieth entries (run from the repository root).

results/uniform-path/next/summary.tsv: the channel-first rows backward in three trees (cur: as
committed; pad: + the padding skip; gather: + gather.patch), from next/run2.
results/cl-padding-tiles/summary.tsv: the channel-last rows backward before (old) and after (new)
cl-padding-tiles.patch, from run/ (cf_rows8: the channel-first backward, a control).
Both: whole backward and the plain kernel's whole backward timed in the same process, medians over
the rounds, the ratio's range.
results/cl-padding-tiles/ncu.tsv: one launch of the channel-last kernel the rows with 8 documents
run, before (next/run2's cl_PackedRows), after (run/cl_new) and chapter 09's own (cl_Baseline);
and the channel-first kernel in next/run2's three trees. From Nsight Compute's details and source
pages (the source page summarised by scripts/ncu_source_summary.py).
"""
import pathlib
import sys

sys.path.insert(0, "scripts")
from result_tables import ab_rows, one_launch_row as ncu_row, write_tsv  # noqa: E402

NEXT = pathlib.Path("results/uniform-path/next")
HERE = pathlib.Path("results/cl-padding-tiles")


def main():
    write_tsv(NEXT / "summary.tsv", ab_rows(NEXT / "run2"))
    write_tsv(HERE / "summary.tsv", ab_rows(HERE / "run"))
    r2, r = NEXT / "run2", HERE / "run"
    rows = [ncu_row("cl_plain", r2 / "details_cl_Baseline.csv", r2 / "source_cl_Baseline.csv.gz"),
            ncu_row("cl_old", r2 / "details_cl_PackedRows.csv", r2 / "source_cl_PackedRows.csv.gz"),
            ncu_row("cl_new", r / "details_cl_new.csv", r / "source_cl_new.csv.gz")]
    rows += [ncu_row(f"cf_{t}", r2 / f"details_{t}.csv", r2 / f"source_{t}.csv.gz")
             for t in ("cur", "pad", "gather")]
    write_tsv(HERE / "ncu.tsv", rows)


if __name__ == "__main__":
    main()
