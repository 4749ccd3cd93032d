"""Static size of the staged kernel's per-tile prologue in a cuobjdump -sass listing of one kernel:
the instructions from the loop's head (the target of the backward branch that closes the tile
loop, the last backward branch before the final wait for the async copies) to the block's barrier.
Both sides of every branch in between are counted, so this is a static size, not the path a
thread runs.    python3 prologue_count.py KERNEL.sass"""
import re
import sys

ins = []
for line in open(sys.argv[1]):
    m = re.search(r"/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;", line)
    if m:
        ins.append((int(m.group(1), 16), m.group(2)))
final_wait = max(a for a, op in ins if op.startswith("DEPBAR.LE SB0, 0x0"))
back = [(a, int(t, 16)) for a, op in ins if a < final_wait
        for t in re.findall(r"BRA (?:`\(\.L_x_\d+\) )?0x([0-9a-f]+)", op) if int(t, 16) < a]
head = back[-1][1]
barrier = min(a for a, op in ins if op.startswith("BAR.SYNC") and a > head)
print(f"loop head {head:#x}, barrier {barrier:#x}: "
      f"{sum(1 for a, _ in ins if head <= a < barrier)} instructions")
