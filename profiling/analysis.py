"""From the table to the numbers behind each chart, per chapter and per pipeline run.

Which runs are counted: the chapters' own trace marks every record with its iteration (0 and N+1 are
verification runs, 1..N the timed runs). A timed run's window lasts from its first record to the
first record of the next run. With the chapters' own data, the charts use the timed runs. With a
profiler's traces on the same clock (our CUPTI tracer takes its timestamps from the chapters' steady
clock), the profiler's records that start inside those windows are used, so both count the same
runs. Otherwise (statistics only, or traces on another clock) a profiler's totals cover the whole
process; they are divided by the number of pipeline runs when run_info.json gives it, and labelled
"whole process" when nothing does.
"""
import bisect
import collections
import dataclasses
import math
import re
import statistics
from typing import Optional

from profiling.table import CATEGORIES, FormatError, short_kernel_name

# Preferred source when a run holds several and neither the user nor run_info.json chooses:
# a profiler someone ran on purpose before the chapters' own records.
SOURCE_PREFERENCE = ("cupti", "rocprofv3", "nsys", "rocprof", "ncu", "builtin")
DTYPE_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2, "fp64": 8}

# Compute roofs for the roofline. No device reports its real peak, so a roof is the fastest GEMM of a
# vendor library (cuBLAS, rocBLAS, hipBLAS) that the loaded result files measured in a dtype on the
# same device. Where no such measurement exists, a datasheet figure of a known device stands in,
# labelled as one: (dtype, TFLOP/s, what it is). NVIDIA H200 SXM datasheet: FP32 67 TFLOP/s (CUDA
# cores), FP16 tensor cores 1979 TFLOP/s with 2:4 sparsity, so about 989 dense.
DATASHEET_PEAKS = {
    "NVIDIA H200": (("fp32", 67.0, "fp32 on CUDA cores"), ("fp16", 989.0, "fp16 on tensor cores, dense")),
}
DATASHEET_NAMES = {"NVIDIA H200": "NVIDIA H200 SXM datasheet"}
LIBRARY_GEMM = re.compile(r"(cu|roc|hip)blas", re.I)
ROOF_DTYPES = ("fp32", "fp16", "bf16")


@dataclasses.dataclass
class Roof:
    dtype: str
    tflops: float
    label: str
    measured: bool
    file: str = ""      # the result file of a measured roof


@dataclasses.dataclass
class View:
    """One run and one source: what every chart is drawn from."""
    run: str
    source: str
    info: dict
    device: str
    date: str
    shape: str
    rows: list          # all rows of the run (every source)
    summaries: list
    kernels: list
    # What the other loaded runs measured (the roofline's roofs, the stage timeline's shape):
    all_summaries: list = dataclasses.field(default_factory=list)   # every run's summaries
    all_kernels: list = dataclasses.field(default_factory=list)     # every run's kernel rows, this device
    stages: list = dataclasses.field(default_factory=list)          # stage timelines of every run
    run_dates: dict = dataclasses.field(default_factory=dict)       # run -> date from its run_info.json
    books: list = dataclasses.field(default_factory=list)           # the tour's book tables (book.Book)


@dataclasses.dataclass
class ChapterProfile:
    chapter: str
    label: str                 # "01 host_img2col"
    variant: str               # the headline variant (the first one a chapter reports)
    basis: str                 # "timed runs", "per pipeline run" or "whole process"
    runs: float                # the divisor behind "per run"
    categories: dict           # category -> ms per run (None: this source does not record it)
    kernels: dict              # kernel (short name) -> ms per run
    e2e_ms: Optional[float] = None
    device_ms: Optional[float] = None
    timeline: list = dataclasses.field(default_factory=list)  # (lane, start ms, duration ms, category, name)
    timeline_span: str = ""    # what the timeline covers: one timed run, or the whole process
    main: object = None        # KernelSummary of the main kernel
    floor_ms: Optional[float] = None
    floor_tensors: int = 2     # tensors a perfect kernel moves once: x and out; backward x, dout, dx
    ceiling_gbs: Optional[float] = None
    kernel_calls: dict = dataclasses.field(default_factory=dict)  # kernel -> launches per run
    host_steps: dict = dataclasses.field(default_factory=dict)    # host step -> ms per run (own records)
    # When the headline variant's device records overlap on several streams, an event pair includes
    # the time a kernel waits for the others, and the stages add up to more than the run: categories,
    # kernels, device time and the main kernel then come from a variant of the same chapter whose
    # records do not overlap (kernel_variant), or are marked as overlapping when there is none.
    kernel_variant: str = ""
    overlapping: bool = False
    # A chapter whose variants are named by layout (cf_*, cl_*: chapter 08) has a main kernel per
    # layout: the roofline draws each (main first).
    mains: list = dataclasses.field(default_factory=list)
    # A chapter the charted run does not hold, taken from another result file of the same device: that
    # file's name (the charts say so), and whether its shape is the charted run's (B, D, L, W).
    borrowed: str = ""
    comparable: bool = False


def chapter_label(chapter):
    m = re.match(r"^ch(\d\d)_(.+)$", chapter)
    return f"{m.group(1)} {m.group(2)}" if m else chapter


def _most_common(values, default):
    values = [v for v in values if v]
    return collections.Counter(values).most_common(1)[0][0] if values else default


