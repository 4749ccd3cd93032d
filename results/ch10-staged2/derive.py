#!/usr/bin/env python3
"""Instructions a warp spends on one group of 32 vectors (a vector a lane) in the seventeenth
attempt's flags form, from run2's Nsight Compute counts with the states alone at
8 x 4096 x 4096 bf16: one tile a row (512 vectors), B * D = 32768 tiles, and in each tile two of
its sixteen groups take the flags (the one with the row's first vector, the one with its last).
Writes derived.tsv beside this script. Standard library only."""
import csv
import pathlib

here = pathlib.Path(__file__).resolve().parent
col = "smsp__inst_executed.sum[inst]"


def counts(path):
    with open(path, newline="") as f:
        return {r["args"].split("/")[-1]: float(r[col]) for r in csv.DictReader(f, delimiter="\t")}


tiles, groups, flagged = 8 * 4096, 512 // 32, 2
c = counts(here / "run2" / "ncu_states.tsv")
plain = c["OneSequencePerRow"] / tiles / groups
packed = c["RowSpansBwd<__nv_bfloat16>"]
flags_group = (packed - c["OneSequencePerRow"]) / tiles / flagged + plain
with open(here / "derived.tsv", "w", newline="") as f:
    w = csv.writer(f, delimiter="\t", lineterminator="\n")
    w.writerow(["quantity", "instructions"])
    w.writerow(["plain group", f"{plain:.0f}"])
    w.writerow(["flags group", f"{flags_group:.0f}"])
