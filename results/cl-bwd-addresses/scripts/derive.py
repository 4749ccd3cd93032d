#!/usr/bin/env python3
"""The tables behind docs/10's forty-second version (run from the repository root).

results/cl-bwd-addresses/summary.tsv: run/'s A/B timings, the tree before addresses.patch (old)
and after it (new): whole backward and the plain kernel's whole backward timed in the same
process, medians over the rounds, the ratio's range (varlen: its time alone; cf_rows8: the
channel-first backward, a control the patch does not touch).
results/cl-bwd-addresses/ncu.tsv: one launch each of the channel-last kernels that the rows with 8
documents run, chapter 09's plain one and the packed one, before (the fortieth version's
profiles: uniform-path/next/run2 for the plain kernel, cl-padding-tiles/run for the packed one)
and after (run/).
results/cl-bwd-addresses/opcodes.tsv: the same four launches' executed instructions by opcode (a
row an opcode, a column a launch), from their source pages (result_tables.source_page).
"""
import pathlib
import sys

sys.path.insert(0, "scripts")
from result_tables import ab_rows, launch_tables, write_tsv  # noqa: E402

HERE = pathlib.Path("results/cl-bwd-addresses")


def main():
    write_tsv(HERE / "summary.tsv", ab_rows(HERE / "run"))
    before_plain = pathlib.Path("results/uniform-path/next/run2")
    before_packed = pathlib.Path("results/cl-padding-tiles/run")
    run = HERE / "run"
    launches = [  # name, details page, source page
        ("plain_old", before_plain / "details_cl_Baseline.csv", before_plain / "source_cl_Baseline.csv.gz"),
        ("plain_new", run / "details_cl_Baseline.csv", run / "source_cl_Baseline.csv.gz"),
        ("packed_old", before_packed / "details_cl_new.csv", before_packed / "source_cl_new.csv.gz"),
        ("packed_new", run / "details_cl_PackedRows.csv", run / "source_cl_PackedRows.csv.gz")]
    ncu_rows, opcode_rows = launch_tables(launches, "plain_old")
    write_tsv(HERE / "ncu.tsv", ncu_rows)
    write_tsv(HERE / "opcodes.tsv", opcode_rows)


if __name__ == "__main__":
    main()
