#!/usr/bin/env python3
"""Counts in one kernel's SASS (`cuobjdump -sass -fun NAME OBJ`, saved to a file), for comparing
builds of the same kernel without a GPU.

usage: sass_counts.py BUILD SASS.txt [REGISTERS]   (prints one row of sass_counts.tsv)

sass_lines: instructions; uniform_lines: instructions on the uniform datapath (opcodes U*; the
moves into uniform registers, S2UR and R2UR, are not counted); ldc_to_vector: LDC (a constant-bank load into a vector
register; ULDC is the uniform form); lines_before_barrier: instructions before the first BAR.SYNC
(the tile loop's work before the tile has landed, in chapter 09's staged kernels). A predicate
guard (@P0, @!P1) is not part of the opcode.
"""
import re
import sys

INSTR = re.compile(r"^\s*/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P[T0-9]+\s+)?([A-Z0-9_.]+)")


def counts(text):
    ops = [m.group(1) for m in map(INSTR.match, text.splitlines()) if m]
    base = [op.split(".")[0] for op in ops]
    first_bar = next((i for i, op in enumerate(ops) if op.startswith("BAR.SYNC")), len(ops))
    return {"sass_lines": len(ops),
            "uniform_lines": sum(b.startswith("U") for b in base),
            "ldc_to_vector": sum(b == "LDC" for b in base),
            "lines_before_barrier": first_bar}


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    c = counts(open(sys.argv[2]).read())
    print("\t".join([sys.argv[1]] + [str(v) for v in c.values()] + sys.argv[3:]))
