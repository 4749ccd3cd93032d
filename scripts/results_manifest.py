#!/usr/bin/env python3
"""Assembles results/gpu-check from the parts of one GPU check split over several device calls.

  results_manifest.py PART_DIR... --out results/gpu-check [--check-only]
  results_manifest.py PART_DIR... --keep results/check-in-progress

Each PART_DIR is the OUTDIR of one scripts/gpu-check.sh call: its check.tsv says which commit, GPU
(name, driver, memory), date, steps, chapters and sections that call ran, its summary.md the rows.
The parts must name one commit and one GPU model, its name and memory (else exit 1, nothing
written): the folder is then one check of one commit on one GPU model. The driver may differ between
parts run on different machines of that model; MANIFEST.md then gives each part's. The result files
of all parts are copied into --out; a table (.tsv) written by several parts with the same header, as
the chapters' --summary files are appended to, becomes one table with every part's rows, in the
parts' order; any other file written by two parts is an error. MANIFEST.md lists the parts, and
gpu_check_summary.md is every part's summary table in one. --out replaces what the folder held (it
must be empty or hold an earlier check's MANIFEST.md): files an earlier check wrote and this one did
not are gone.

A check split over sessions of the GPU machine keeps its finished parts in the repository until the
last one has run: --keep DIR copies each part's check.tsv, summary.md, logs/section_seconds.tsv and
results/ to DIR/part-N (N: the part's number), after the same checks, and against the parts DIR
already holds. The last assembly names them with the new parts (DIR/part-* PART_DIR... --out ...),
and DIR is deleted in the same commit. Standard library only.
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


def gpu_model_and_driver(info):
    """("NAME, MEMORY", "DRIVER") from check.tsv's "NAME, DRIVER, MEMORY" (else the line, "?")."""
    fields = info["gpu"].split(", ")
    return (f"{fields[0]}, {fields[2]}", fields[1]) if len(fields) == 3 else (info["gpu"], "?")


def summary_rows(part):
    f = part / "summary.md"
    rows = [line for line in f.read_text().splitlines() if line.startswith("| ") and not line.startswith("| step ")] \
        if f.is_file() else []
    return rows


