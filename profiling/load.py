"""Loading folders and files into one Dataset: which run, source, chapter and variant each file
belongs to.

- A run is the nearest folder holding a run_info.json (written by `python -m profiling run`), or else
  the folder (or file) named on the command line.
- A chapter is a folder named like ch01_host_img2col, or the start of a file name
  (ch01_host_img2col_stats.csv, ch01_host_img2col_default_naive_trace.csv). Chapter and variant
  names listed in a summary table of the same run are matched first. rocprofv3's hostname/pid layout
  has no chapter in it: put each chapter's output in a folder named after the chapter.
- rocprofv3-format files come from our CUPTI tracer when a file of the same prefix is a cuda_api
  file (the tracer always writes those), otherwise from rocprofv3.
- A stage timeline (chapter 07's --timeline file, e.g. ch07_timeline.tsv) belongs to the chapter of
  the same number in a summary table of the same run.
- The tour's table of the whole book (book.tsv, profiling/book.py) is kept apart: the book chart is
  drawn from it, no other chart reads it. Its date is its run's (run_info.json), where it has one.
"""
import dataclasses
import json
import pathlib
import re
import sys

from profiling import book, formats
from profiling.csvread import read_text
from profiling.table import Context, FormatError

CHAPTER = re.compile(r"^ch\d\d_[A-Za-z0-9_]+$")
# File-name endings after the prefix a tool was given, longest first.
SUFFIXES = sorted({s for s, _ in formats.ROCPROF_STATS} | set(formats.ROCPROF_UNUSED) |
                  {"_kernel_trace.csv", "_hip_api_trace.csv", "_cuda_api_trace.csv", "_memory_copy_trace.csv",
                   "_marker_api_trace.csv", "_stats.csv", "_trace.csv"} |
                  {f"_{k}.csv" for k, _ in formats.NSYS_REPORTS} | {s for s, _ in formats.ROCPROF_V1_STATS},
                  key=len, reverse=True)


@dataclasses.dataclass
class Dataset:
    rows: list = dataclasses.field(default_factory=list)
    summaries: list = dataclasses.field(default_factory=list)
    kernels: list = dataclasses.field(default_factory=list)
    runs: dict = dataclasses.field(default_factory=dict)      # run -> run_info (or {})
    agents: dict = dataclasses.field(default_factory=dict)    # run -> GPU names from rocprofv3 agent info
    stages: list = dataclasses.field(default_factory=list)    # formats.Stage of stage timeline files
    books: list = dataclasses.field(default_factory=list)     # book.Book of the tour's book.tsv files
    notes: list = dataclasses.field(default_factory=list)     # files ignored, reports skipped


def prefix_of(name):
    for s in SUFFIXES:
        if name.endswith(s) and len(name) > len(s):
            return name[: -len(s)]
    return name.rsplit(".", 1)[0]


def _run_of(path, root):
    """The nearest folder from the file up to the root holding run_info.json, else the root."""
    p = path.parent
    while True:
        if (p / "run_info.json").is_file():
            return p
        if p == root or root not in p.parents:
            return root
        p = p.parent


def _chapter_of(path, run_dir, prefix, known):
    """(chapter, rest of the file prefix) for a file; `known` maps chapter -> its variants."""
    try:
        dirs = list(path.parent.relative_to(run_dir).parts) or [run_dir.name]
    except ValueError:
        dirs = [path.parent.name]
    for d in reversed(dirs):
        if d in known or CHAPTER.match(d):
            rest = prefix[len(d):].lstrip("_") if prefix.startswith(d) else prefix
            return d, rest
    names = sorted((k for k in known if prefix == k or prefix.startswith(k + "_")), key=len, reverse=True)
    if names:
        return names[0], prefix[len(names[0]):].lstrip("_")
    if CHAPTER.match(prefix):
        return prefix, ""
    if prefix.isdigit():  # rocprofv3's pid prefix: name it with its host folder
        return "/".join(dirs[-1:] + [prefix]), ""
    return prefix, ""


