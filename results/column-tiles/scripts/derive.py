#!/usr/bin/env python3
"""Tables the docs quote, derived from the calls' files (run from the repository root):

  run3/ncu_states_summary.tsv   Nsight Compute's details pages of run3 (the states alone): a row
                                per metric, a column per kernel (column_r8: the column tiles, R = 8; plain: chapter 08's kernel)
  run2/ncu_bytes.tsv            DRAM bytes and throughput of run2's raw counters, a row per kernel
                                launch (R=8 and R=16 column tiles, chapter 08's plain kernel)
  run4/spread.tsv               run4's six processes: the goal ratios and the times behind them
  run5/totals.tsv               run5's source pages (summed by scripts/ncu_source_summary.py into
                                source_*_groups.tsv): warp instructions and stall samples a kernel
"""
import csv
import pathlib

HERE = pathlib.Path("results/column-tiles")


def number(text):
    return float(text.replace(",", ""))


def ncu_details():
    rows = list(csv.DictReader((HERE / "run3/ncu_states_details.csv").open(newline="")))
    kernels = {}
    for r in rows:
        kernels.setdefault(r["ID"], "column_r8" if "TapWords" in r["Kernel Name"] else "plain")
    first = {}  # the first launch of each kernel
    for i, k in sorted(kernels.items(), key=lambda kv: int(kv[0])):
        first.setdefault(k, i)
    wanted = ["Duration", "DRAM Throughput", "L1/TEX Cache Throughput", "L1/TEX Hit Rate", "L2 Hit Rate",
              "Compute (SM) Throughput", "Issued Warp Per Scheduler", "Registers Per Thread",
              "Achieved Active Warps Per SM", "Warp Cycles Per Issued Instruction"]
    with (HERE / "run3/ncu_states_summary.tsv").open("w") as f:
        f.write("metric\tunit\t" + "\t".join(first) + "\n")
        for m in wanted:
            vals = {r["ID"]: r for r in rows if r["Metric Name"] == m}
            unit = next(iter(vals.values()))["Metric Unit"]
            f.write(f"{m}\t{unit}\t" + "\t".join(f"{number(vals[i]['Metric Value']):g}" for i in first.values()) + "\n")


def ncu_bytes():
    with (HERE / "run2/ncu_bytes.tsv").open("w") as out:
        out.write("build\tkernel\tlaunch\tms\tdram_read_mb\tdram_write_mb\tdram_pct_of_peak\n")
        for build in ("r8", "r16"):
            lines = [l for l in (HERE / f"run2/ncu_{build}.csv").open() if not l.startswith("==")]
            rows = list(csv.DictReader(lines))[1:]  # (the second line holds the units)
            seen = {}
            for r in rows:
                k = "column" if "TapWords" in r["Kernel Name"] else "plain"
                seen[k] = seen.get(k, 0) + 1
                out.write(f"{build}\t{k}\t{seen[k]}\t{number(r['gpu__time_duration.sum']) / 1e6:.4f}\t"
                          f"{number(r['dram__bytes_read.sum']) / 1e6:.1f}\t{number(r['dram__bytes_write.sum']) / 1e6:.1f}\t"
                          f"{number(r['dram__throughput.avg.pct_of_peak_sustained_elapsed']):.1f}\n")


def spread():
    def times(path):
        t = {}
        for r in csv.reader(path.open(), delimiter="\t"):
            if len(r) > 8 and r[0] == "10":
                t.setdefault((r[2], r[3]), r)
        return t
    with (HERE / "run4/spread.tsv").open("w") as out:
        out.write("process\tfwd_packed_ms\tfwd_plain_ms\tfwd_ratio\tbwd_packed_ms\tbwd_plain_ms\tbwd_ratio\tvarlen_ceiling_pct\n")
        table = []
        for n in range(1, 7):
            t = times(HERE / f"run4/bench_rows_{n}_kernels.tsv")
            v = times(HERE / f"run4/bench_varlen_{n}_kernels.tsv")
            fp, fq = float(t[("cf_packed", "whole forward")][4]), float(t[("cf_plain", "conv_fwd_cf_staged")][4])
            bp, bq = float(t[("cf_packed_bwd", "whole backward")][4]), float(t[("cf_plain_bwd", "whole backward")][4])
            vl = float(v[("cl_varlen", "conv_fwd_cl_staged")][7])
            table.append([fp, fq, fp / fq, bp, bq, bp / bq, vl])
            out.write(f"{n}\t" + "\t".join(fmt(c, x) for c, x in enumerate(table[-1])) + "\n")
        for name, pick in (("min", min), ("max", max)):  # (each column on its own)
            out.write(f"{name}\t" + "\t".join(fmt(c, pick(r[c] for r in table)) for c in range(7)) + "\n")


def fmt(column, x):
    return f"{x:.1f}" if column == 6 else f"{x:.3f}" if column in (2, 5) else f"{x:.4f}"


def totals():
    with (HERE / "run5/totals.tsv").open("w") as out:
        out.write("kernel\tinstructions\tsamples\n")
        for k, name in (("TapWords", "column_r8"), ("EveryTap", "plain")):
            rows = list(csv.DictReader((HERE / f"run5/source_{k}_groups.tsv").open(), delimiter="\t"))
            out.write(f"{name}\t{sum(int(r['instructions']) for r in rows)}\t{sum(int(r['samples']) for r in rows)}\n")


if __name__ == "__main__":
    ncu_details()
    ncu_bytes()
    spread()
    totals()