def keep(parts, infos, folder):
    """Copies the parts to FOLDER/part-N, none over one already there."""
    targets = []
    for i in infos:
        number = i.get("part", "all")
        target = folder / f"part-{number if number.isdigit() else 'all'}"
        if target.exists() or target in targets:
            print(f"{target}: part {number} is kept already", file=sys.stderr)
            return 1
        targets.append(target)
    for p, target in zip(parts, targets):
        (target / "logs").mkdir(parents=True)
        for name in ("check.tsv", "summary.md", "logs/section_seconds.tsv"):
            if (p / name).is_file():
                shutil.copy2(p / name, target / name)
        if (p / "results").is_dir():
            shutil.copytree(p / "results", target / "results")
        print(f"kept {p} as {target}")
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("parts", nargs="+", type=pathlib.Path, help="OUTDIRs of gpu-check.sh calls")
    where = ap.add_mutually_exclusive_group(required=True)
    where.add_argument("--out", type=pathlib.Path, help="the folder to fill (results/gpu-check)")
    where.add_argument("--keep", type=pathlib.Path,
                       help="keep finished parts in this folder (results/check-in-progress) for a later assembly")
    ap.add_argument("--check-only", action="store_true", help="check the parts agree; write nothing")
    a = ap.parse_args(argv)
    infos = [read_check(p) for p in a.parts]
    kept = sorted(a.keep.glob("part-*")) if a.keep and a.keep.is_dir() else []
    every = infos + [read_check(k) for k in kept]
    for what, value in (("commit", lambda i: i["commit"]), ("gpu model", lambda i: gpu_model_and_driver(i)[0])):
        values = sorted({value(i) for i in every})
        if len(values) != 1:
            print(f"the parts differ in {what}: {'; '.join(values)}: not one check", file=sys.stderr)
            return 1
    numbers = [i["part"] for i in infos if i.get("part", "").isdigit()]
    twice = sorted({n for n in numbers if numbers.count(n) > 1}, key=int)
    if twice:  # (its tables' rows would be counted twice)
        print(f"part(s) {', '.join(twice)} given more than once: not one check", file=sys.stderr)
        return 1
    failed = [(p, r) for p in a.parts for r in summary_rows(p) if "| FAIL |" in r]
    if failed:
        for p, r in failed:
            print(f"{p}: {r}", file=sys.stderr)
        print(f"{len(failed)} failed row(s): a check with failures is not committed", file=sys.stderr)
        return 1
    sources = {}  # relative path -> the parts that wrote it
    for p in a.parts:
        for f in sorted((p / "results").rglob("*")):
            if f.is_file():
                sources.setdefault(f.relative_to(p / "results"), []).append(p)
    for rel, parts in sources.items():
        if len(parts) == 1:
            continue
        headers = {(q / "results" / rel).read_text().split("\n", 1)[0] for q in parts}
        if rel.suffix != ".tsv" or len(headers) != 1:
            print(f"{rel}: written by two parts ({', '.join(map(str, parts))}), and not one table",
                  file=sys.stderr)
            return 1
    if a.check_only:
        print(f"{len(a.parts)} part(s) of one check: commit {infos[0]['commit']}, {gpu_model_and_driver(infos[0])[0]}; "
              f"{len(sources)} result file(s)")
        return 0
    if a.keep:
        return keep(a.parts, infos, a.keep)
    if a.out.exists() and any(a.out.iterdir()):
        if not (a.out / "MANIFEST.md").is_file():
            print(f"{a.out}: not empty and no MANIFEST.md: not a GPU check's folder, left alone", file=sys.stderr)
            return 1
        shutil.rmtree(a.out)
    a.out.mkdir(parents=True, exist_ok=True)
    for rel, parts in sources.items():
        (a.out / rel).parent.mkdir(parents=True, exist_ok=True)
        if len(parts) == 1:
            shutil.copy2(parts[0] / "results" / rel, a.out / rel)
            continue
        texts = [(q / "results" / rel).read_text() for q in parts]
        rows = [line for t in texts for line in t.splitlines()[1:] if line]
        (a.out / rel).write_text("\n".join([texts[0].split("\n", 1)[0], *rows]) + "\n")
    drivers = sorted({gpu_model_and_driver(i)[1] for i in infos})
    lines = ["# What is in results/gpu-check, and where it came from", "",
             f"One GPU check of commit {infos[0]['commit']} on {gpu_model_and_driver(infos[0])[0]} (name, memory; "
             f"driver{'s' if len(drivers) > 1 else ''} {', '.join(drivers)}), "
             f"run by `scripts/gpu-check.sh` in {len(a.parts)} call(s) of the GPU machine and assembled by "
             "`scripts/results_manifest.py`. The pages and README render these files "
             "(`scripts/docs_sync.py`); a test fails on a file here that nothing reads.", "",
             "| part | date | driver | steps | chapters | sections | seconds | rows |",
             "|---|---|---|---|---|---|---|---|"]
    for k, (p, i) in enumerate(zip(a.parts, infos), 1):
        lines.append(f"| {i.get('part', k)} | {i['date']} | {gpu_model_and_driver(i)[1]} | {i['steps']} | `{i['chapters']}` | "
                     f"`{i['sections']}` | {i.get('seconds', '?')} | {len(summary_rows(p))} |")
    (a.out / "MANIFEST.md").write_text("\n".join(lines) + "\n")
    summary = ["| step | what | result | note |", "|---|---|---|---|"]
    for p in a.parts:
        summary += summary_rows(p)
    (a.out / "gpu_check_summary.md").write_text("\n".join(summary) + "\n")
    print(f"wrote {len(sources)} result file(s), MANIFEST.md and gpu_check_summary.md to {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
