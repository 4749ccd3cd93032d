"""The tour's table of the whole book (book.tsv, written by chapters/tour.cpp): one row per chapter's
headline variant per kind of work (forward, backward, decode), at one shape per kind of work.

    work  chapter  name  variant  shape  device_ms  ceiling_pct  speedup  over  end_to_end_ms  verified  device

device_ms is the chapter's kernels (a decoding chapter's: per step); ceiling_pct the operator's bytes
over that time, as a share of the copy ceiling measured in the chapter's own run; speedup the device
time of the first chapter of the same work and shape over this one's ("-" when there is none), over
the chapter it is relative to. An optional `date` column is used for the chart's label.

Only the standard library here: `python -m profiling book` draws it (profiling/charts.py, chart_book).
"""
import collections
import dataclasses
import json
import pathlib
from typing import Optional

from profiling.csvread import Table, read_text, split_lines
from profiling.table import FormatError

BOOK_FILE = "book.tsv"
COLUMNS = ("work", "chapter", "name", "variant", "shape", "device_ms", "ceiling_pct", "speedup", "over",
           "end_to_end_ms", "verified", "device")
WORKS = ("forward", "backward", "decode")  # the tour's order, and the chart's


@dataclasses.dataclass
class BookRow:
    work: str              # forward, backward or decode
    chapter: str           # "01"
    name: str              # host_img2col
    variant: str           # the chapter's headline variant for this work
    shape: str             # "B=8 D=4096 L=4096 W=4 fp16"
    device_ms: float       # the chapter's kernels (decode: per step)
    ceiling_pct: float     # share of the copy ceiling measured in the chapter's own run
    speedup: Optional[float]  # over the first chapter of the same work and shape; None: "-"
    over: str              # the chapter the speed-up is over ("" with no speed-up)
    e2e_ms: float
    verified: bool
    device: str
    line: int = 0

    @property
    def label(self):
        return f"{self.chapter} {self.name} · {self.variant}"


@dataclasses.dataclass
class Book:
    file: str
    rows: list
    run: str = ""          # the loader's run folder of the file
    date: str = ""         # from its date column, its run's run_info.json or --date ("" = not recorded)


def is_book_header(names, name=""):
    """A book table: named book.tsv (or *_book.tsv), or with the columns only it has."""
    name = name.lower()
    return name == BOOK_FILE or name.endswith("_" + BOOK_FILE) or {"work", "chapter", "device_ms"} <= set(names)


def parse_book(path, text, run=""):
    """The rows of a book table. Raises FormatError naming the file (and line) and what is wrong."""
    lines = [(i + 1, c) for i, c in enumerate(split_lines(text, "\t", path)) if any(x.strip() for x in c)]
    if not lines:
        raise FormatError(f"{path}: empty (expected the tour's book table with columns {', '.join(COLUMNS)})")
    (_, header), body = lines[0], lines[1:]
    t = Table(path, header, body)
    missing = [c for c in COLUMNS if not t.has(c)]
    if missing:
        raise FormatError(f"{path}: no column {', '.join(repr(c) for c in missing)} (a book table, as "
                          f"chapters/tour.cpp writes it, has {', '.join(COLUMNS)}; header: {', '.join(t.header)})")
    c = {k: t.column(k) for k in COLUMNS}
    date_col = t.column("date", required=False)
    rows, dates = [], []
    for line, cells in t.records():
        work = t.text(cells, c["work"])
        if work not in WORKS:
            raise FormatError(f"{path}:{line}: column 'work' holds {work!r}, expected {', '.join(WORKS)}")
        verified = t.text(cells, c["verified"])
        if verified not in ("yes", "no"):
            raise FormatError(f"{path}:{line}: column 'verified' holds {verified!r}, expected yes or no")
        speed = t.text(cells, c["speedup"])
        over = t.text(cells, c["over"])
        rows.append(BookRow(
            work=work, chapter=t.text(cells, c["chapter"]), name=t.text(cells, c["name"]),
            variant=t.text(cells, c["variant"]), shape=t.text(cells, c["shape"]),
            device_ms=t.number(cells, c["device_ms"], line), ceiling_pct=t.number(cells, c["ceiling_pct"], line),
            speedup=None if speed in ("", "-") else t.number(cells, c["speedup"], line),
            over="" if over in ("", "-") else over, e2e_ms=t.number(cells, c["end_to_end_ms"], line, blank=0.0),
            verified=verified == "yes", device=t.text(cells, c["device"]), line=line))
        if date_col is not None and t.text(cells, date_col):
            dates.append(t.text(cells, date_col))
    date = collections.Counter(dates).most_common(1)[0][0] if dates else ""
    return Book(str(path), rows, run, date)


def read_book(path, date=None):
    """A book table from its file, for `python -m profiling book`: the date is the one given, else the
    table's date column, else run_info.json beside it, else "" (not recorded)."""
    p = pathlib.Path(path)
    if not p.is_file():
        raise FormatError(f"{path}: no such file")
    b = parse_book(p, read_text(p), str(p.parent))
    info = p.parent / "run_info.json"
    if date:
        b.date = date
    elif not b.date and info.is_file():
        try:
            b.date = json.loads(read_text(info)).get("date", "")
        except json.JSONDecodeError as e:
            raise FormatError(f"{info}: not valid JSON ({e})") from None
    return b


def pick(books, run=""):
    """The book to chart among those loaded: the charted run's own, else the one nearest the top of
    the folders given (fewest path parts). Returns (book or None, the others)."""
    if not books:
        return None, []
    order = sorted(books, key=lambda b: (b.run != run, len(pathlib.Path(b.file).parts), b.file))
    return order[0], order[1:]
