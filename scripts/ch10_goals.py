#!/usr/bin/env python3
"""Chapter 10's goals, read from the GPU check's chapter-10 benchmark files.

  ch10_goals.py RESULTS_DIR        prints a Markdown table: each goal, what was measured, met or not

RESULTS_DIR holds bench_10.tsv and bench_10_kernels.tsv as scripts/gpu-check.d/49b-chapter-10.sh
writes them (8 x 4096 x 4096, W = 4, bf16, initial states). The goals:

  - rows with seq_idx (8 documents a row) and states: the packed time within 5 % of the same run's
    plain kernel (chapter 08's forward, chapter 09's backward), in each layout and direction. The
    rows are the section's first bf16 run (its rows_bf16), so each variant's first bf16 row.
  - variable-length batch, 64 sequences: the forward at 85 % of the copy ceiling or more (the
    first bf16 cl_varlen kernel row, the section's varlen_bf16).

Exit status 0 when the table was made (goals met or not), 2 when the files are missing or lack a
row. Standard library only.
"""
import csv
import os
import sys

ROWS_LIMIT = 1.05  # packed time / plain time
VARLEN_GOAL = 85.0  # % of the copy ceiling
SHAPE_SUFFIX = " bf16"  # the goals' runs: bf16, no bias or SiLU (those shapes end "bias silu")


def read(path):
    if not os.path.isfile(path):
        raise SystemExit(f"ch10_goals: {path} is missing (run the GPU check's section 49b first)")
    with open(path, newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def first(rows, what, **match):
    for r in rows:
        if r["shape"].endswith(SHAPE_SUFFIX) and all(r.get(k) == v for k, v in match.items()):
            return r
    raise SystemExit(f"ch10_goals: no bf16 row for {what} ({match})")


def table(results_dir):
    runs = read(os.path.join(results_dir, "bench_10.tsv"))
    kernels = read(os.path.join(results_dir, "bench_10_kernels.tsv"))
    lines = ["| goal | measured | |", "|---|---|---|"]
    met = total = 0
    for layout, name in (("cf", "channel-first"), ("cl", "channel-last")):
        for suffix, direction, baseline in (("", "forward", "08"), ("_bwd", "backward", "09")):
            packed = float(first(runs, "the rows", variant=f"{layout}_packed{suffix}")["kernels_ms"])
            plain = float(first(runs, "the plain kernel", variant=f"{layout}_plain{suffix}")["kernels_ms"])
            ratio = packed / plain
            ok = ratio <= ROWS_LIMIT
            met, total = met + ok, total + 1
            lines.append(f"| rows, 8 documents and states, {direction} {name}: time ÷ chapter {baseline}'s "
                         f"≤ {ROWS_LIMIT:.2f} | {ratio:.3f} ({packed:.4f} ÷ {plain:.4f} ms) | "
                         f"{'met' if ok else 'missed'} |")
    varlen = first(kernels, "the varlen forward", variant="cl_varlen")
    share = float(varlen["ceiling_pct"])
    ok = share >= VARLEN_GOAL
    met, total = met + ok, total + 1
    lines.append(f"| varlen, 64 sequences, forward: ≥ {VARLEN_GOAL:.0f} % of the copy ceiling | {share:.1f} % "
                 f"({varlen['kernel']}, {float(varlen['ms']):.4f} ms) | {'met' if ok else 'missed'} |")
    device = runs[0].get("device", "")
    return f"Chapter 10's goals on {device}: {met} of {total} met\n\n" + "\n".join(lines) + "\n", met, total


def main(argv):
    if len(argv) != 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(argv) == 2 else 2
    text, _, _ = table(argv[1])
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except SystemExit as e:
        if isinstance(e.code, str):
            print(e.code, file=sys.stderr)
            sys.exit(2)
        raise
