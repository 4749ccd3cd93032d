"""One parser per file format, and `detect`, which picks the parser from a file's header (and, where
the header alone cannot tell, from its name). Every parser maps columns by name; the formats
themselves, version by version, are summarised in docs/background.md (section "Profiler file
formats"), and docs/profiling.md shows how each file is produced.
"""
import dataclasses
import re

from profiling.book import is_book_header
from profiling.csvread import find_table, read_text, split_lines
from profiling.table import (FormatError, api_category, copy_direction, stat_row, strip_api_version,
                             trace_row)

TS = ("Start_Timestamp",), ("End_Timestamp",)

# ---- what a file is ---------------------------------------------------------------------------

# rocprofv3 --stats files (our CUPTI tracer writes the same, with cuda_api for hip_api), by the end of
# the file name: what their Name column names.
ROCPROF_STATS = (
    ("_kernel_stats.csv", "kernel"),
    ("_hip_api_stats.csv", "api"),
    ("_hip_stats.csv", "api"),  # ROCm 6.2
    ("_cuda_api_stats.csv", "api"),
    ("_hsa_api_stats.csv", "api"),
    ("_memory_copy_stats.csv", "copy"),
    ("_marker_api_stats.csv", "marker"),
    ("_domain_stats.csv", "domain"),
)
# Legacy rocprof (v1): results.stats.csv and friends (the name is -o's, with a dotted suffix).
ROCPROF_V1_STATS = ((".hip_stats.csv", "api"), (".hsa_stats.csv", "api"), (".copy_stats.csv", "copy"),
                    (".stats.csv", "kernel"))
# rocprofv3 files that are understood but carry nothing the charts use.
ROCPROF_UNUSED = ("_agent_info.csv", "_counter_collection.csv", "_scratch_memory_trace.csv",
                  "_memory_allocation_trace.csv", "_hsa_api_trace.csv", "_rccl_api_trace.csv",
                  "_kernel_dispatch.csv", "_memory_allocation_stats.csv", "_scratch_memory_stats.csv")
# nsys stats report names, current first, then the names before 2023.
NSYS_REPORTS = (("cuda_gpu_kern_sum", "kernel"), ("cuda_api_sum", "api"), ("cuda_gpu_mem_time_sum", "copy"),
                ("nvtx_sum", "marker"), ("gpukernsum", "kernel"), ("cudaapisum", "api"),
                ("gpumemtimesum", "copy"), ("nvtxsum", "marker"), ("nvtx_pushpop_sum", "marker"))


# The project's own tables that are no profile and that the charts do not read, by the columns of
# their header line (each names what writes it): found while walking a results folder, they are
# known, not "ignored". Summaries, kernel summaries and stage timelines are read (below).
PROJECT_TSV = (
    (("variant", "host_memory", "streams", "chunks", "wall_ms", "stages_ms"),
     "chapter 07's pipeline table (FILE_pipeline.tsv beside its --summary FILE)"),
    (("chapter", "variant", "timed_runs", "events_ms"),
     "a kernel-time comparison (python -m profiling compare --tsv)"),
    (("chapter", "variant", "kernel", "kernel_ms_gate_on", "kernel_ms_gate_off"),
     "the stream gate on and off (scripts/gpu-check.d/50-profiling.sh)"),
    (("batch", "dim", "seqlen", "width", "elements", "layout", "threads", "forward_s"),
     "the fp64 reference's timing (conv1d_bench_reference --summary)"),
    (("kernel", "args", "launches"),
     "Nsight Compute medians per kernel (scripts/result_tables.py ncu)"),
    (("kernel", "args", "registers", "stack", "local"),
     "registers per kernel (scripts/result_tables.py resources)"),
    (("file", "chapter", "variant", "shape", "moved_mb", "required_mb", "device_ms", "floor_ms"),
     "the bytes, time and copy floor of every run (written by python -m profiling plot)"),
)
PROJECT_CSV = (
    (("source", "run", "chapter", "category", "name", "calls", "total_ns"),
     "the normalised table (python -m profiling parse --out)"),
)


def project_table(header, tables):
    """What writes a file with this header line, when it is one of the project's own side tables."""
    return next((what for columns, what in tables if set(columns) <= header), None)


