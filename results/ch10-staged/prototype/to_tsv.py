#!/usr/bin/env python3
"""The prototype's outputs (call*.txt, the lines it printed per variant) as tables (.tsv beside
them) that docs/ can read: variant (its "," written ";" and its " + " "with", which a where=
of scripts/docs_sync.py cannot name), tile, stages, threads, blocks_per_sm, ms, gbs, copy_pct,
device."""
import pathlib
import re

LINE = re.compile(r"^(?P<variant>\S.*?)\s+tile\s+(?P<tile>\d+) stages (?P<stages>\d+) threads\s+(?P<threads>\d+)"
                  r" blocks/SM\s+(?P<blocks>\d+): (?P<ms>[\d.]+) ms\s+(?P<gbs>[\d.]+) GB/s\s+(?P<pct>[\d.]+) % of copy$")
here = pathlib.Path(__file__).resolve().parent
for txt in sorted(here.glob("call*.txt")):
    device, rows = "", []
    for line in txt.read_text().splitlines():
        if line.startswith("device "):
            device = line[len("device "):].split(",")[0]
        m = LINE.match(line)
        if m:
            rows.append([m["variant"].strip().replace(",", ";").replace(" + ", " with "), m["tile"], m["stages"], m["threads"], m["blocks"], m["ms"],
                         m["gbs"], m["pct"], device])
    if rows:
        out = ["\t".join(["variant", "tile", "stages", "threads", "blocks_per_sm", "ms", "gbs", "copy_pct", "device"])]
        out += ["\t".join(r) for r in rows]
        txt.with_suffix(".tsv").write_text("\n".join(out) + "\n")
