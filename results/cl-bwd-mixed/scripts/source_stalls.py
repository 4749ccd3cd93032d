"""Condenses call 1's SASS source page (Nsight Compute's `--page source --csv --print-source sass`,
too large to keep) into source_stalls.txt: for each kernel launch, the warp instructions executed
and the stall samples by 250-instruction stretch of the code, and the instructions with the most
stall samples (their main reason and how often a warp executes them).

    python3 source_stalls.py run1/source_sass.csv.gz > run1/source_stalls.txt
"""
import collections
import pathlib
import sys

# The pages' reader is the one ../ch10-bwd-cut used for its summaries.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "ch10-bwd-cut" / "scripts"))
from source_summary import kernels  # noqa: E402


def samples(r):
    return int(r["Warp Stall Sampling (All Samples)"] or 0)


def opcode(r):
    words = r["Source"].split()
    return (words[1] if words and words[0].startswith("@") else words[0]).split(".")[0] if words else ""


def summarise(name, rows):
    warps = int(rows[0]["Instructions Executed"])  # the first instruction: once a warp
    total = sum(int(r["Instructions Executed"]) for r in rows)
    n = sum(samples(r) for r in rows)
    print(f"== {name[:150]}")
    print(f"   {len(rows)} instructions in the code, {warps} warps, {total} executed, {n} stall samples")
    print("   stretch of the code: share of instructions executed, share of stall samples, top opcodes (a warp)")
    for s0 in range(0, len(rows), 250):
        part = rows[s0:s0 + 250]
        ex = sum(int(r["Instructions Executed"]) for r in part)
        ops = collections.Counter()
        for r in part:
            ops[opcode(r)] += int(r["Instructions Executed"])
        print(f"     {s0:5d}-{s0 + len(part) - 1:5d}  {ex / total * 100:5.1f} %  {sum(samples(r) for r in part) / n * 100:5.1f} %  "
              + ", ".join(f"{o} {c / warps:.0f}" for o, c in ops.most_common(5)))
    print("   the 12 instructions with the most stall samples: index, times a warp, share of samples, main reason")
    for i, r in sorted(enumerate(rows), key=lambda ir: -samples(ir[1]))[:12]:
        reasons = {k[6:]: int(v or 0) for k, v in r.items() if k.startswith("stall_") and "Not Issued" not in k}
        top = max(reasons, key=reasons.get)
        print(f"     {i:5d}  {int(r['Instructions Executed']) / warps:6.3f}  {samples(r) / n * 100:5.2f} %  {top:14s} {r['Source'][:70]}")


if __name__ == "__main__":
    seen = set()
    for name, rows in kernels(sys.argv[1]):
        if name not in seen:  # (a launch the page repeats)
            seen.add(name)
            summarise(name, rows)