@dataclasses.dataclass
class Detected:
    fmt: str            # builtin-stats, builtin-trace, rocprof-stats, rocprof-kernel-trace, ...
    what: str = ""      # for stats: kernel, api, copy, marker, domain
    source: str = ""    # builtin, rocprofv3, rocprof, nsys, ncu ("" = decided by the loader)


def _first_line_cells(text, path):
    for cells in split_lines(text[:20000], ",", path):
        if any(c.strip() for c in cells):
            return {c.strip() for c in cells}
    return set()


def _ends(name, table):
    for suffix, what in table:
        if name.endswith(suffix):
            return what
    return None


def detect(path, text):
    """What `path` holds, or None for a file that is no profile at all (logs, images)."""
    name = str(path).rsplit("/", 1)[-1].lower()
    if name == "run_info.json":
        return Detected("run-info")
    if not (name.endswith(".csv") or name.endswith(".tsv")):
        return None
    if name.endswith(".tsv"):
        head = set(text.split("\n", 1)[0].rstrip("\r").split("\t"))
        if is_book_header(head, name):  # first: it has a summary's chapter, variant and end_to_end_ms too
            return Detected("book")
        what = project_table(head, PROJECT_TSV)  # first: the table of variant runs has a summary's columns too
        if what:
            return Detected("unused", what)
        if {"chapter", "variant", "end_to_end_ms"} <= head:
            return Detected("summary")
        if {"chapter", "variant", "kernel", "ms", "tflops", "gbs"} <= head:
            return Detected("summary-kernels")
        if set(STAGE_TIMELINE_COLUMNS) <= head:
            return Detected("stage-timeline")
        return Detected("unknown")
    if any(name.endswith(s) for s in ROCPROF_UNUSED) and not name.endswith("_agent_info.csv"):
        return Detected("unused")
    first = _first_line_cells(text, path)
    what = project_table(first, PROJECT_CSV)
    if what:
        return Detected("unused", what)
    if {"Category", "Iteration", "Start_Timestamp"} <= first:
        return Detected("builtin-trace", source="builtin")
    if {"Name", "Calls", "TotalDurationNs"} <= first:
        if "Category" in first:
            return Detected("builtin-stats", source="builtin")
        what = _ends(name, ROCPROF_STATS)
        if what:
            return Detected("rocprof-stats", what)
        what = _ends(name, ROCPROF_V1_STATS)
        if what:
            return Detected("rocprof-stats", what, source="rocprof")
        raise FormatError(f"{path}: rocprof statistics, but the file name does not say of what (expected a "
                          f"name ending in {', '.join(s for s, _ in ROCPROF_STATS)}, or rocprof v1's "
                          f"results.stats.csv / .hip_stats.csv / .copy_stats.csv)")
    if {"Kernel_Name"} <= first and {"Start_Timestamp", "End_Timestamp"} <= first:
        return Detected("rocprof-kernel-trace")
    if {"Direction", "Start_Timestamp", "End_Timestamp"} <= first:
        return Detected("rocprof-copy-trace")
    if {"Function", "Start_Timestamp", "End_Timestamp"} <= first:
        return Detected("rocprof-marker-trace" if "marker" in name else "rocprof-api-trace")
    if "Agent_Type" in first:
        return Detected("rocprof-agent-info")
    # nsys and ncu print other lines before their header.
    head = text[:50000]
    report = next((what for key, what in NSYS_REPORTS if key in name), None)
    if re.search(r"^\"?Total Time", head, re.M) or re.search(r",\"?Total Time \(ns\)\"?,", head):
        if report is None:
            m = re.search(r"reports/(\w+)\.py", head)  # "Processing [...] with [.../reports/x.py]"
            report = next((what for key, what in NSYS_REPORTS if m and m.group(1) == key), None)
        return Detected("nsys", report or "", source="nsys")
    if report and "SKIPPED" in head:
        return Detected("nsys", report, source="nsys")
    if re.search(r"^\"ID\",.*\"Kernel Name\"", head, re.M):
        return Detected("ncu", source="ncu")
    # Named like a known file, but the header is wrong: say what the name promised.
    for suffix, columns in NAMED_COLUMNS:
        if name.endswith(suffix):
            raise FormatError(f"{path}: named like {columns[0]}, but its first line is not the expected header "
                              f"(expected columns {', '.join(columns[1:])}; found: {', '.join(sorted(first)) or 'nothing'})")
    if report:
        raise FormatError(f"{path}: named like an nsys {report} report, but no header line with "
                          f"'Total Time (ns)' was found")
    return Detected("unknown")


