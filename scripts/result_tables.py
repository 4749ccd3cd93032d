#!/usr/bin/env python3
"""Turns two kinds of tool output into tab-separated tables that scripts/docs_sync.py can quote.
The GPU check (scripts/gpu-check.sh and scripts/gpu-check.d/) runs both commands.

  result_tables.py ncu NCU_RAW.csv OUT.tsv
      Nsight Compute's `--csv --page raw` output: a row per kernel instance (template arguments
      split off), each metric the median over its launches as a plain number (no thousands
      separators; the unit in the column name); of the launch attributes, the grid, registers,
      dynamic shared memory and the occupancy limits.
  result_tables.py resources CUOBJDUMP.txt OUT.tsv
      `REG n STACK n LOCAL n <demangled kernel>` lines, as resources_table in
      scripts/gpu-check.sh writes them: kernel, template arguments, registers, stack, local.

Template arguments are joined by "/" (conv_fwd_cf_chunked<__nv_bfloat16, 4, 2> becomes kernel
conv_fwd_cf_chunked, args __nv_bfloat16/4/2), so a docs_sync `where=` can select them. A file it
cannot read or write, or an input without the lines it expects, stops it with one line that names
the file (exit status 1); a bad command line prints this text (exit status 2). Standard library
only.
"""
import csv
import re
import statistics
import sys

NAME = re.compile(r"^(?:void\s+)?(?:[\w:]+::)?(?P<kernel>\w+)(?:<(?P<args>[^()]*)>)?")


def split_name(full):
    """('conv_fwd_cf_chunked', '__nv_bfloat16/4/2') from a demangled kernel name."""
    m = NAME.match(full.strip())
    if not m:
        return full.strip(), ""
    args = m.group("args") or ""
    if args:
        args = "/".join(re.sub(r"\b(?:conv1d|ch\d\d)::", "", a.strip()) for a in args.split(","))
    return m.group("kernel"), args


def number(text):
    text = text.replace(",", "").strip()
    try:
        return float(text)
    except ValueError:
        return None


def ncu(src, dst):
    with open(src, newline="") as f:
        rows = [r for r in csv.reader(f)]
    start = next((i for i, r in enumerate(rows) if r and r[0] == "ID"), None)
    if start is None or start + 1 >= len(rows):
        raise SystemExit(f"{src}: no Nsight Compute raw table "
                         "(a header row starting with ID, then units)")
    header, units = rows[start], rows[start + 1]
    metric = re.compile(r"^[a-z_]+__[\w.]+$")
    # The raw page carries every device, link and profiler attribute too: keep the kernel's metrics,
    # and of the launch's attributes those that say how many blocks a multiprocessor held and why.
    skip = ("device__", "launch__", "numa__", "nvlink__", "profiler__")
    launch = ("launch__grid_size", "launch__registers_per_thread",
              "launch__shared_mem_per_block_dynamic")
    cols = [i for i, h in enumerate(header) if metric.match(h) and
            (not h.startswith(skip) or h in launch or h.startswith("launch__occupancy_limit_"))]
    # It also adds .avg/.max/.min beside each .sum asked for (and .max/.min/.sum beside a .avg.pct):
    # keep the one asked for.
    sums = {header[i].rsplit(".", 1)[0] for i in cols if header[i].endswith(".sum")}
    cols = [i for i in cols
            if not (header[i].rsplit(".", 1)[0] in sums and not header[i].endswith(".sum"))
            and not re.search(r"\.(max|min|sum)\.pct", header[i])]
    name_col = header.index("Kernel Name")
    launches = {}  # (kernel, args) -> list of metric rows, in launch order
    for r in rows[start + 2:]:
        if len(r) != len(header):
            continue
        launches.setdefault(split_name(r[name_col]), []).append([number(r[i]) for i in cols])
    with open(dst, "w", newline="") as f:
        w = csv.writer(f, delimiter="\t", lineterminator="\n")
        names = [f"{header[i]}[{units[i]}]" if units[i] else header[i] for i in cols]
        w.writerow(["kernel", "args", "launches"] + names)
        for (kernel, args), runs in launches.items():
            medians = []
            for j in range(len(cols)):
                vals = [v[j] for v in runs if v[j] is not None]
                medians.append(format(statistics.median(vals), "g") if vals else "")
            w.writerow([kernel, args, len(runs)] + medians)


def resources(src, dst):
    line = re.compile(r"^REG (\d+) STACK (\d+) LOCAL (\d+) (.*)$")
    out = []
    with open(src) as f:
        for text in f:
            m = line.match(text.strip())
            if not m:
                continue
            kernel, args = split_name(m.group(4).split("(")[0] if "(" in m.group(4) else m.group(4))
            out.append([kernel, args, m.group(1), m.group(2), m.group(3)])
    if not out:
        raise SystemExit(f"{src}: no 'REG n STACK n LOCAL n name' lines")
    with open(dst, "w", newline="") as f:
        w = csv.writer(f, delimiter="\t", lineterminator="\n")
        w.writerow(["kernel", "args", "registers", "stack", "local"])
        w.writerows(sorted(out))


def main(argv):
    if len(argv) != 4 or argv[1] not in ("ncu", "resources"):
        print(__doc__, file=sys.stderr)
        return 2
    try:
        (ncu if argv[1] == "ncu" else resources)(argv[2], argv[3])
    except OSError as e:  # (a missing input or an output folder that is not there)
        print(f"{e.filename}: {e.strerror}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
