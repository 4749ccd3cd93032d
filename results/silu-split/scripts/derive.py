#!/usr/bin/env python3
"""Tables the docs quote from run6 (run from the repository root):

  timings.tsv   every timed process of run6: the channel-first rows forward (whole forward) and
                backward (whole backward) against chapter 08's and chapter 09's plain kernels in
                the same process, and their ratios; a row per process. Forms: base (the
                thirty-fifth version as committed), ss (silu-split.patch and bwd-tile-words.patch)
  summary.tsv   the same by configuration and form: medians of the times and ratios
  ncu.tsv       the source pages of run6 (the patched forward, SiLU compiled out and in), in the
                columns of ../code-size/ncu.tsv, whose rows for the thirty-fifth version they sit
                beside
"""
import csv
import importlib.util
import pathlib
import re
import statistics

HERE = pathlib.Path("results/silu-split")
_spec = importlib.util.spec_from_file_location("code_size", "results/code-size/scripts/derive.py")
code_size = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(code_size)


def times(path):
    got = {}
    for r in csv.DictReader(path.open(newline=""), delimiter="\t"):
        key = (r["variant"], r["kernel"])
        if key in (("cf_packed", "whole forward"), ("cf_plain", "conv_fwd_cf_staged"),
                   ("cf_packed_bwd", "whole backward"), ("cf_plain_bwd", "whole backward")):
            got[r["variant"]] = float(r["ms"])
    return got


def timings():
    rows = []
    for path in sorted((HERE / "run6").glob("bench_*_kernels.tsv")):
        config, form, rnd = path.name[len("bench_"):-len("_kernels.tsv")].split("_")
        t = times(path)
        rows.append({"config": config, "form": "base" if form.startswith("base") else form,
                     "round": rnd, "fwd_ms": f"{t['cf_packed']:.4f}",
                     "fwd_plain_ms": f"{t['cf_plain']:.4f}",
                     "fwd_ratio": f"{t['cf_packed'] / t['cf_plain']:.4f}",
                     "bwd_ms": f"{t['cf_packed_bwd']:.4f}",
                     "bwd_plain_ms": f"{t['cf_plain_bwd']:.4f}",
                     "bwd_ratio": f"{t['cf_packed_bwd'] / t['cf_plain_bwd']:.4f}"})
    return rows


def summary(rows):
    groups = {}
    for r in rows:
        groups.setdefault((r["config"], r["form"]), []).append(r)
    out = []
    for (config, form), rs in groups.items():
        row = {"config": config, "form": form, "processes": len(rs)}
        for col in ("fwd_ms", "fwd_plain_ms", "fwd_ratio", "bwd_ms", "bwd_plain_ms", "bwd_ratio"):
            row[col] = f"{statistics.median(float(r[col]) for r in rs):.4f}"
        out.append(row)
    return out


def ncu():
    out = []
    for config in ("plain", "silu"):
        md = HERE / "run6" / f"source_{config}_ss.md"
        head = md.read_text().splitlines()[2]
        m = re.match(r"(\d+) SASS lines, (\d+) warp instructions executed, (\d+) warp-stall", head)
        reasons = {r["reason"]: int(r["samples"]) for r in csv.DictReader(
            (HERE / "run6" / f"source_{config}_ss_reasons.tsv").open(), delimiter="\t")}
        row = {"call": "run6", "config": "bias_silu" if config == "silu" else "rows8", "form": "ss",
               "sass_lines": m.group(1), "instructions": m.group(2), "samples": m.group(3),
               "no_inst": reasons["no_inst"], "barrier": reasons["barrier"],
               "issue": reasons["selected"] + reasons["not_selected"] + reasons["wait"],
               "long_sb": reasons["long_sb"]}
        row["per_tile"], row["before_wait"] = code_size.per_tile(HERE / "run6" / f"source_{config}_ss.csv.gz")
        out.append(row)
    return out


if __name__ == "__main__":
    rows = timings()
    code_size.HERE = HERE
    code_size.write("timings.tsv", rows)
    code_size.write("summary.tsv", summary(rows))
    code_size.write("ncu.tsv", ncu())
