# Summary of trace.patch's block records: per launch, its span, block durations by kind and the
# blocks that end last. (nonfull overflowed its 16 bits into the grid field for edge blocks: undone here.)
import csv, sys, statistics as st
from collections import Counter
def load(path):
    rows = list(csv.DictReader(open(path)))
    out = {}
    for k in ('0', '1'):
        rs = [r for r in rows if r['kind'] == k]
        if not rs: continue
        G = Counter(int(r['grid']) for r in rs).most_common(1)[0][0]
        keep = []
        for r in rs:
            tot = int(r['grid']) * 65536 + int(r['nonfull'])
            nf = tot - G * 65536
            if 0 <= nf < 131072 and int(r['block']) < G:
                r['nonfull'] = nf; keep.append(r)
        med = st.median(int(r['start_ns']) for r in keep)
        keep = [r for r in keep if abs(int(r['start_ns']) - med) < 5e6]
        out[k] = keep
    return out
def cls(r):
    n = int(r['nonfull'])
    return 'edge' if n >= 1000 else 'mixed' if n > 0 else 'full'
for path in sys.argv[1:]:
    print('==', path)
    for k, rs in load(path).items():
        t0 = min(int(r['start_ns']) for r in rs); t1 = max(int(r['end_ns']) for r in rs)
        print(f" {'plain' if k == '0' else 'packed'}: {len(rs)} blocks, span {(t1 - t0) / 1e3:.1f} us")
        for c in ('full', 'mixed', 'edge'):
            ds = sorted((int(r['end_ns']) - int(r['start_ns'])) / 1e3 for r in rs if cls(r) == c)
            if ds:
                print(f"   {c:5s} n={len(ds):5d} duration us: median {st.median(ds):6.2f} p90 {ds[int(.9 * len(ds))]:6.2f} max {ds[-1]:6.2f}")
        late = sorted(rs, key=lambda r: -int(r['end_ns']))[:16]
        print('   last 16 to end (kind block @start+duration us):',
              ' '.join(f"{cls(r)[0]}{r['block']}@{(int(r['start_ns']) - t0) / 1e3:.0f}+{(int(r['end_ns']) - int(r['start_ns'])) / 1e3:.0f}" for r in late))
        starts = sorted(int(r['start_ns']) - t0 for r in rs)
        print(f"   last block starts at {starts[-1] / 1e3:.1f} us")
