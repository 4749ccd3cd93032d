#!/usr/bin/env python3
"""Summarise Nsight Compute's source page (`ncu -i REP --page source --csv --print-source sass`):
the kernel's warp stall samples by reason, and the instructions with the most samples, each with
how many times a warp executed it and its two largest reasons.

usage: stall_summary.py SOURCE.csv [TOP]
"""
import csv
import sys


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        sys.exit(0 if len(sys.argv) > 1 else 2)
    rows = list(csv.reader(open(sys.argv[1], newline="")))
    top_n = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    kernel, header, data = rows[0][1], rows[1], rows[2:]
    col = {h: i for i, h in enumerate(header)}
    samples = "Warp Stall Sampling (All Samples)"
    reasons = [h for h in header if h.startswith("stall_") and "Not Issued" not in h]

    def num(r, h):
        return float(r[col[h]] or 0)

    total = sum(num(r, samples) for r in data)
    print(f"kernel: {kernel}")
    print(f"instructions: {len(data)}, warp stall samples: {total:.0f}")
    by_reason = sorted(((sum(num(r, h) for r in data), h[6:]) for h in reasons), reverse=True)
    shares = ", ".join(f"{h} {v / total * 100:.1f} %" for v, h in by_reason[:8])
    print("samples by reason: " + shares)
    print(f"\nthe {top_n} instructions with the most samples (offset from the first):")
    print(f"{'offset':>8} {'samples':>8} {'executed':>9}  instruction / two largest reasons")
    base = int(data[0][col["Address"]], 16)
    for r in sorted(data, key=lambda r: -num(r, samples))[:top_n]:
        two = sorted(((num(r, h), h[6:]) for h in reasons), reverse=True)[:2]
        off = int(r[col["Address"]], 16) - base
        share = num(r, samples) / total * 100
        print(f"{off:#8x} {share:7.1f}% {r[col['Instructions Executed']]:>9}  "
              f"{r[col['Source']].strip()[:56]:56} " + ", ".join(f"{h} {v:.0f}" for v, h in two))


if __name__ == "__main__":
    main()