def select(ds, run=None, source=None):
    """Picks the run (newest run_info date, then the most chapters) and the source to chart."""
    runs = sorted({r.run for r in ds.rows} | {s.run for s in ds.summaries})
    if not runs:
        raise FormatError("no profile data found (expected the chapters' CSV files, rocprofv3, rocprof, "
                          "nsys or ncu CSV files, see docs/profiling.md)")
    if run:
        matches = [r for r in runs if r == run or r.endswith("/" + run.strip("/"))]
        if len(matches) != 1:
            raise FormatError(f"--run {run}: {'no' if not matches else 'several'} runs match; runs: {', '.join(runs)}")
        chosen = matches[0]
    else:
        def rank(r):
            chapters = {x.chapter for x in ds.rows if x.run == r} | {s.chapter for s in ds.summaries if s.run == r}
            return (ds.runs.get(r, {}).get("date", ""), len(chapters), r)
        chosen = max(runs, key=rank)
    rows = [r for r in ds.rows if r.run == chosen]
    info = ds.runs.get(chosen, {})
    present = {r.source for r in rows}
    if source:
        if source not in present:
            raise FormatError(f"--source {source}: the run {chosen} has no {source} data "
                              f"(it has: {', '.join(sorted(present)) or 'summary tables only'})")
    elif info.get("source") in present:
        source = info["source"]
    else:
        source = next((s for s in SOURCE_PREFERENCE if s in present), "builtin")
    summaries = [s for s in ds.summaries if s.run == chosen]
    kernels = [k for k in ds.kernels if k.run == chosen]
    device = info.get("device") or _most_common([s.device for s in summaries], "") or \
        _most_common(ds.agents.get(chosen, []), "device not recorded")
    # From the summaries when there are any (the label stored at run time is the fallback).
    shape = shape_label([s.shape for s in summaries]) if summaries else info.get("shape_label") or "shape not recorded"
    return View(chosen, source, info, device, info.get("date", "date not recorded"), shape, rows, summaries, kernels,
                all_summaries=list(ds.summaries), all_kernels=[k for k in ds.kernels if k.device == device],
                stages=list(getattr(ds, "stages", [])),
                run_dates={r: i.get("date", "") for r, i in ds.runs.items() if i.get("date")},
                books=list(getattr(ds, "books", [])))


# ---- windows of timed runs -------------------------------------------------------------------

def timed_windows(trace):
    """{iteration: (start, end)} of the timed runs in a chapter's own trace."""
    first = {}
    for r in trace:
        if r.iteration is not None and r.iteration >= 0:
            first[r.iteration] = min(first.get(r.iteration, r.start_ns), r.start_ns)
    if not first:
        return {}
    last = max(first)
    timed = [i for i in sorted(first) if 1 <= i < last] or [i for i in sorted(first) if i >= 1]
    out = {}
    for i in timed:
        later = [first[j] for j in first if j > i]
        end = min(later) if later else max(r.end_ns for r in trace if r.iteration == i)
        out[i] = (first[i], end)
    return out


def _when(r):
    """The instant that places a record in a run: its start, but a marker range's end (the chapters
    open a phase's range a moment before they take the phase's start time)."""
    return r.end_ns - 1 if r.category == "marker" else r.start_ns


def _in_windows(rows, windows):
    """{iteration: rows placed inside that window}."""
    spans = sorted((w[0], w[1], i) for i, w in windows.items())
    starts = [s[0] for s in spans]
    out = collections.defaultdict(list)
    for r in rows:
        t = _when(r)
        k = bisect.bisect_right(starts, t) - 1
        if k >= 0 and t < spans[k][1]:
            out[spans[k][2]].append(r)
    return out


def _host_from_markers(markers, api):
    """Host time seen by an external profiler: the chapters' NVTX/roctx phase ranges during which the
    program made no runtime call (allocations, copies and launches all go through one)."""
    keys = sorted(a.start_ns for a in api)
    total = 0.0
    for m in markers:
        k = bisect.bisect_left(keys, m.start_ns)
        if k == len(keys) or keys[k] > m.end_ns:  # no runtime call began inside the range
            total += m.end_ns - m.start_ns
    return total


