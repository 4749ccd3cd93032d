"""Summarises call 1's SASS source pages (Nsight Compute's `--page source --csv --print-source sass`,
too large to keep) into source_summary.txt: per kernel, warp instructions executed by opcode, the
stall samples by reason, and the runs of instructions executed equally often (the steps' forms).

    python3 source_summary.py source_cf_rows.csv.gz source_cf_states.csv.gz > source_summary.txt
"""
import collections
import csv
import gzip
import sys


def kernels(path):
    out, rows, hdr = [], None, None
    for row in csv.reader(gzip.open(path, "rt")):
        if row and row[0] == "Kernel Name":
            rows = []
            out.append((row[1], rows))
        elif row and row[0] == "Address":
            hdr = row
        elif rows is not None and row:
            rows.append(dict(zip(hdr, row)))
    return out


def summarise(path):
    seen = set()
    for name, rows in kernels(path):
        if name in seen:  # (the run launches each kernel three times; the first is enough)
            continue
        seen.add(name)
        warps = int(rows[0]["Instructions Executed"])  # the first instruction: once a warp
        total = sum(int(r["Instructions Executed"]) for r in rows)
        print(f"== {path}: {name[:110]}")
        print(f"   {len(rows)} instructions in the code, {warps} warps, {total} executed "
              f"({total / warps:.0f} a warp)")
        ops = collections.Counter()
        for r in rows:
            words = r["Source"].split()
            if words:
                op = words[1] + "(pred)" if words[0].startswith("@") else words[0]
                ops[op.split(".")[0]] += int(r["Instructions Executed"])
        print("   executed a warp, by opcode: " +
              ", ".join(f"{op} {n / warps:.1f}" for op, n in ops.most_common(16)))
        stalls = collections.Counter()
        for r in rows:
            for k, val in r.items():
                if k.startswith("stall_") and "Not Issued" not in k:
                    stalls[k[6:]] += int(val or 0)
        n = sum(stalls.values())
        print(f"   stall samples ({n}): " +
              ", ".join(f"{k} {v / n * 100:.1f} %" for k, v in stalls.most_common(8)))
        every = [r for r in rows if int(r["Instructions Executed"]) >= 0.9 * warps]
        hot = sum(int(r["Warp Stall Sampling (All Samples)"] or 0) for r in every)
        all_samples = sum(int(r["Warp Stall Sampling (All Samples)"] or 0) for r in rows)
        print(f"   instructions that (nearly) every warp executes (0.9 times a warp or more): "
              f"{len(every)}, with {hot / all_samples * 100:.1f} % of all stall samples")
        runs, start, prev = [], 0, None
        for i, r in enumerate(rows):
            f = int(r["Instructions Executed"]) / warps
            if f != prev:
                if prev is not None:
                    runs.append((start, i - 1, prev))
                start, prev = i, f
        runs.append((start, len(rows) - 1, prev))
        print("   runs of 20 or more instructions executed equally often (first-last, a warp):")
        for a, b, f in runs:
            if b - a + 1 >= 20 and f > 0:
                print(f"     {a:5d}-{b:5d}  {b - a + 1:4d} instructions  {f:.3f} times a warp")


if __name__ == "__main__":
    for p in sys.argv[1:]:
        summarise(p)
