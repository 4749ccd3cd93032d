#!/usr/bin/env python3
"""Turns two kinds of tool output into tab-separated tables that scripts/docs_sync.py can quote.

  result_tables.py ncu NCU_RAW.csv OUT.tsv         Nsight Compute `--csv --page raw` output: one row per
                                                   kernel instance (template arguments split off), each
                                                   metric the median over its launches as a plain
                                                   number (no thousands separators; the unit in the
                                                   column name); of the launch attributes, the grid,
                                                   registers, dynamic shared memory and the
                                                   occupancy limits
  result_tables.py resources CUOBJDUMP.txt OUT.tsv  `REG n STACK n LOCAL n <demangled kernel>` lines (as
                                                   scripts/gpu-check.d/48-chapter-08.sh writes them):
                                                   kernel, template arguments, registers, stack, local
  result_tables.py ab RUN_DIR OUT.tsv              an A/B run's chapter-10 backward timings, files
                                                   bench_CONFIG_TREE_ROUND_kernels.tsv (--summary):
                                                   the packed whole backward and the plain one timed
                                                   in the same process, by configuration and tree,
                                                   medians over the rounds and the ratio's range (a
                                                   varlen run: its whole backward alone, no ratio)
  result_tables.py ab-forward RUN_DIR OUT.tsv      the same for forward runs (cl_packed, cl_plain,
                                                   cl_varlen; cf_* alike): a variant's time its
                                                   "whole forward" row, or its one kernel's

Template arguments are joined by "/" (conv_fwd_cf_chunked<__nv_bfloat16, 4, 2> becomes kernel
conv_fwd_cf_chunked, args __nv_bfloat16/4/2), so a docs_sync `where=` can select them. Standard
library only.
"""
import csv
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile

NAME = re.compile(r"^(?:void\s+)?(?:[\w:]+::)?(?P<kernel>\w+)(?:<(?P<args>[^()]*)>)?")


def split_name(full):
    """('conv_fwd_cf_chunked', '__nv_bfloat16/4/2') from a demangled kernel name."""
    m = NAME.match(full.strip())
    if not m:
        return full.strip(), ""
    args = m.group("args") or ""
    args = "/".join(re.sub(r"\b(?:conv1d|ch\d\d)::", "", a.strip()) for a in args.split(",")) if args else ""
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
        raise SystemExit(f"{src}: no Nsight Compute raw table (a header row starting with ID, then units)")
    header, units = rows[start], rows[start + 1]
    metric = re.compile(r"^[a-z_]+__[\w.]+$")
    # The raw page carries every device, link and profiler attribute too: keep the kernel's metrics,
    # and of the launch's attributes those that say how many blocks a multiprocessor held and why.
    skip = ("device__", "launch__", "numa__", "nvlink__", "profiler__")
    launch = ("launch__grid_size", "launch__registers_per_thread", "launch__shared_mem_per_block_dynamic")
    cols = [i for i, h in enumerate(header) if metric.match(h) and
            (not h.startswith(skip) or h in launch or h.startswith("launch__occupancy_limit_"))]
    # It also adds .avg/.max/.min beside each .sum asked for (and .max/.min/.sum beside a .avg.pct):
    # keep the one asked for.
    sums = {header[i].rsplit(".", 1)[0] for i in cols if header[i].endswith(".sum")}
    cols = [i for i in cols if not (header[i].rsplit(".", 1)[0] in sums and not header[i].endswith(".sum"))
            and not re.search(r"\.(max|min|sum)\.pct", header[i])]
    name_col = header.index("Kernel Name")
    launches = {}  # (kernel, args) -> list of metric rows, in launch order
    for r in rows[start + 2:]:
        if len(r) != len(header):
            continue
        launches.setdefault(split_name(r[name_col]), []).append([number(r[i]) for i in cols])
    with open(dst, "w", newline="") as f:
        w = csv.writer(f, delimiter="\t", lineterminator="\n")
        w.writerow(["kernel", "args", "launches"] + [f"{header[i]}[{units[i]}]" if units[i] else header[i] for i in cols])
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


