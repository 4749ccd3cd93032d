#!/usr/bin/env python3
"""Tables the docs quote, derived from the calls' files (run from the repository root):

  timings.tsv   every timed process of run2, run3 and run4: the channel-first rows forward
                (make_tap_words + conv_fwd_cf_staged) and chapter 08's plain kernel in the same
                process, and their ratio; a row per process
  summary.tsv   the same by call, configuration and form: medians, and the ratio's min and max
  ncu.tsv       the source pages of run1, run2 and run3 (summed by scripts/ncu_source_summary.py
                into source_*_reasons.tsv and .md): warp instructions, stall samples, and the
                samples of the reasons the docs discuss, a row per kernel profiled; and from the
                source pages themselves (source_*.csv.gz), the warp instructions a tile takes
                (all of them over the times the tile's barrier ran) and those before the tile's
                wait (the lines up to `DEPBAR.LE SB0, 0x2`, over the same count; the kernel's
                start, run once a warp, is spread over its tiles)

Forms: base (the committed kernel before the thirty-fifth version), u1 and u2 (the loop over a
thread's vectors rolled to one or two copies, rolled.patch), tw (a tile's words from one address,
tile-words.patch, the thirty-fifth version).
"""
import csv
import gzip
import pathlib
import re
import statistics

HERE = pathlib.Path("results/code-size")
CONFIGS = {"random8": "rows8", "none": "states"}  # run4's file names


def kernel_ms(path):
    packed = plain = None
    for r in csv.DictReader(path.open(newline=""), delimiter="\t"):
        if r["variant"] == "cf_packed" and r["kernel"] == "whole forward":
            packed = float(r["ms"])
        if r["variant"] == "cf_plain" and r["kernel"] == "conv_fwd_cf_staged":
            plain = float(r["ms"])
    return packed, plain


def timings():
    rows = []
    for call in ("run2", "run3", "run4"):
        for path in sorted((HERE / call).glob("bench_*_kernels.tsv")):
            parts = path.name[len("bench_"):-len("_kernels.tsv")].split("_")
            if call == "run4":
                config, form, rnd = CONFIGS[parts[0]], "tw", parts[1]
            else:
                config, form, rnd = parts
                form = "base" if form.startswith("base") else form
            packed, plain = kernel_ms(path)
            rows.append({"call": call, "config": config, "form": form, "round": rnd,
                         "packed_ms": f"{packed:.4f}", "plain_ms": f"{plain:.4f}",
                         "ratio": f"{packed / plain:.4f}"})
    return rows


def summary(rows):
    groups = {}
    for r in rows:
        groups.setdefault((r["call"], r["config"], r["form"]), []).append(r)
    out = []
    for (call, config, form), rs in groups.items():
        ratios = [float(r["ratio"]) for r in rs]
        out.append({"call": call, "config": config, "form": form, "processes": len(rs),
                    "packed_ms": f"{statistics.median(float(r['packed_ms']) for r in rs):.4f}",
                    "plain_ms": f"{statistics.median(float(r['plain_ms']) for r in rs):.4f}",
                    "ratio": f"{statistics.median(ratios):.4f}",
                    "ratio_min": f"{min(ratios):.4f}", "ratio_max": f"{max(ratios):.4f}"})
    return out


def per_tile(path):
    rows = list(csv.reader(gzip.open(path, "rt", newline="")))
    head, body = rows[1], rows[2:]
    source, executed = head.index("Source"), head.index("Instructions Executed")
    total = before = tiles = 0
    waited = False
    for r in body:
        n = int(r[executed] or 0)
        total += n
        if not waited:
            before += n
        if "DEPBAR.LE SB0, 0x2" in r[source]:
            waited = True
        if "BAR.SYNC" in r[source]:
            tiles = n
    return f"{total / tiles:.1f}", f"{before / tiles:.1f}"


def ncu():
    out = []
    for call in ("run1", "run2", "run3"):
        for md in sorted((HERE / call).glob("source_*.md")):
            name = md.stem[len("source_"):]  # e.g. plain_TapWords, silu_tw
            config, kernel = name.split("_", 1)
            form = {"TapWords": "base", "EveryTap": "plain"}.get(kernel, kernel)
            head = md.read_text().splitlines()[2]
            m = re.match(r"(\d+) SASS lines, (\d+) warp instructions executed, (\d+) warp-stall", head)
            reasons = {r["reason"]: int(r["samples"]) for r in
                       csv.DictReader((HERE / call / f"source_{name}_reasons.tsv").open(), delimiter="\t")}
            out.append({"call": call, "config": "bias_silu" if config == "silu" else "rows8",
                        "form": form, "sass_lines": m.group(1), "instructions": m.group(2),
                        "samples": m.group(3), "no_inst": reasons["no_inst"],
                        "barrier": reasons["barrier"], "issue": reasons["selected"] + reasons["not_selected"] + reasons["wait"],
                        "long_sb": reasons["long_sb"]})
            out[-1]["per_tile"], out[-1]["before_wait"] = per_tile(HERE / call / f"source_{name}.csv.gz")
    return out


def write(name, rows):
    with (HERE / name).open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]), delimiter="\t", lineterminator="\n")
        w.writeheader()
        w.writerows(rows)


if __name__ == "__main__":
    rows = timings()
    write("timings.tsv", rows)
    write("summary.tsv", summary(rows))
    write("ncu.tsv", ncu())