NAMED_COLUMNS = (
    ("_kernel_trace.csv", ("a rocprofv3 kernel trace", "Kernel_Name", "Start_Timestamp", "End_Timestamp")),
    ("_memory_copy_trace.csv", ("a rocprofv3 memory copy trace", "Direction", "Start_Timestamp", "End_Timestamp")),
    ("_api_trace.csv", ("a rocprofv3 API trace", "Function", "Start_Timestamp", "End_Timestamp")),
    *((s, ("rocprof statistics", "Name", "Calls", "TotalDurationNs")) for s, _ in ROCPROF_STATS + ROCPROF_V1_STATS),
    ("_trace.csv", ("the chapters' phase trace", "Category", "Name", "Iteration", "Stream_Id", "Start_Timestamp",
                    "End_Timestamp")),
    ("_stats.csv", ("the chapters' phase statistics", "Name", "Calls", "TotalDurationNs", "Category")),
)


# ---- the chapters' own files (common/phases.h) -----------------------------------------------

def parse_builtin_stats(path, text, ctx):
    t = find_table(path, text, [("Name",), ("Calls",), ("TotalDurationNs",), ("Category",)], what="phase stats")
    c = {k: t.column(k) for k in ("Name", "Calls", "TotalDurationNs", "Category")}
    avg, lo, hi = (t.column(k, required=False) for k in ("AverageNs", "MinNs", "MaxNs"))
    rows = []
    for line, cells in t.records():
        cat = t.text(cells, c["Category"])
        if cat not in ("host", "alloc", "h2d", "kernel", "d2h", "free"):
            raise FormatError(f"{path}:{line}: Category {cat!r}, expected host, alloc, h2d, kernel, d2h or free")
        rows.append(stat_row(ctx, cat, t.text(cells, c["Name"]), t.integer(cells, c["Calls"], line),
                             t.number(cells, c["TotalDurationNs"], line),
                             *(None if k is None else t.number(cells, k, line) for k in (avg, lo, hi))))
    return rows


def parse_builtin_trace(path, text, ctx):
    t = find_table(path, text, [("Category",), ("Name",), ("Iteration",), *TS], what="phase trace")
    c = {k: t.column(k) for k in ("Category", "Name", "Iteration", "Start_Timestamp", "End_Timestamp")}
    stream = t.column("Stream_Id", required=False)
    rows = []
    for line, cells in t.records():
        cat = t.text(cells, c["Category"])
        if cat not in ("host", "alloc", "h2d", "kernel", "d2h", "free"):
            raise FormatError(f"{path}:{line}: Category {cat!r}, expected host, alloc, h2d, kernel, d2h or free")
        start, end = t.integer(cells, c["Start_Timestamp"], line), t.integer(cells, c["End_Timestamp"], line)
        # Host steps run on the host thread; kernels and copies belong to their stream.
        lane = "host" if cat in ("host", "alloc", "free") else f"stream {t.integer(cells, stream, line, 0)}"
        rows.append(trace_row(ctx, cat, t.text(cells, c["Name"]), start, end, lane,
                              iteration=t.integer(cells, c["Iteration"], line)))
    return rows


# ---- rocprofv3 (and our CUPTI tracer), legacy rocprof ----------------------------------------

def _category(what, name):
    if what == "api":
        return api_category(name)
    if what == "copy":
        return copy_direction(name)
    return what


def parse_rocprof_stats(path, text, ctx, what):
    t = find_table(path, text, [("Name",), ("Calls",), ("TotalDurationNs",)], what="rocprof statistics")
    name, calls, total = t.column("Name"), t.column("Calls"), t.column("TotalDurationNs")
    avg, lo, hi = (t.column(k, required=False) for k in ("AverageNs", "MinNs", "MaxNs"))
    rows = []
    for line, cells in t.records():
        n = t.text(cells, name)
        if what == "api":
            n = strip_api_version(n)
        rows.append(stat_row(ctx, _category(what, n), n, t.integer(cells, calls, line), t.number(cells, total, line),
                             *(None if k is None else t.number(cells, k, line) for k in (avg, lo, hi))))
    return rows


def _agent(t, cells, col):
    """Agent ids are integers before ROCm 7 and strings like "Agent 1" after; kept as text."""
    return t.text(cells, col) if col is not None else ""


