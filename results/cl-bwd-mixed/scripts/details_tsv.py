"""Nsight Compute's details page (`--page details --csv`) of call 1 as a small table for the docs:
one line a kernel (its first launch), with its duration, instructions executed, registers and
cycles an issued instruction, keyed like scripts/result_tables.py's tables (kernel, template
arguments).

    python3 details_tsv.py run1/details.csv run1/details.tsv
"""
import csv
import re
import sys

WANTED = {"Duration": "duration_us", "Executed Instructions": "instructions",
          "Registers Per Thread": "registers", "Warp Cycles Per Issued Instruction": "cycles_per_issue",
          "Achieved Occupancy": "occupancy_pct"}


def key(name):
    m = re.match(r"void (?:\w+::)*(\w+)<(.*)>\(", name)
    args = re.sub(r"\(int\)|\([\w:]+\)|conv1d::\w+::", "", m.group(2)).replace(", ", "/")
    return m.group(1), args


def main(src, dst):
    rows, order = {}, []
    for r in csv.DictReader(open(src)):
        k = key(r["Kernel Name"])
        if k not in rows:
            rows[k] = {"id": r["ID"]}
            order.append(k)
        if rows[k]["id"] == r["ID"] and r["Metric Name"] in WANTED:
            rows[k][WANTED[r["Metric Name"]]] = r["Metric Value"].replace(",", "")
    with open(dst, "w") as out:
        out.write("\t".join(["kernel", "args", *WANTED.values()]) + "\n")
        for k in order:
            out.write("\t".join([*k, *(rows[k].get(c, "") for c in WANTED.values())]) + "\n")


if __name__ == "__main__":
    main(*sys.argv[1:3])