def _median_window(windows):
    ordered = sorted(windows, key=lambda i: (windows[i][1] - windows[i][0], i))
    return ordered[(len(ordered) - 1) // 2]


FAMILIES = {"kernel": ("kernel",), "copy": ("h2d", "d2h", "d2d", "copy", "memset"),
            "api": ("api", "alloc", "free"), "marker": ("marker",)}


def _family(cat):
    return next(f for f, cats in FAMILIES.items() if cat in cats) if cat not in ("host", "domain") else cat


def _headline(summaries, chapter):
    """A chapter's first reported variant is its headline (as in the tour)."""
    return next((s for s in summaries if s.chapter == chapter), None)


DEVICE_CATEGORIES = ("h2d", "d2h", "kernel", "d2d", "copy", "memset")


def overlapping(rows):
    """Whether device records (kernels, copies) of different streams overlap in time."""
    recs = sorted((r.start_ns, r.end_ns, r.stream) for r in rows
                  if r.kind == "trace" and r.category in DEVICE_CATEGORIES and r.start_ns is not None)
    active = []
    for start, end, stream in recs:
        active = [(e, st) for e, st in active if e > start]
        if any(st != stream for _, st in active):
            return True
        active.append((end, stream))
    return False


def _builtin_profile(p, own, info):
    trace = [r for r in own if r.kind == "trace"]
    stats = [r for r in own if r.kind == "stats"]
    cats = dict.fromkeys(CATEGORIES, 0.0)
    kernels = collections.defaultdict(float)
    if trace:
        windows = timed_windows(trace)
        if not windows:
            raise FormatError(f"{trace[0].file}: no timed iterations (expected iterations 1..N between the "
                              f"verification runs 0 and N+1)")
        used = [r for r in trace if r.iteration in windows]
        p.runs, p.basis = len(windows), "timed runs"
        mid = _median_window(windows)
        t0 = windows[mid][0]
        p.timeline = [(r.stream, (r.start_ns - t0) / 1e6, (r.end_ns - r.start_ns) / 1e6, r.category, r.name)
                      for r in trace if r.iteration == mid]
        p.timeline_span = "one timed run (the run of median length)"
    else:
        used = stats
        non_kernel = [r.calls for r in stats if r.category != "kernel"] or [r.calls for r in stats]
        p.runs = float(info.get("iters") or min(non_kernel))  # every host step runs once per run
        p.basis = "timed runs"
    calls = collections.defaultdict(float)
    steps = collections.defaultdict(float)
    for r in used:
        cats[r.category] += r.total_ns
        if r.category == "kernel":
            kernels[r.name] += r.total_ns
            calls[r.name] += r.calls
        elif r.category == "host":
            steps[r.name] += r.total_ns
    p.categories = {c: v / p.runs / 1e6 for c, v in cats.items()}
    p.kernels = {k: v / p.runs / 1e6 for k, v in kernels.items()}
    p.kernel_calls = {k: v / p.runs for k, v in calls.items()}
    p.host_steps = {k: v / p.runs / 1e6 for k, v in steps.items()}
    p.overlapping = overlapping(used)


# Kernels of the chapters' measuring frame rather than of the chapters: common/timing.h's StreamGate
# holds a stream with a one-thread kernel while a launch is enqueued, and does no work.
HARNESS_KERNELS = ("stream_gate_wait",)


def _chapter_work(ext):
    """A profiler's records without the measuring frame's own GPU work: the StreamGate kernels, and,
    when the trace has the chapters' NVTX/roctx phase ranges and runtime calls, kernels, memsets and
    copies enqueued by a runtime call outside every range (the L2 flush before each timed run)."""
    ext = [r for r in ext if not (r.category == "kernel" and short_kernel_name(r.name) in HARNESS_KERNELS)]
    ranges = sorted((r.start_ns, r.end_ns) for r in ext if r.category == "marker" and r.kind == "trace")
    api = [r for r in ext if _family(r.category) == "api" and r.kind == "trace" and r.metrics.get("correlation")]
    if not ranges or not api:
        return ext
    merged = []
    for a, b in ranges:
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    starts = [m[0] for m in merged]

    def in_a_phase(t):
        k = bisect.bisect_right(starts, t) - 1
        return k >= 0 and t <= merged[k][1]

    outside = {a.metrics["correlation"] for a in api if not in_a_phase(a.start_ns)}
    return [r for r in ext if not (_family(r.category) in ("kernel", "copy") and r.kind == "trace"
                                   and r.metrics.get("correlation") in outside)]


def _external_profile(p, ext, own, info):
    ext = _chapter_work(ext)
    trace = [r for r in ext if r.kind == "trace"]
    own_trace = [r for r in own if r.kind == "trace"]
    windows = timed_windows(own_trace) if own_trace else {}
    inside = _in_windows(trace, windows) if windows and trace else {}
    picked = [r for rs in inside.values() for r in rs]
    if picked:
        p.runs, p.basis = len(windows), "timed runs"
        rows = picked
        families = {_family(r.category) for r in trace}
    else:
        # No common clock: each family from its traces when there are any, else from its statistics.
        rows = []
        families = set()
        for fam in FAMILIES:
            t = [r for r in ext if _family(r.category) == fam and r.kind == "trace"]
            s = [r for r in ext if _family(r.category) == fam and r.kind == "stats"]
            rows += t or s
            if t or s:
                families.add(fam)
        n = (info.get("pipeline_runs") or {}).get(p.chapter)
        p.runs, p.basis = (float(n), "per pipeline run") if n else (1.0, "whole process")
    cats = {c: 0.0 for c in CATEGORIES}
    kernels = collections.defaultdict(float)
    calls = collections.defaultdict(float)
    for r in rows:
        if r.category in cats and r.category != "host":
            cats[r.category] += r.total_ns
        if r.category == "kernel":
            kernels[short_kernel_name(r.name)] += r.total_ns
            calls[short_kernel_name(r.name)] += r.calls
    p.kernel_calls = {k: v / p.runs for k, v in calls.items()}
    p.overlapping = overlapping(rows)
    if "api" not in families:
        cats["alloc"] = cats["free"] = None
    if "copy" not in families:
        cats["h2d"] = cats["d2h"] = None
    markers = [r for r in rows if r.category == "marker" and r.kind == "trace"]
    if picked and markers:
        cats["host"] = _host_from_markers(markers, [r for r in rows if _family(r.category) == "api"])
    else:
        cats["host"] = None
    p.categories = {c: (None if v is None else v / p.runs / 1e6) for c, v in cats.items()}
    p.kernels = {k: v / p.runs / 1e6 for k, v in kernels.items()}
    if picked:
        mid = _median_window(windows)
        shown, t0 = inside.get(mid, []), windows[mid][0]
        p.timeline_span = "one timed run (the run of median length)"
    else:  # no common clock with the chapter's own trace: the whole process
        shown = trace
        t0 = min((r.start_ns for r in trace), default=0)
        p.timeline_span = "the whole process (no timed-run boundaries on this clock)"
    p.timeline = [(r.stream if _family(r.category) in ("kernel", "copy") else
                   "NVTX ranges" if r.category == "marker" else "runtime API",
                   (r.start_ns - t0) / 1e6, (r.end_ns - r.start_ns) / 1e6, r.category,
                   short_kernel_name(r.name) if r.category == "kernel" else r.name) for r in shown]


def parse_shape(shape):
    """(elements, bytes per element) from a summary's shape, e.g. 'B=4 D=512 L=2048 W=4 fp32'."""
    dims = dict(re.findall(r"\b([BDL])=(\d+)", shape))
    dtype = next((d for d in DTYPE_BYTES if re.search(rf"\b{d}\b", shape)), None)
    if len(dims) != 3 or dtype is None:
        return None
    return int(dims["B"]) * int(dims["D"]) * int(dims["L"]), DTYPE_BYTES[dtype]


def shape_dtype(shape):
    return next((d for d in DTYPE_BYTES if re.search(rf"\b{d}\b", shape or "")), None)


def conv_flops(shape):
    """The convolution's own flops, 2·B·D·L·W (one multiply-add per tap), from a summary's shape."""
    dims = dict(re.findall(r"\b([BDLW])=(\d+)", shape or ""))
    if len(dims) != 4:
        return None
    return 2.0 * int(dims["B"]) * int(dims["D"]) * int(dims["L"]) * int(dims["W"])


def is_backward(chapter):
    return "backward" in chapter or "bwd" in chapter


def copy_floor_ms(shape, ceiling_gbs, tensors=2):
    """The time a perfect kernel needs: move each tensor of the shape once at the copy ceiling. A
    forward pass reads x and writes out (2); a backward pass reads x and dout and writes dx (3)."""
    parsed = parse_shape(shape)
    if not parsed or not ceiling_gbs:
        return None
    elements, size = parsed
    return float(tensors) * elements * size / (ceiling_gbs * 1e9) * 1e3


def _serial_stand_in(p, own_all, info):
    """A variant of the same chapter whose device records do not overlap and that runs every kernel
    of the headline variant (one named "serial" first): (its name, its profile), or None."""
    names = [v for v in dict.fromkeys(r.variant for r in own_all) if v != p.variant]
    names.sort(key=lambda v: v != "serial")
    for v in names:
        rows = [r for r in own_all if r.variant == v]
        if not any(r.kind == "trace" for r in rows):
            continue
        q = ChapterProfile(p.chapter, p.label, v, "", 1.0, {}, {})
        try:
            _builtin_profile(q, rows, info)
        except FormatError:
            continue
        if not q.overlapping and q.kernels and set(p.kernels) <= set(q.kernels):
            return v, q
    return None


def chapter_profiles(view):
    """One ChapterProfile per chapter with data, in chapter order."""
    chapters = sorted({r.chapter for r in view.rows if r.source == view.source} |
                      {s.chapter for s in view.summaries})
    out = []
    for ch in chapters:
        head = _headline(view.summaries, ch)
        variant = head.variant if head else ""
        own_all = [r for r in view.rows if r.source == "builtin" and r.chapter == ch]
        own = own_all
        variants = sorted({r.variant for r in own})
        if variant in variants:
            own = [r for r in own if r.variant == variant]
        elif variants and len(variants) > 1:
            own = [r for r in own if r.variant == variants[0]]  # no summary: the first variant's files
        p = ChapterProfile(ch, chapter_label(ch), variant, "", 1.0, {}, {})
        if view.source == "builtin":
            if own:
                _builtin_profile(p, own, view.info)
                if p.overlapping:
                    stand_in = _serial_stand_in(p, own_all, view.info)
                    if stand_in:
                        v, q = stand_in
                        p.kernel_variant, p.overlapping = v, False
                        p.categories, p.kernels, p.kernel_calls, p.host_steps = \
                            q.categories, q.kernels, q.kernel_calls, q.host_steps
        else:
            ext = [r for r in view.rows if r.source == view.source and r.chapter == ch]
            if ext:
                _external_profile(p, ext, own, view.info)
        if head:
            p.e2e_ms = head.e2e_ms
        used = p.kernel_variant or variant
        used_head = next((s for s in view.summaries if s.chapter == ch and s.variant == used), head)
        if view.source == "builtin" and used_head:
            p.device_ms = used_head.kernels_ms
        elif p.categories.get("kernel") is not None and p.kernels:
            p.device_ms = p.categories["kernel"]
        _set_mains(p, [k for k in view.kernels if k.chapter == ch], used)
        if p.categories or p.e2e_ms is not None:
            out.append(p)
    if not out:
        raise FormatError(f"{view.run}: no chapter has {view.source} data to chart")
    return out


# Variant names that say the layout (chapter 08: cf_chunked, cl_tiled, ...).
LAYOUT_PREFIXES = ("cf_", "cl_")


def _layout(variant):
    return next((x for x in LAYOUT_PREFIXES if variant.startswith(x)), "")


def headline_kernels(kernels, variant):
    """A chapter's main kernels among its kernel summary rows of one run and shape (file order): the
    first kernel of `variant`; where the variants are named by layout (cf_*, cl_*), also the first
    kernel of the first variant of each other layout (its headline in that layout)."""
    first = next((k for k in kernels if k.variant == variant), None)
    if first is None:
        return []
    out = [first]
    if _layout(variant):
        for k in kernels:
            if _layout(k.variant) and all(_layout(k.variant) != _layout(m.variant) for m in out):
                out.append(k)
    return out


def _set_mains(p, kernels, variant):
    mains = headline_kernels(kernels, variant)
    if mains:
        p.main, p.mains = mains[0], mains
        p.ceiling_gbs = mains[0].copy_ceiling_gbs
        p.floor_tensors = 3 if is_backward(p.chapter) else 2
        p.floor_ms = copy_floor_ms(mains[0].shape, p.ceiling_gbs, p.floor_tensors)


def shape_dims(shape):
    """What makes two shapes comparable whatever their dtype: (B, D, L, W) and any other words
    (bias, silu), or None when the shape does not say B, D and L."""
    words = (shape or "").split()
    dims = dict(re.findall(r"\b([BDLW])=(\d+)", shape or ""))
    if not {"B", "D", "L"} <= set(dims):
        return None
    rest = tuple(sorted(w for w in words if not re.match(r"^[BDLW]=\d+$", w) and w not in DTYPE_BYTES))
    return tuple(int(dims.get(k, 0)) for k in "BDLW") + rest


def dims_label(shape):
    """A shape without its dtype: 'B=8 D=4096 L=4096 W=4'."""
    return " ".join(w for w in (shape or "").split() if w not in DTYPE_BYTES)


def borrowed_profiles(view, profiles):
    """Chapters the charted run does not hold but other loaded result files of the same device do
    (a benchmark's summary and kernel tables): one ChapterProfile each, from one file at one shape,
    the charted run's B, D, L and W when a file has them (comparable=True), else the first shape of
    the first file that lists the chapter's kernels. Only summary figures: no categories, no kernels
    per run. The charts say where each comes from."""
    have = {p.chapter for p in profiles}
    run_dims = {shape_dims(s.shape) for s in view.summaries}
    run_dims = run_dims.pop() if len(run_dims) == 1 else None
    summaries = [s for s in view.all_summaries if s.chapter not in have and s.device == view.device]
    kernels = [k for k in view.all_kernels if k.chapter not in have]
    out = []
    for ch in sorted({s.chapter for s in summaries} | {k.chapter for k in kernels}):
        ks = [k for k in kernels if k.chapter == ch]
        ss = [s for s in summaries if s.chapter == ch]
        same = [s for s in ss if run_dims and shape_dims(s.shape) == run_dims]
        head = same[0] if same else None
        if head is None and ks:
            first = ks[0]
            head = next((s for s in ss if s.shape == first.shape and _stem(s.file) == _stem(first.file)), None)
        elif head is None and ss:
            head = ss[0]
        if head is None:
            continue
        p = ChapterProfile(ch, chapter_label(ch), head.variant, "timed runs", 1.0, {}, {})
        p.e2e_ms, p.device_ms = head.e2e_ms, head.kernels_ms
        p.borrowed = head.file.rsplit("/", 1)[-1] or "a summary"
        p.comparable = bool(same)
        # Its kernels: the same file's kernel table (the same stem), the same shape, the first run.
        _set_mains(p, [k for k in ks if _stem(k.file) == _stem(head.file) and k.shape == head.shape], head.variant)
        out.append(p)
    return out


def _stem(file):
    """A summary file and its kernel table share a stem: bench_08.tsv, bench_08_kernels.tsv."""
    name = (file or "").rsplit("/", 1)[-1]
    for suffix in ("_kernels.tsv", ".tsv"):
        if name.endswith(suffix):
            return name[:-len(suffix)]
    return name


def measured_shapes(view, chapter):
    """The shapes (without dtype) at which the loaded summaries of this device measured a chapter, in
    file order, with the files: ([shape], [file name])."""
    rows = [s for s in view.all_summaries if s.chapter == chapter and s.device == view.device]
    return (list(dict.fromkeys(" ".join(w for w in s.shape.split() if re.match(r"^[BDLW]=\d+$", w)) for s in rows)),
            list(dict.fromkeys(s.file.rsplit("/", 1)[-1] for s in rows)))


# ---- the numbers behind each chart -----------------------------------------------------------

def category_bars(profiles):
    """(labels, ms per run by category, share in % by category); missing categories count 0."""
    labels = [p.label for p in profiles if p.categories]
    ms = {c: [] for c in CATEGORIES}
    share = {c: [] for c in CATEGORIES}
    for p in profiles:
        if not p.categories:
            continue
        total = sum(v for v in p.categories.values() if v)
        for c in CATEGORIES:
            v = p.categories.get(c) or 0.0
            ms[c].append(v)
            share[c].append(100.0 * v / total if total else 0.0)
    return labels, ms, share


def top_kernels(profiles, n=5):
    """[(chapter label, kernel, ms per run)] — each chapter's n slowest kernels, slowest first."""
    out = []
    for p in profiles:
        ranked = sorted(p.kernels.items(), key=lambda kv: (-kv[1], kv[0]))[:n]
        out += [(p.label, k, v) for k, v in ranked]
    return out


DTYPES = ("fp32", "fp16", "bf16")


def shape_label(shapes):
    """One label for the shapes of a run's chapters: the shape itself when they agree, the shape and
    the dtypes when only the dtype differs (chapters run the dtypes they support), else a note."""
    shapes = sorted(set(shapes))
    if not shapes:
        return "shape not recorded"
    if len(shapes) == 1:
        return shapes[0]
    strip = {" ".join(t for t in s.split() if t not in DTYPES) for s in shapes}
    if len(strip) == 1:
        dtypes = sorted({t for s in shapes for t in s.split() if t in DTYPES})
        return f"{strip.pop()}, {' or '.join(dtypes)} (each chapter's own)"
    return "each chapter's default shape"


def ladder(profiles):
    """Labels, end-to-end ms, device ms, copy floor ms and speed-up over the first chapter."""
    ps = [p for p in profiles if p.e2e_ms is not None or p.device_ms is not None]
    base = next((p.e2e_ms for p in ps if p.e2e_ms), None)
    # The backward chapter computes something else: a speed-up over the first (forward) chapter
    # would compare different work, so it has none.
    speedup = [(base / p.e2e_ms) if base and p.e2e_ms and "backward" not in p.label else None for p in ps]
    return ([p.label for p in ps], [p.e2e_ms for p in ps], [p.device_ms for p in ps],
            [p.floor_ms for p in ps], speedup)


def device_speedups(profiles):
    """Device-time speed-up over the first chapter with a device time, in ladder() order; none for a
    backward chapter (different work)."""
    ps = [p for p in profiles if p.e2e_ms is not None or p.device_ms is not None]
    base = next((p.device_ms for p in ps if p.device_ms), None)
    return [(base / p.device_ms) if base and p.device_ms and not is_backward(p.chapter) else None for p in ps]


def host_step_outliers(profiles, factor=1.5, least_share=0.1):
    """Chapters whose host steps shared with other chapters (the same step name, e.g. the host
    transposes) take at least `factor` times the fastest chapter's time for the same steps, and at
    least `least_share` of the chapter's run more: {label: (ratio, [slow steps])}. Such a slowdown
    belongs to the process, not to the chapter's change, and distorts end-to-end speed-ups."""
    have = [p for p in profiles if p.host_steps]
    count = collections.Counter(n for p in have for n in p.host_steps)
    shared = {n for n, k in count.items() if k >= 2}
    best = {n: min(p.host_steps[n] for p in have if n in p.host_steps) for n in shared}
    out = {}
    for p in have:
        mine = sorted(n for n in shared if n in p.host_steps)
        total, base = sum(p.host_steps[n] for n in mine), sum(best[n] for n in mine)
        run = p.e2e_ms or sum(v for v in p.categories.values() if v)
        if base > 0 and total >= factor * base and run and total - base >= least_share * run:
            slow = sorted((n for n in mine if p.host_steps[n] >= factor * best[n]), key=lambda n: -p.host_steps[n])
            out[p.label] = (total / base, slow)
    return out


def timeline_chapter(profiles, wanted=None):
    """The chapter whose timeline is drawn: the one asked for, else the one using the most streams
    (chapter 07's overlap), ties going to the later chapter."""
    with_tl = [p for p in profiles if p.timeline]
    if wanted:
        for p in with_tl:
            if p.chapter == wanted or p.chapter.startswith(wanted) or p.label.startswith(wanted):
                return p
        raise FormatError(f"--timeline-chapter {wanted}: no such chapter with trace records "
                          f"(have: {', '.join(p.chapter for p in with_tl) or 'none'})")
    if not with_tl:
        return None
    def streams(p):
        return len({lane for lane, *_ in p.timeline if lane and lane.startswith("stream")})
    return max(with_tl, key=lambda p: (streams(p), p.chapter))


class RoofPoint(tuple):
    """(label, kernel, flop per byte, attained TFLOP/s), carrying the profile and the kernel summary
    row it comes from (.profile, .summary)."""
    def __new__(cls, label, kernel, intensity, attained, profile=None, summary=None):
        t = super().__new__(cls, (label, kernel, intensity, attained))
        t.profile, t.summary = profile, summary
        return t


def roofline_points(profiles):
    """[RoofPoint] of each chapter's main kernels (one per layout where a chapter's variants are named
    by layout). With an external source, its time for a kernel replaces the chapter's own when the
    names match."""
    out = []
    for p in profiles:
        for m in getattr(p, "mains", None) or ([p.main] if p.main else []):
            if m.gbs <= 0 or m.tflops <= 0:
                continue
            intensity = m.tflops * 1e12 / (m.gbs * 1e9)
            attained = m.tflops
            ext_ms = p.kernels.get(m.kernel) if p.basis == "timed runs" and m is p.main else None
            if ext_ms and m.ms > 0:
                attained = m.tflops * m.ms / ext_ms
            out.append(RoofPoint(p.label, m.kernel, intensity, attained, p, m))
    return out


def flop_multiple(m):
    """How many times the convolution's own 2·B·D·L·W flops a kernel's model counts (its TFLOP/s
    times its time over the shape's convolution flops), or None when the shape does not say."""
    conv = conv_flops(m.shape)
    if not conv or m.ms <= 0:
        return None
    return m.tflops * 1e12 * m.ms * 1e-3 / conv


def compute_roofs(view, profiles):
    """[Roof] for the roofline, lowest first: per dtype, the fastest library GEMM the loaded result
    files measured on this device (any run: a benchmark at a larger shape counts); where none was
    measured, the datasheet figure of a known device for the dtypes the points use."""
    point_dtypes = {shape_dtype(m.shape) for p in profiles for m in (getattr(p, "mains", None) or [p.main]) if m}
    roofs = []
    for dtype in ROOF_DTYPES:
        measured = [k for k in view.all_kernels + view.kernels
                    if LIBRARY_GEMM.search(k.kernel) and shape_dtype(k.shape) == dtype and k.tflops > 0]
        if measured:
            best = max(measured, key=lambda k: k.tflops)
            where = best.file.rsplit("/", 1)[-1] if best.file else "summary"
            shape = " ".join(t for t in best.shape.split() if t not in DTYPES)
            roofs.append(Roof(dtype, best.tflops, f"{dtype}: {best.kernel}, {best.tflops:,.1f} TFLOP/s\n"
                              f"({where}, {shape})", True, best.file))
            continue
        sheet = dict((d, (v, what)) for d, v, what in DATASHEET_PEAKS.get(view.device, ()))
        if dtype in sheet and dtype in point_dtypes:
            v, what = sheet[dtype]
            roofs.append(Roof(dtype, v, f"{what}: {v:,.0f} TFLOP/s\n({DATASHEET_NAMES[view.device]}, not measured here)",
                              False))
    return sorted(roofs, key=lambda r: r.tflops)


def bandwidth_ceiling(profiles):
    values = [p.ceiling_gbs for p in profiles if p.ceiling_gbs]
    return statistics.median(values) if values else None


# ---- the stage timeline --------------------------------------------------------------------------

@dataclasses.dataclass
class StageTimeline:
    chapter: str
    label: str
    file: str
    panels: list       # [(variant, [(lane, start ms, duration ms, category, name, chunk)])]
    device: str
    shape: str
    date: str
    matched: str       # how device and shape were found (the file records neither)


def _span_ms(stages):
    return (max(s.end_us for s in stages) - min(s.start_us for s in stages)) / 1e3


def _match_shape(stages, variants, summaries, tolerance=1.25):
    """The (summary file, shape, device, [(variant, e2e ms, span ms)]) whose rows of the same chapter
    give every variant of the timeline an end-to-end time within `tolerance` of its span, the closest
    first; None when no such rows exist or the matches disagree about the shape."""
    spans = {v: _span_ms([s for s in stages if s.variant == v]) for v in variants}
    groups = collections.defaultdict(dict)
    for x in summaries:
        if x.chapter == stages[0].chapter and x.variant in spans and x.e2e_ms > 0:
            groups[(x.file, x.shape, x.device)].setdefault(x.variant, x.e2e_ms)  # a file's first row
    scored = []
    for key, rows in groups.items():
        if set(rows) != set(spans) or any(spans[v] <= 0 for v in spans):
            continue
        errors = [abs(math.log(rows[v] / spans[v])) for v in variants]
        if max(errors) <= math.log(tolerance):
            scored.append((sum(errors), key, [(v, rows[v], spans[v]) for v in variants]))
    if not scored or len({key[1] for _, key, _ in scored}) > 1:
        return None
    _, (file, shape, device), rows = min(scored, key=lambda t: t[0])
    return file, shape, device, rows


def stage_timeline(view, profiles, wanted=None):
    """The stage timeline to draw (a chapter's --timeline file among the loaded ones), or None. The
    file records neither the shape nor the device: they are taken from the summary rows of the same
    chapter whose end-to-end times match the spans of all the timeline's variants (within 25 %)."""
    stages = view.stages
    if wanted:
        stages = [s for s in stages if s.chapter == wanted or s.chapter.startswith(wanted) or
                  chapter_label(s.chapter).startswith(wanted)]
    if not stages:
        return None
    file = stages[0].file
    mine = [s for s in stages if s.file == file]
    variants = list(dict.fromkeys(s.variant for s in mine))
    match = _match_shape(mine, variants, view.all_summaries)
    if match:
        sfile, shape, device, rows = match
        matched = (f"shape and device from {sfile.rsplit('/', 1)[-1] or 'a summary'} (the timeline file records "
                   "neither): its rows' end-to-end times match the spans of this run, " +
                   ", ".join(f"{v} {e2e:.2f} ms against {span:.2f} ms" for v, e2e, span in rows))
    else:
        device, shape = "device not recorded", "shape not recorded"
        matched = "the timeline file records no shape, and no summary row matches its spans"
    run = mine[0].run
    date = view.date if run == view.run else view.run_dates.get(run, "date not recorded")
    panels = []
    for v in variants:
        ss = [s for s in mine if s.variant == v]
        t0 = min(s.start_us for s in ss)
        panels.append((v, [(f"stream {s.stream}", (s.start_us - t0) / 1e3, (s.end_us - s.start_us) / 1e3,
                            s.category, s.stage, s.chunk) for s in ss]))
    return StageTimeline(mine[0].chapter, chapter_label(mine[0].chapter), file, panels, device, shape, date, matched)


def _enqueued_spans(own_kernels, windows, ext):
    """For each of the chapter's kernel records: the span (first start to last end) of the GPU work
    that the runtime calls inside its NVTX range enqueued, matched through correlation ids. A record
    may stand for one kernel or for a whole graph of copies and kernels; its events time the span
    either way. Returns the total span in ns, or None when some record finds no range or no work."""
    markers = sorted((r for r in ext if r.category == "marker" and r.kind == "trace"), key=lambda r: r.start_ns)
    api = sorted((r for r in ext if _family(r.category) == "api" and r.kind == "trace"), key=lambda r: r.start_ns)
    work = collections.defaultdict(list)
    for r in ext:
        if r.kind == "trace" and _family(r.category) in ("kernel", "copy") and r.metrics.get("correlation"):
            work[r.metrics["correlation"]].append(r)
    if not markers or not api or not work:
        return None
    api_starts = [a.start_ns for a in api]
    runtime_ids = {a.metrics.get("correlation") for a in api}
    # Kernels launched through the driver API (libraries such as cuBLAS do) carry no runtime call's
    # correlation id: they are found by when they start instead.
    driver_kernels = sorted((r for r in ext if r.category == "kernel" and r.kind == "trace"
                             and r.metrics.get("correlation") not in runtime_ids), key=lambda r: r.start_ns)
    driver_starts = [k.start_ns for k in driver_kernels]
    ranges_in = _in_windows(markers, windows)
    total = 0.0
    for it, (w0, w1) in windows.items():
        free = collections.defaultdict(list)  # name -> the window's ranges of that name, in order
        for m in ranges_in.get(it, []):
            free[m.name].append(m)
        mine = [r for r in own_kernels if r.iteration == it]
        matched = []
        for rec in mine:
            if not free[rec.name]:
                return None
            matched.append(free[rec.name].pop(0))
        for k, m in enumerate(matched):
            lo, hi = bisect.bisect_left(api_starts, m.start_ns), bisect.bisect_right(api_starts, m.end_ns)
            acts = [w for a in api[lo:hi] for w in work.get(a.metrics.get("correlation"), [])]
            # Plus the driver-launched kernels that start between this record's range and the next's
            # (a cuBLAS call may enqueue a memset through the runtime and its GEMM through the driver).
            until = matched[k + 1].start_ns if k + 1 < len(matched) else w1
            acts += driver_kernels[bisect.bisect_left(driver_starts, m.start_ns):bisect.bisect_left(driver_starts, until)]
            if not acts:
                return None
            total += max(a.end_ns for a in acts) - min(a.start_ns for a in acts)
    return total


Agreement = collections.namedtuple("Agreement", "chapter variant runs events_ms measured_ms how records")


def kernel_agreement(ds, source):
    """Per chapter and variant: the chapter's own kernel time (device events) against `source`'s in
    the same timed runs, in ms per run: [Agreement(chapter, variant, runs, events_ms, measured_ms, how,
    records)]. `how` says what the source's figure is: the span of the work each kernel record
    enqueued (through the NVTX ranges and correlation ids), or, without ranges, the sum of its kernels
    in the timed runs. `records`: the chapter's kernel records per run (each event pair costs a little
    device time of its own, so a difference is best read per record)."""
    out = []
    own = [r for r in ds.rows if r.source == "builtin" and r.kind == "trace"]
    ext_all = [r for r in ds.rows if r.source == source and r.kind == "trace"]
    for key in sorted({(r.run, r.chapter, r.variant) for r in own}):
        trace = [r for r in own if (r.run, r.chapter, r.variant) == key]
        windows = timed_windows(trace)
        own_kernels = [r for r in trace if r.category == "kernel" and r.iteration in windows]
        events = sum(r.total_ns for r in own_kernels)
        ext = [r for r in ext_all if (r.run, r.chapter) == key[:2]]
        measured = _enqueued_spans(own_kernels, windows, ext)
        how = "work enqueued by each kernel record"
        if measured is None:
            inside = _in_windows([r for r in _chapter_work(ext) if r.category == "kernel"], windows)
            measured = sum(r.total_ns for rs in inside.values() for r in rs)
            how = "kernels in the timed runs"
        n = max(len(windows), 1)
        out.append(Agreement(key[1], key[2], len(windows), events / n / 1e6, measured / n / 1e6, how,
                             len(own_kernels) / n))
    return out


# ---- every run of every variant: bytes, flops, time, copy floor --------------------------------

VARIANT_RUN_COLUMNS = ("file", "chapter", "name", "variant", "shape", "kernels", "moved_mb", "required_mb",
                       "moved_over_required", "gflop", "conv_gflop", "flop_multiple", "flop_per_byte",
                       "end_to_end_ms", "device_ms", "copy_ceiling_gbs", "floor_ms", "moved_floor_ms",
                       "ceiling_pct", "device")


def _run_blocks(kernels):
    """A kernel table's rows grouped by run: consecutive rows of one chapter, variant, shape and copy
    ceiling, a new run starting where a kernel name comes again."""
    blocks = []
    for k in kernels:
        b = blocks[-1] if blocks else None
        key = (k.file, k.chapter, k.variant, k.shape, k.copy_ceiling_gbs)
        if b is None or b[0] != key or any(x.kernel == k.kernel for x in b[1]):
            blocks.append((key, [k]))
        else:
            b[1].append(k)
    return blocks


def variant_runs(summaries, kernels, base=None):
    """One row per summary row (one run of one variant) of every loaded summary table: the bytes its
    kernels move by their napkin counts (GB/s × ms, summed; "whole ..." rows, which sum other rows,
    left out), their flops, the bytes and time a perfect kernel needs (x and out once, or x, dout and
    dx for a backward; at the copy ceiling measured in the same run), the time all of its kernels' bytes
    take at that ceiling, and the share of the ceiling the run's device time reaches (floor / device
    time). A summary row's kernels are the k-th run of the same chapter, variant and shape in the
    kernel table beside it (FILE_kernels.tsv). `file` is relative to `base` when under it. Values that
    the files do not give are left empty."""
    import pathlib
    blocks = collections.defaultdict(list)
    for (file, chapter, variant, shape, _), ks in _run_blocks(kernels):
        blocks[(_stem_path(file), chapter, variant, shape)].append(ks)
    seen = collections.Counter()
    out = []
    for s in summaries:
        key = (_stem_path(s.file), s.chapter, s.variant, s.shape)
        k = seen[key]
        seen[key] += 1
        ks = [x for x in (blocks[key][k] if k < len(blocks[key]) else []) if not x.kernel.startswith("whole ")]
        file = s.file
        if base is not None:
            try:
                file = pathlib.Path(s.file).resolve().relative_to(pathlib.Path(base).resolve()).as_posix()
            except ValueError:
                file = pathlib.Path(s.file).name
        number, _, name = s.chapter[2:].partition("_")
        row = dict.fromkeys(VARIANT_RUN_COLUMNS, "")
        row.update(file=file, chapter=number, name=name, variant=s.variant, shape=s.shape, device=s.device,
                   end_to_end_ms=f"{s.e2e_ms:.4f}", device_ms=f"{s.kernels_ms:.4f}")
        parsed = parse_shape(s.shape)
        conv = conv_flops(s.shape)
        required = (3 if is_backward(s.chapter) else 2) * parsed[0] * parsed[1] / 1e6 if parsed else None
        if required:
            row["required_mb"] = f"{required:.1f}"
        if conv:
            row["conv_gflop"] = f"{conv / 1e9:.3f}"
        if ks:
            moved = sum(x.gbs * x.ms for x in ks)          # GB/s × ms = MB
            gflop = sum(x.tflops * x.ms for x in ks)       # TFLOP/s × ms = GFLOP
            ceiling = ks[0].copy_ceiling_gbs
            row.update(kernels="+".join(x.kernel for x in ks), moved_mb=f"{moved:.1f}", gflop=f"{gflop:.3f}",
                       copy_ceiling_gbs=f"{ceiling:.1f}", moved_floor_ms=f"{moved / ceiling:.4f}")
            if moved > 0:
                row["flop_per_byte"] = f"{gflop * 1e3 / moved:.2f}"
            if required:
                row["moved_over_required"] = f"{moved / required:.2f}"
                floor = required / ceiling
                row["floor_ms"] = f"{floor:.4f}"
                if s.kernels_ms > 0:
                    row["ceiling_pct"] = f"{100 * floor / s.kernels_ms:.1f}"
            if conv:
                row["flop_multiple"] = f"{gflop * 1e9 / conv:.4g}"
        out.append(row)
    return out


def _stem_path(file):
    """The path of a summary table and of its kernel table without the suffixes they differ by."""
    file = file or ""
    for suffix in ("_kernels.tsv", ".tsv"):
        if file.endswith(suffix):
            return file[:-len(suffix)]
    return file


def write_variant_runs(rows, path):
    with open(path, "w") as f:
        f.write("\t".join(VARIANT_RUN_COLUMNS) + "\n")
        for r in rows:
            f.write("\t".join(str(r[c]) for c in VARIANT_RUN_COLUMNS) + "\n")
    return path
