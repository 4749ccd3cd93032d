"""The one table every parser produces, and the naming rules shared by the parsers.

A Row is either a statistic (kind "stats": a name with its call count and total/avg/min/max time)
or one traced event (kind "trace": calls 1, start/end timestamps and a stream or lane). Times are in
nanoseconds. Categories are the chapters' own (host, alloc, h2d, kernel, d2h, free) where a
profiler's record maps onto one, and otherwise d2d, copy, memset, api, marker or domain.
"""
import csv
import dataclasses
import re
from typing import Optional

# The categories a chapter's time is split into (common/phases.h), in chart order.
CATEGORIES = ("alloc", "h2d", "host", "kernel", "d2h", "free")
OTHER_CATEGORIES = ("d2d", "copy", "memset", "api", "marker", "domain")


class FormatError(Exception):
    """Input that is not what its name or header promises. The message names the file and what was
    expected; nothing is ever skipped silently."""


@dataclasses.dataclass
class Row:
    source: str          # builtin, cupti, rocprofv3, rocprof, nsys, ncu
    run: str             # the run folder (or file) the row came from
    chapter: str         # ch01_host_img2col, or "" when the files do not say
    category: str        # one of CATEGORIES or OTHER_CATEGORIES
    name: str
    calls: int
    total_ns: float
    avg_ns: float
    min_ns: float
    max_ns: float
    start_ns: Optional[int] = None   # traces only
    end_ns: Optional[int] = None
    stream: Optional[str] = None     # "stream 7", "queue 1", "host"
    kind: str = "stats"              # stats or trace
    variant: str = ""                # a chapter's variant (builtin files), when known
    iteration: Optional[int] = None  # builtin traces: 0 verification, 1..N timed, N+1 verification
    thread: Optional[str] = None
    file: str = ""
    metrics: dict = dataclasses.field(default_factory=dict)  # ncu metrics, agent ids, ...


FIELDS = [f.name for f in dataclasses.fields(Row)]


def stat_row(ctx, category, name, calls, total, avg=None, lo=None, hi=None, **extra):
    """A statistics row; a missing average, minimum or maximum is derived from what is known."""
    calls = int(calls)
    if avg is None:
        avg = total / calls if calls else 0.0
    return Row(source=ctx.source, run=ctx.run, chapter=ctx.chapter, variant=ctx.variant, file=ctx.file,
               category=category, name=name, calls=calls, total_ns=float(total), avg_ns=float(avg),
               min_ns=float(avg if lo is None else lo), max_ns=float(avg if hi is None else hi), **extra)


def trace_row(ctx, category, name, start, end, stream=None, **extra):
    d = float(end - start)
    return Row(source=ctx.source, run=ctx.run, chapter=ctx.chapter, variant=ctx.variant, file=ctx.file,
               category=category, name=name, calls=1, total_ns=d, avg_ns=d, min_ns=d, max_ns=d,
               start_ns=int(start), end_ns=int(end), stream=stream, kind="trace", **extra)


@dataclasses.dataclass
class Context:
    """Where a file's rows belong: filled in by the loader, used by every parser."""
    source: str
    run: str = ""
    chapter: str = ""
    variant: str = ""
    file: str = ""


_API_VERSION = re.compile(r"_v\d+$")


def strip_api_version(name):
    """cudaMemcpy_v3020 -> cudaMemcpy (CUPTI callback names carry the API version)."""
    return _API_VERSION.sub("", name)


def api_category(name):
    """Allocation and release calls of the CUDA/HIP runtime are the chapters' alloc and free; every
    other runtime call is 'api'."""
    base = strip_api_version(name)
    low = base.lower()
    if re.match(r"^(cuda|hip|cu)(free|hostfree|memfree)", low):
        return "free"
    if re.match(r"^(cuda|hip|cu)(malloc|hostalloc|hostmalloc|memalloc|extmalloc)", low):
        return "alloc"
    return "api"


def copy_direction(name):
    """The category of a memory operation named by any profiler: h2d, d2h, d2d, memset or copy."""
    key = re.sub(r"[^A-Z0-9]", "", name.upper())
    if "MEMSET" in key:
        return "memset"
    for pattern, cat in (("HOSTTODEVICE", "h2d"), ("HTOD", "h2d"), ("H2D", "h2d"),
                         ("DEVICETOHOST", "d2h"), ("DTOH", "d2h"), ("D2H", "d2h"),
                         ("DEVICETODEVICE", "d2d"), ("DTOD", "d2d"), ("D2D", "d2d"),
                         ("PEERTOPEER", "d2d"), ("PTOP", "d2d")):
        if pattern in key:
            return cat
    return "copy"


def short_kernel_name(name):
    """The function name inside a demangled kernel signature, for labels and for matching a
    profiler's kernel against the chapter's own phase name:
    'void conv1d::ch01::naive_gemm<float>(float const*, ...)' -> 'naive_gemm'."""
    s = name.strip()
    if s.startswith("[") and s.endswith("]"):  # a profiler's own label, such as "[CUDA memset]"
        return s
    s = s.replace("(anonymous namespace)", "{anonymous}")  # a scope, not a parameter list
    depth, cut = 0, len(s)
    for i, c in enumerate(s):  # drop the parameter list: the first '(' outside template brackets
        if c == "<":
            depth += 1
        elif c == ">":
            depth -= 1
        elif c == "(" and depth == 0:
            cut = i
            break
    s = s[:cut]
    depth, out = 0, []
    for c in s:  # drop template arguments
        if c == "<":
            depth += 1
        elif c == ">":
            depth -= 1
        elif depth == 0:
            out.append(c)
    s = "".join(out).strip()
    s = s.split(" ")[-1] if " " in s else s  # return type
    return s.split("::")[-1] or name


def write_csv(rows, fh):
    """The normalised table as CSV (metrics as key=value pairs)."""
    w = csv.writer(fh, lineterminator="\n")
    w.writerow(FIELDS)
    for r in rows:
        values = []
        for f in FIELDS:
            v = getattr(r, f)
            if f == "metrics":
                v = ";".join(f"{k}={val:.6g}" if isinstance(val, float) else f"{k}={val}" for k, val in sorted(v.items()))
            elif isinstance(v, float):
                v = f"{v:.6g}" if abs(v) < 1e15 else f"{v:.0f}"
            values.append("" if v is None else v)
        w.writerow(values)