def _variant_of(rest, variants):
    for v in sorted(variants, key=len, reverse=True):
        if v and (rest == v or rest.endswith("_" + v)):
            return v
    return ""


def _files(paths):
    """(root, file) pairs; a named file is its own root's member, a folder is walked."""
    out = []
    for given in paths:
        p = pathlib.Path(given)
        if p.is_dir():
            root = p.resolve()
            out += [(root, f.resolve()) for f in sorted(root.rglob("*")) if f.is_file()]
        elif p.is_file():
            out.append((p.resolve().parent, p.resolve()))
        else:
            raise FormatError(f"{given}: no such file or folder")
    return out


def load(paths, explicit=False):
    """Reads every profile file under `paths`. With explicit=True (files named one by one), a file
    of no known format is an error; while walking folders it is noted and skipped."""
    ds = Dataset()
    found = []
    for root, f in _files(paths):
        name = f.name.lower()
        if not (name.endswith(".csv") or name.endswith(".tsv") or name == "run_info.json"):
            continue  # logs, images, reports in binary formats
        text = read_text(f)
        d = formats.detect(f, text)
        run_dir = _run_of(f, root)
        run = str(run_dir)
        ds.runs.setdefault(run, {})
        if d.fmt == "run-info":
            try:
                ds.runs[run] = json.loads(text)
            except json.JSONDecodeError as e:
                raise FormatError(f"{f}: not valid JSON ({e})") from None
        elif d.fmt == "summary":
            ds.summaries += formats.parse_summary(f, text, run)
        elif d.fmt == "summary-kernels":
            ds.kernels += formats.parse_summary_kernels(f, text, run)
        elif d.fmt == "rocprof-agent-info":
            ds.agents.setdefault(run, []).extend(formats.parse_agent_info(f, text))
        elif d.fmt == "stage-timeline":
            ds.stages += formats.parse_stage_timeline(f, text, run)
        elif d.fmt == "book":
            ds.books.append(book.parse_book(f, text, run))
            if explicit:
                ds.notes.append(f"{f}: the tour's book table, not a profile: draw it with python -m profiling book")
        elif d.fmt == "unused":
            # A known file the charts do not need (rocprofv3 counters, the project's own side tables):
            # said only when it was named on its own.
            if explicit:
                ds.notes.append(f"{f}: {d.what or 'a known file'}, not a profile: nothing to read")
        elif d.fmt == "unknown":
            if explicit:
                formats.parse_file(f, Context("?"), text, d)  # raises with the expected formats
            ds.notes.append(f"{f}: ignored, not a format profiling/ reads")
        else:
            found.append((f, run_dir, text, d))

    for b in ds.books:
        b.date = b.date or ds.runs.get(b.run, {}).get("date", "")
    known = {}  # run -> chapter -> variants in summary order
    for s in ds.summaries:
        vs = known.setdefault(s.run, {}).setdefault(s.chapter, [])
        if s.variant not in vs:
            vs.append(s.variant)
    for st in ds.stages:
        number = re.match(r"^ch(\d\d)", pathlib.Path(st.file).name)
        named = [c for c in known.get(st.run, {}) if number and c.startswith(f"ch{number.group(1)}_")]
        st.chapter = named[0] if named else prefix_of(pathlib.Path(st.file).name)
    cuda_groups = {(f.parent, prefix_of(f.name)) for f, _, _, _ in found if "_cuda_api_" in f.name}
    for f, run_dir, text, d in found:
        run = str(run_dir)
        prefix = prefix_of(f.name)
        source = d.source or ("cupti" if (f.parent, prefix) in cuda_groups else "rocprofv3")
        chapter, rest = _chapter_of(f, run_dir, prefix, known.get(run, {}))
        variant = _variant_of(rest, known.get(run, {}).get(chapter, []))
        ctx = Context(source=source, run=run, chapter=chapter, variant=variant, file=str(f))
        rows, warnings = formats.parse_file(f, ctx, text, d)
        ds.rows += rows
        ds.notes += warnings
    return ds


def print_notes(ds, stream=None):
    for n in ds.notes:
        print(f"profiling: {n}", file=stream or sys.stderr)