def _correlation(t, cells, col):
    """The id that ties a GPU activity to the API call that enqueued it (kept as text)."""
    return {"correlation": t.text(cells, col)} if col is not None else {}


def parse_rocprof_kernel_trace(path, text, ctx):
    t = find_table(path, text, [("Kernel_Name",), *TS], what="rocprofv3 kernel trace")
    name, start, end = t.column("Kernel_Name"), t.column("Start_Timestamp"), t.column("End_Timestamp")
    stream, queue = t.column("Stream_Id", required=False), t.column("Queue_Id", required=False)
    agent, corr = t.column("Agent_Id", required=False), t.column("Correlation_Id", required=False)
    rows = []
    for line, cells in t.records():
        if stream is not None:
            lane = f"stream {t.text(cells, stream)}"
        elif queue is not None:
            lane = f"queue {t.text(cells, queue)}"
        else:
            lane = "gpu"
        metrics = {"agent": _agent(t, cells, agent), **_correlation(t, cells, corr)}
        rows.append(trace_row(ctx, "kernel", t.text(cells, name), t.integer(cells, start, line),
                              t.integer(cells, end, line), lane, metrics=metrics))
    return rows


def parse_rocprof_copy_trace(path, text, ctx):
    t = find_table(path, text, [("Direction",), *TS], what="rocprofv3 memory copy trace")
    direction, start, end = t.column("Direction"), t.column("Start_Timestamp"), t.column("End_Timestamp")
    stream, corr = t.column("Stream_Id", required=False), t.column("Correlation_Id", required=False)
    rows = []
    for line, cells in t.records():
        d = t.text(cells, direction)
        lane = f"stream {t.text(cells, stream)}" if stream is not None else "copy engine"
        rows.append(trace_row(ctx, copy_direction(d), d, t.integer(cells, start, line), t.integer(cells, end, line),
                              lane, metrics=_correlation(t, cells, corr)))
    return rows


def parse_rocprof_api_trace(path, text, ctx, marker=False):
    t = find_table(path, text, [("Function",), *TS], what="rocprofv3 API trace")
    fn, start, end = t.column("Function"), t.column("Start_Timestamp"), t.column("End_Timestamp")
    thread, domain = t.column("Thread_Id", required=False), t.column("Domain", required=False)
    corr = t.column("Correlation_Id", required=False)
    rows = []
    for line, cells in t.records():
        n = t.text(cells, fn)
        if not marker:
            n = strip_api_version(n)
        tid = t.text(cells, thread) if thread is not None else ""
        rows.append(trace_row(ctx, "marker" if marker else api_category(n), n, t.integer(cells, start, line),
                              t.integer(cells, end, line), "markers" if marker else "runtime API",
                              thread=tid, metrics={"domain": t.text(cells, domain), **_correlation(t, cells, corr)}))
    return rows


def parse_agent_info(path, text):
    """Names of the GPU agents in a rocprofv3 _agent_info.csv (for the charts' device label)."""
    t = find_table(path, text, [("Agent_Type",)], what="rocprofv3 agent info")
    kind = t.column("Agent_Type")
    label = t.column("Marketing_Name", "Product_Name", "Name")
    return [t.text(cells, label) for _, cells in t.records() if t.text(cells, kind).upper() == "GPU"]


# ---- Nsight Systems ---------------------------------------------------------------------------

NSYS_COLS = {
    "total": ("Total Time (ns)", "Total Time"),
    "calls": ("Instances", "Num Calls", "Count", "Calls", "Operations"),
    "avg": ("Avg (ns)", "Average (ns)", "Average"),
    "min": ("Min (ns)", "Minimum (ns)", "Minimum"),
    "max": ("Max (ns)", "Maximum (ns)", "Maximum"),
    "name": ("Name", "Operation", "Range"),
}


def parse_nsys(path, text, ctx, what):
    if not what:
        raise FormatError(f"{path}: an nsys stats report, but neither its name nor its content says which "
                          f"(expected a name containing one of {', '.join(k for k, _ in NSYS_REPORTS)})")
    skipped = re.search(r"^SKIPPED: .*$", text, re.M)
    if skipped and not re.search(r"Total Time", text):
        # nsys writes this instead of a table when the run had nothing of that kind.
        return [], f"{path}: {skipped.group(0).strip()}"
    t = find_table(path, text, [NSYS_COLS["total"], NSYS_COLS["calls"], NSYS_COLS["name"]], what="nsys stats report")
    c = {k: t.column(*v, required=k in ("total", "calls", "name")) for k, v in NSYS_COLS.items()}
    rows = []
    for line, cells in t.records():
        n = t.text(cells, c["name"])
        if what == "api":
            n = strip_api_version(n)
        if what == "marker":
            n = n.lstrip(":")  # nvtx_sum writes default-domain ranges as ":name"
        rows.append(stat_row(ctx, _category(what, n), n, t.integer(cells, c["calls"], line),
                             t.number(cells, c["total"], line),
                             *(None if c[k] is None else t.number(cells, c[k], line) for k in ("avg", "min", "max"))))
    return rows, None


