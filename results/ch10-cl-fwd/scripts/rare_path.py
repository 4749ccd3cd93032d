#!/usr/bin/env python3
"""The code few warps run, from Nsight Compute's SASS source page (--page source --csv
--print-source sass, gzipped): instructions executed fewer times than the kernel has warps, their
executions in all, how many instructions ran how many times, and their share of the stall samples.
Usage: rare_path.py source_*.csv.gz ..."""
import csv
import gzip
import sys


def num(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return 0.0


for path in sys.argv[1:]:
    rows = list(csv.reader(gzip.open(path, "rt")))
    head = next(i for i, r in enumerate(rows) if r and r[0] == "Address")
    names, body = rows[head], rows[head + 1:]
    executed, samples = names.index("Instructions Executed"), names.index(
        "Warp Stall Sampling (All Samples)")
    warps = num(body[0][executed])  # the kernel's first instruction: once a warp
    rare = [r for r in body if 0 < num(r[executed]) < warps]
    runs = sum(num(r[executed]) for r in rare)
    counts = {}
    for r in rare:
        counts[num(r[executed])] = counts.get(num(r[executed]), 0) + 1
    share = sum(num(r[samples]) for r in rare) / max(1.0, sum(num(r[samples]) for r in body))
    print(f"{path}: {warps:.0f} warps; {len(rare)} instructions run by fewer warps, "
          f"{runs:.0f} executions; {100 * share:.1f} % of the stall samples")
    top = sorted(counts.items(), key=lambda kv: -kv[1])[:8]
    print("   instructions by times executed: " +
          ", ".join(f"{n} x {times:.0f}" for times, n in top))
