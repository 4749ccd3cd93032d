#!/usr/bin/env python3
"""summary.tsv from run1's A/B timings (run from the repository root): the channel-first rows
backward (whole backward) and chapter 09's plain kernel in the same process, by configuration and
tree (base: before the change; skip: with it), medians over the three rounds and the ratio's range.
"""
import csv
import importlib.util
import pathlib
import statistics

HERE = pathlib.Path("results/padding-skip")
_spec = importlib.util.spec_from_file_location("code_size", "results/code-size/scripts/derive.py")
code_size = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(code_size)

if __name__ == "__main__":
    groups = {}
    for path in sorted((HERE / "run1" / "ab").glob("bench_*_kernels.tsv")):
        config, tree, _ = path.name[len("bench_"):-len("_kernels.tsv")].split("_")
        got = {r["variant"]: float(r["ms"]) for r in csv.DictReader(path.open(newline=""), delimiter="\t")
               if r["kernel"] == "whole backward"}
        groups.setdefault((config, "base" if tree == "base8" else "skip"), []).append(
            (got["cf_packed_bwd"], got["cf_plain_bwd"]))
    rows = []
    for (config, tree), ts in groups.items():
        ratios = [p / q for p, q in ts]
        rows.append({"config": config, "tree": tree, "processes": len(ts),
                     "bwd_ms": f"{statistics.median(p for p, _ in ts):.4f}",
                     "plain_ms": f"{statistics.median(q for _, q in ts):.4f}",
                     "ratio": f"{statistics.median(ratios):.4f}",
                     "ratio_min": f"{min(ratios):.4f}", "ratio_max": f"{max(ratios):.4f}"})
    code_size.HERE = HERE
    code_size.write("summary.tsv", rows)