# ---- Nsight Compute (--csv --page raw) ----------------------------------------------------------

# ncu scales units (unless --print-units base): factors to nanoseconds and to bytes.
NCU_UNITS = {
    "ns": 1, "nsecond": 1, "us": 1e3, "usecond": 1e3, "ms": 1e6, "msecond": 1e6, "s": 1e9, "second": 1e9,
    "byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "Tbyte": 1e12,
    "KB": 1e3, "MB": 1e6, "GB": 1e9, "B": 1, "KiB": 1024, "MiB": 1024 ** 2, "GiB": 1024 ** 3,
}


def parse_ncu(path, text, ctx):
    # ==PROF== / ==WARNING== lines are blanked, not removed, so line numbers stay right.
    lines = ["" if ln.startswith("==") else ln for ln in text.splitlines()]
    t = find_table(path, "\n".join(lines), [("ID",), ("Kernel Name",)], what="ncu --csv --page raw")
    if t.has("Metric Name") and t.has("Metric Value"):
        raise FormatError(f"{path}: this is ncu's --page details layout (one metric per line); "
                          f"profiling/ reads `ncu --csv --page raw` (one kernel per line)")
    if not t.rows:
        raise FormatError(f"{path}: ncu header but no units row (expected one line of units under the header)")
    units_line, units = t.rows[0]
    if t.text(units, t.column("ID")) != "":
        raise FormatError(f"{path}:{units_line}: expected ncu's units row (empty ID cell) under the header")
    t.rows = t.rows[1:]
    kname, stream = t.column("Kernel Name"), t.column("Stream", required=False)
    metric_cols = [i for i, h in enumerate(t.header) if "__" in h]
    if not metric_cols:
        raise FormatError(f"{path}: no metric columns (expected names like gpu__time_duration.sum)")
    rows = []
    for line, cells in t.records():
        metrics = {}
        for i in metric_cols:
            raw = cells[i].strip()
            if raw in ("", "n/a"):
                continue
            unit = units[i].strip() if i < len(units) else ""
            if t.header[i].startswith(("device__attribute_", "launch__")):
                # Descriptive columns the raw page always carries: some hold words ("No-CC"),
                # which are kept out of the metrics rather than refused.
                try:
                    value = t.number(cells, i, line)
                except FormatError:
                    continue
            else:
                value = t.number(cells, i, line)
            if unit in NCU_UNITS:
                value *= NCU_UNITS[unit]
            metrics[t.header[i]] = value
        dur = metrics.get("gpu__time_duration.sum", 0.0)
        lane = f"stream {t.text(cells, stream)}" if stream is not None else None
        rows.append(stat_row(ctx, "kernel", t.text(cells, kname), 1, dur, stream=lane, metrics=metrics))
    return rows


# ---- the chapters' --summary tables (common/runner.h) -------------------------------------------

@dataclasses.dataclass
class Summary:
    chapter: str       # ch01_host_img2col
    variant: str
    e2e_ms: float
    kernels_ms: float
    verified: bool
    device: str
    shape: str
    run: str = ""
    file: str = ""


@dataclasses.dataclass
class KernelSummary:
    chapter: str
    variant: str
    kernel: str
    ms: float
    tflops: float
    gbs: float
    ceiling_pct: float
    copy_ceiling_gbs: float
    device: str
    shape: str
    run: str = ""
    file: str = ""


def _tsv(path, text, columns, what):
    t = find_table(path, text, [(c,) for c in columns], delimiter="\t", what=what)
    return t, {c: t.column(c) for c in columns}


