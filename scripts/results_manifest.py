#!/usr/bin/env python3
"""Assembles results/gpu-check from the parts of one GPU check split over several device calls.

  results_manifest.py PART_DIR... --out results/gpu-check [--check-only]

Each PART_DIR is the OUTDIR of one scripts/gpu-check.sh call: its check.tsv says which commit, GPU
(name, driver, memory), date, steps, chapters and sections that call ran, its summary.md the rows.
The parts must name one commit and one GPU model and driver (else exit 1, nothing written): the
folder is then one check of one commit on one GPU model. The result files of all parts are copied
into --out (a file written by two parts is an error), MANIFEST.md lists the parts, and
gpu_check_summary.md is every part's summary table in one. Standard library only.
"""
import argparse
import pathlib
import shutil
import sys


def read_check(part):
    f = part / "check.tsv"
    if not f.is_file():
        raise SystemExit(f"{part}: no check.tsv (not the OUTDIR of a gpu-check.sh call, or an older one)")
    info = dict(line.split("\t", 1) for line in f.read_text().splitlines() if "\t" in line)
    for key in ("commit", "gpu", "date", "steps", "sections", "chapters"):
        if key not in info:
            raise SystemExit(f"{f}: no '{key}' line")
    return info


def summary_rows(part):
    f = part / "summary.md"
    rows = [line for line in f.read_text().splitlines() if line.startswith("| ") and not line.startswith("| step ")] \
        if f.is_file() else []
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("parts", nargs="+", type=pathlib.Path, help="OUTDIRs of gpu-check.sh calls")
    ap.add_argument("--out", type=pathlib.Path, required=True, help="the folder to fill (results/gpu-check)")
    ap.add_argument("--check-only", action="store_true", help="check the parts agree; write nothing")
    a = ap.parse_args(argv)
    infos = [read_check(p) for p in a.parts]
    for key in ("commit", "gpu"):
        values = sorted({i[key] for i in infos})
        if len(values) != 1:
            print(f"the parts differ in {key}: {', '.join(values)}: not one check", file=sys.stderr)
            return 1
    failed = [(p, r) for p in a.parts for r in summary_rows(p) if "| FAIL |" in r]
    if failed:
        for p, r in failed:
            print(f"{p}: {r}", file=sys.stderr)
        print(f"{len(failed)} failed row(s): a check with failures is not committed", file=sys.stderr)
        return 1
    sources = {}
    for p in a.parts:
        for f in sorted((p / "results").rglob("*")):
            if f.is_file():
                rel = f.relative_to(p / "results")
                if rel in sources:
                    print(f"{rel}: written by two parts ({sources[rel]} and {p})", file=sys.stderr)
                    return 1
                sources[rel] = p
    if a.check_only:
        print(f"{len(a.parts)} part(s) of one check: commit {infos[0]['commit']}, {infos[0]['gpu']}; "
              f"{len(sources)} result file(s)")
        return 0
    a.out.mkdir(parents=True, exist_ok=True)
    for rel, p in sources.items():
        (a.out / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(p / "results" / rel, a.out / rel)
    lines = ["# What is in results/gpu-check, and where it came from", "",
             f"One GPU check of commit {infos[0]['commit']} on {infos[0]['gpu']} (name, driver, memory), "
             f"run by `scripts/gpu-check.sh` in {len(a.parts)} call(s) of the GPU machine and assembled by "
             "`scripts/results_manifest.py`. The pages and README render these files "
             "(`scripts/docs_sync.py`); a test fails on a file here that nothing reads.", "",
             "| part | date | steps | chapters | sections | seconds | rows |", "|---|---|---|---|---|---|---|"]
    for k, (p, i) in enumerate(zip(a.parts, infos), 1):
        lines.append(f"| {k} | {i['date']} | {i['steps']} | `{i['chapters']}` | `{i['sections']}` | "
                     f"{i.get('seconds', '?')} | {len(summary_rows(p))} |")
    (a.out / "MANIFEST.md").write_text("\n".join(lines) + "\n")
    summary = ["| step | what | result | note |", "|---|---|---|---|"]
    for p in a.parts:
        summary += summary_rows(p)
    (a.out / "gpu_check_summary.md").write_text("\n".join(summary) + "\n")
    print(f"wrote {len(sources)} result file(s), MANIFEST.md and gpu_check_summary.md to {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
