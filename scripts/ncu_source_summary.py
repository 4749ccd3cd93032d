#!/usr/bin/env python3
"""Where a kernel's instructions and warp-stall samples are, from Nsight Compute's source page
(`ncu --import REPORT --page source --csv --print-source sass`, gzipped): SASS lines grouped by
how many times each ran (code run once a tile, once a batch, once a step of a rarer walk: each
has its own count, so the groups name the code without reading the SASS), the instructions by
opcode, the stall samples by reason, and the lines with the most samples. Standard library only.

usage: ncu_source_summary.py SOURCE.csv.gz OUT.md
Beside OUT.md: OUT_groups.tsv (every group), OUT_opcodes.tsv (every opcode, its modifiers and
predicate left off) and OUT_reasons.tsv (every stall reason), for the docs.
"""
import collections
import csv
import gzip
import sys


def main():
    if len(sys.argv) != 3 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(sys.argv) == 2 else 2
    rows, header, kernel = [], None, None
    with gzip.open(sys.argv[1], "rt") as f:
        for line in f:
            if line.startswith('"Kernel Name"'):
                if kernel is not None:
                    break  # the first kernel only
                kernel = next(csv.reader([line]))[1]
                continue
            fields = next(csv.reader([line]))
            if fields and fields[0] == "Address":
                header = fields
                continue
            if header:
                rows.append(dict(zip(header, fields)))
    if not rows:
        print(f"no SASS lines in {sys.argv[1]}", file=sys.stderr)
        return 1
    count = lambda r: int(r["Instructions Executed"] or 0)
    samples = lambda r: int(r["Warp Stall Sampling (All Samples)"] or 0)
    reasons = [h for h in header if h.startswith("stall_") and "Not Issued" not in h]
    total_i, total_s = sum(map(count, rows)), sum(map(samples, rows))
    groups = collections.defaultdict(lambda: [0, 0, 0])
    for r in rows:
        g = groups[count(r)]
        g[0] += 1
        g[1] += count(r)
        g[2] += samples(r)
    by_reason = collections.Counter()
    for r in rows:
        for h in reasons:
            by_reason[h[len("stall_"):]] += int(r[h] or 0)
    out = [f"# {kernel}", "",
           f"{len(rows)} SASS lines, {total_i} warp instructions executed, {total_s} warp-stall samples.",
           "", "## SASS lines by how many times each ran (the 12 groups with the most instructions)", "",
           "| times a line ran | lines | instructions | share | samples | share |", "|---|---|---|---|---|---|"]
    for times, (n, i, s) in sorted(groups.items(), key=lambda kv: -kv[1][1])[:12]:
        out.append(f"| {times} | {n} | {i} | {100 * i / total_i:.1f} % | {s} | {100 * s / total_s:.1f} % |")
    ops = collections.Counter()
    for r in rows:
        words = r["Source"].split()
        if words:
            op = words[1] if words[0].startswith("@") and len(words) > 1 else words[0]
            ops[op.split(".")[0]] += count(r)
    out += ["", "## Instructions executed by opcode (the 12 most)", "", "| opcode | instructions | share |",
            "|---|---|---|"]
    for op, i in ops.most_common(12):
        out.append(f"| {op} | {i} | {100 * i / total_i:.1f} % |")
    out += ["", "## Samples by stall reason", "", "| reason | samples | share |", "|---|---|---|"]
    for reason, s in by_reason.most_common(12):
        out.append(f"| {reason} | {s} | {100 * s / total_s:.1f} % |")
    out += ["", "## The 12 lines with the most samples", "",
            "| offset | SASS | times it ran | samples | main reasons |", "|---|---|---|---|---|"]
    base = int(rows[0]["Address"], 16)
    for r in sorted(rows, key=samples, reverse=True)[:12]:
        main = sorted(((int(r[h] or 0), h[len("stall_"):]) for h in reasons), reverse=True)[:2]
        why = ", ".join(f"{name} {s}" for s, name in main if s)
        sass = r["Source"].strip().replace("|", "\\|")
        out.append(f"| 0x{int(r['Address'], 16) - base:05x} | `{sass}` | {count(r)} | {samples(r)} | {why} |")
    with open(sys.argv[2], "w") as f:
        f.write("\n".join(out) + "\n")
    stem = sys.argv[2][:-3] if sys.argv[2].endswith(".md") else sys.argv[2]
    with open(stem + "_groups.tsv", "w") as f:
        f.write("times\tlines\tinstructions\tinstructions_pct\tsamples\tsamples_pct\n")
        for times, (n, i, s) in sorted(groups.items(), key=lambda kv: -kv[1][1]):
            f.write(f"{times}\t{n}\t{i}\t{100 * i / total_i:.2f}\t{s}\t{100 * s / total_s:.2f}\n")
    with open(stem + "_opcodes.tsv", "w") as f:
        f.write("opcode\tinstructions\tinstructions_pct\n")
        for op, i in ops.most_common():
            f.write(f"{op}\t{i}\t{100 * i / total_i:.2f}\n")
    with open(stem + "_reasons.tsv", "w") as f:
        f.write("reason\tsamples\tsamples_pct\n")
        for reason, s in by_reason.most_common():
            f.write(f"{reason}\t{s}\t{100 * s / total_s:.2f}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