def parse_summary(path, text, run):
    cols = ("chapter", "name", "variant", "end_to_end_ms", "kernels_ms", "verified", "device", "shape")
    t, c = _tsv(path, text, cols, "chapter summary")
    out = []
    for line, cells in t.records():
        out.append(Summary(f"ch{t.text(cells, c['chapter'])}_{t.text(cells, c['name'])}", t.text(cells, c["variant"]),
                           t.number(cells, c["end_to_end_ms"], line), t.number(cells, c["kernels_ms"], line),
                           t.text(cells, c["verified"]) == "yes", t.text(cells, c["device"]),
                           t.text(cells, c["shape"]), run, str(path)))
    return out


def parse_summary_kernels(path, text, run):
    cols = ("chapter", "name", "variant", "kernel", "ms", "tflops", "gbs", "ceiling_pct", "copy_ceiling_gbs",
            "device", "shape")
    t, c = _tsv(path, text, cols, "chapter kernel summary")
    out = []
    for line, cells in t.records():
        num = {k: t.number(cells, c[k], line) for k in ("ms", "tflops", "gbs", "ceiling_pct", "copy_ceiling_gbs")}
        out.append(KernelSummary(f"ch{t.text(cells, c['chapter'])}_{t.text(cells, c['name'])}",
                                 t.text(cells, c["variant"]), t.text(cells, c["kernel"]), device=t.text(cells, c["device"]),
                                 shape=t.text(cells, c["shape"]), run=run, file=str(path), **num))
    return out


# ---- a chapter's stage timeline (chapter 07's --timeline FILE) ----------------------------------

STAGE_TIMELINE_COLUMNS = ("variant", "stream", "chunk", "stage", "start_us", "end_us")


@dataclasses.dataclass
class Stage:
    """One stage of one pipeline run as a chapter wrote it with --timeline: device times in us from
    the run's first stage. chunk is "" for stages that belong to no chunk (the weights)."""
    variant: str
    stream: str
    chunk: str
    stage: str
    start_us: float
    end_us: float
    chapter: str = ""   # chNN_... as the loader names it
    run: str = ""
    file: str = ""

    @property
    def category(self):
        low = self.stage.lower()
        return "h2d" if low.startswith("h2d") else "d2h" if low.startswith("d2h") else "kernel"


def parse_stage_timeline(path, text, run, chapter=""):
    t, c = _tsv(path, text, STAGE_TIMELINE_COLUMNS, "stage timeline")
    out = []
    for line, cells in t.records():
        chunk = t.text(cells, c["chunk"])
        out.append(Stage(t.text(cells, c["variant"]), t.text(cells, c["stream"]), "" if chunk == "-" else chunk,
                         t.text(cells, c["stage"]), t.number(cells, c["start_us"], line),
                         t.number(cells, c["end_us"], line), chapter, run, str(path)))
    if not out:
        raise FormatError(f"{path}: a stage timeline without stages")
    return out


def parse_file(path, ctx, text=None, detected=None):
    """Rows of one profile file (warnings: a list the caller prints). Raises FormatError."""
    text = read_text(path) if text is None else text
    d = detected or detect(path, text)
    if d is None or d.fmt in ("unknown", "unused", "run-info", "summary", "summary-kernels", "rocprof-agent-info",
                              "stage-timeline", "book"):
        raise FormatError(f"{path}: not a profile file profiling/ reads (expected the chapters' _stats.csv / "
                          f"_trace.csv, rocprofv3 or rocprof CSV, nsys stats CSV or ncu raw CSV)")
    if d.fmt == "builtin-stats":
        return parse_builtin_stats(path, text, ctx), []
    if d.fmt == "builtin-trace":
        return parse_builtin_trace(path, text, ctx), []
    if d.fmt == "rocprof-stats":
        return parse_rocprof_stats(path, text, ctx, d.what), []
    if d.fmt == "rocprof-kernel-trace":
        return parse_rocprof_kernel_trace(path, text, ctx), []
    if d.fmt == "rocprof-copy-trace":
        return parse_rocprof_copy_trace(path, text, ctx), []
    if d.fmt in ("rocprof-api-trace", "rocprof-marker-trace"):
        return parse_rocprof_api_trace(path, text, ctx, marker=d.fmt == "rocprof-marker-trace"), []
    if d.fmt == "nsys":
        rows, warning = parse_nsys(path, text, ctx, d.what)
        return rows, [warning] if warning else []
    if d.fmt == "ncu":
        return parse_ncu(path, text, ctx), []
    raise FormatError(f"{path}: format {d.fmt} has no parser")
