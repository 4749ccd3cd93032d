#!/usr/bin/env python3
"""summary.tsv and ncu.tsv from run1 (run from the repository root).

summary.tsv: the channel-first rows backward (whole backward: the words, the kernel, the
reduction) and chapter 09's plain kernel timed in the same process, by configuration and tree
(base: as committed before the change; tw: with thread-words.patch), medians over the rounds and
the ratio's range. ncu.tsv: one launch of the kernel the rows with 8 documents run, in each tree,
from Nsight Compute's details page and source page (summarised by scripts/ncu_source_summary.py
into run1/source_*.md and *_reasons.tsv first).
"""
import csv
import pathlib
import re
import sys

sys.path.insert(0, "scripts")
from result_tables import ab_rows  # noqa: E402

HERE = pathlib.Path("results/uniform-path")
RUN = HERE / "run1"


def write(name, rows):
    with (HERE / name).open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]), delimiter="\t", lineterminator="\n")
        w.writeheader()
        w.writerows(rows)


def ncu():
    wanted = {"smsp__inst_executed.sum": "instructions", "smsp__inst_executed_pipe_uniform.sum": "uniform",
              "Registers Per Thread": "registers", "Grid Size": "blocks",
              "Warp Cycles Per Issued Instruction": "cycles_per_issue"}
    rows = []
    for tree in ("base", "tw"):
        got = {wanted[r["Metric Name"]]: r["Metric Value"].replace(",", "")
               for r in csv.DictReader((RUN / f"details_{tree}.csv").open(newline=""))
               if r["Metric Name"] in wanted}
        head = (RUN / f"source_{tree}.md").read_text().splitlines()[2]
        m = re.match(r"(\d+) SASS lines, (\d+) warp instructions executed, (\d+) warp-stall", head)
        reasons = {r["reason"]: int(r["samples"]) for r in
                   csv.DictReader((RUN / f"source_{tree}_reasons.tsv").open(), delimiter="\t")}
        rows.append({"tree": tree, "registers": got["registers"], "blocks": got["blocks"],
                     "sass_lines": m.group(1), "instructions": got["instructions"],
                     "uniform": got["uniform"],
                     "uniform_pct": f"{100 * int(got['uniform']) / int(got['instructions']):.1f}",
                     "cycles_per_issue": got["cycles_per_issue"], "samples": m.group(3),
                     "long_sb": reasons["long_sb"], "barrier": reasons["barrier"],
                     "short_sb": reasons["short_sb"], "no_inst": reasons["no_inst"],
                     "issue": reasons["selected"] + reasons["not_selected"] + reasons["wait"]})
    return rows


if __name__ == "__main__":
    write("summary.tsv", ab_rows(RUN))
    write("ncu.tsv", ncu())