def ab_rows(run_dir, tree_name=lambda tree: tree, direction="backward"):
    """The `ab` table's rows from RUN_DIR (a pathlib.Path); tree_name renames the files' trees.
    direction "forward": the forward variants (cl_packed, cl_plain, cl_varlen; column fwd_ms)."""
    suffix, col = ("_bwd", "bwd_ms") if direction == "backward" else ("", "fwd_ms")
    groups = {}
    for path in sorted(run_dir.glob("bench_*_kernels.tsv")):
        parts = path.name[len("bench_"):-len("_kernels.tsv")].rsplit("_", 2)
        if len(parts) != 3:
            raise ValueError(f"{path}: expected bench_CONFIG_TREE_ROUND_kernels.tsv")
        config, tree, _ = parts
        by_variant = {}
        with path.open(newline="") as f:
            for r in csv.DictReader(f, delimiter="\t"):
                by_variant.setdefault(r["variant"], []).append(r)
        got = {}  # a variant's time: its "whole ..." row, or its one kernel's
        for variant, rs in by_variant.items():
            whole = [r for r in rs if r["kernel"] == f"whole {direction}"]
            if whole or len(rs) == 1:
                got[variant] = float((whole or rs)[0]["ms"])
        if f"cl_varlen{suffix}" in got:  # (a varlen run has no plain kernel beside it)
            pair = (got[f"cl_varlen{suffix}"], None)
        else:
            lay = "cl" if f"cl_packed{suffix}" in got else "cf"
            if f"{lay}_packed{suffix}" not in got or f"{lay}_plain{suffix}" not in got:
                raise ValueError(f"{path}: no packed and plain whole {direction}, nor a varlen one")
            pair = (got[f"{lay}_packed{suffix}"], got[f"{lay}_plain{suffix}"])
        groups.setdefault((config, tree_name(tree)), []).append(pair)
    if not groups:
        raise ValueError(f"{run_dir}: no bench_*_kernels.tsv files")
    rows = []
    for (config, tree), ts in sorted(groups.items()):
        row = {"config": config, "tree": tree, "processes": len(ts),
               col: f"{statistics.median(p for p, _ in ts):.4f}",
               "plain_ms": "", "ratio": "", "ratio_min": "", "ratio_max": ""}
        if all(q is not None for _, q in ts):
            ratios = [p / q for p, q in ts]
            row.update({"plain_ms": f"{statistics.median(q for _, q in ts):.4f}",
                        "ratio": f"{statistics.median(ratios):.4f}",
                        "ratio_min": f"{min(ratios):.4f}", "ratio_max": f"{max(ratios):.4f}"})
        rows.append(row)
    return rows


def source_page(source):
    """An Nsight Compute source page (`--page source --csv --print-source sass`, gzipped or not)
    summarised by scripts/ncu_source_summary.py: its SASS lines, stall samples, samples by reason
    and executed instructions by opcode."""
    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp) / "s.md"
        summary = pathlib.Path(__file__).with_name("ncu_source_summary.py")
        subprocess.run([sys.executable, str(summary), str(source), str(out)], check=True,
                       stdout=subprocess.DEVNULL)
        head = out.read_text().splitlines()[2].split()
        tables = {}
        for kind, key, value in (("reasons", "reason", "samples"), ("opcodes", "opcode", "instructions")):
            with (pathlib.Path(tmp) / f"s_{kind}.tsv").open(newline="") as f:
                tables[kind] = {r[key]: int(r[value]) for r in csv.DictReader(f, delimiter="\t")}
    return {"sass_lines": head[0], "samples": int(head[7]), **tables}


def one_launch_row(name, details, source):
    """One profiled launch as a row, for an experiment's own table (an importable helper, no
    command): from Nsight Compute's details page (`--page details --csv`) its registers,
    instructions, cycles between a warp's instructions, DRAM busy (% of its peak) and duration
    (µs); from its source page (source_page) its SASS lines, stall samples and their share at
    the barrier. Optional metrics a page lacks (uniform instructions, DRAM, duration) are left
    empty."""
    wanted = {"Executed Instructions": "instructions", "Registers Per Thread": "registers",
              "Warp Cycles Per Issued Instruction": "cycles_per_issue",
              "smsp__inst_executed_pipe_uniform.sum": "uniform",
              "DRAM Throughput": "dram_pct", "Duration": "duration"}
    to_us = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3}
    got = {}
    with pathlib.Path(details).open(newline="") as f:
        for r in csv.DictReader(f):
            key, value = wanted.get(r["Metric Name"]), r["Metric Value"].replace(",", "")
            if key == "duration":
                value = f"{float(value) * to_us[r['Metric Unit']]:.2f}"
            if key:
                got[key] = value
    page = source_page(source)
    samples, barrier = page["samples"], page["reasons"].get("barrier", 0)
    return {"kernel": name, "registers": got["registers"], "sass_lines": page["sass_lines"],
            "instructions": got["instructions"], "uniform": got.get("uniform", ""),
            "cycles_per_issue": got["cycles_per_issue"], "samples": samples,
            "barrier_samples": barrier, "barrier_pct": f"{100 * barrier / samples:.1f}",
            "dram_pct": got.get("dram_pct", ""), "duration_us": got.get("duration", "")}


def launch_tables(launches, order_by):
    """Two tables of profiled launches, each (name, details page, source page): one_launch_row's
    row for each, and their executed instructions by opcode (a row an opcode, a column a launch;
    the opcodes in the order of launch `order_by`'s counts, ties by name)."""
    rows = [one_launch_row(*launch) for launch in launches]
    counts = {name: source_page(source)["opcodes"] for name, _, source in launches}
    ops = sorted({op for c in counts.values() for op in c}, key=lambda op: (-counts[order_by].get(op, 0), op))
    return rows, [{"opcode": op, **{name: c.get(op, 0) for name, c in counts.items()}} for op in ops]


def write_tsv(path, rows):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]), delimiter="\t", lineterminator="\n")
        w.writeheader()
        w.writerows(rows)


def main(argv):
    if len(argv) != 4 or argv[1] not in ("ncu", "resources", "ab", "ab-forward"):
        print(__doc__, file=sys.stderr)
        return 2
    if argv[1] in ("ab", "ab-forward"):
        try:
            rows = ab_rows(pathlib.Path(argv[2]),
                           direction="forward" if argv[1] == "ab-forward" else "backward")
        except (ValueError, KeyError) as e:
            print(f"result_tables.py {argv[1]}: {e}", file=sys.stderr)
            return 1
        write_tsv(argv[3], rows)
    else:
        (ncu if argv[1] == "ncu" else resources)(argv[2], argv[3])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
