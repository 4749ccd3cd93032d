#!/usr/bin/env python3
"""Keeps docs/ and README.md in step with the sources and the committed result files.

Two kinds of marked regions in Markdown files are generated, never typed by hand:

  <!-- include: PATH#REGION -->            the lines between `// [docs:REGION]` and
  ```cuda                                  `// [/docs:REGION]` in PATH (a source file)
  ...
  ```
  <!-- /include -->

  <!-- diff: PATH_A#REGION_A PATH_B#REGION_B -->   a unified diff (```diff) from region A to
  ...                                               region B: what a kernel adds to the one it
  <!-- /diff -->                                    extends

  <!-- results: KIND PATH [key=value ...] -->   a Markdown table made from a committed result
  ...                                          file (KIND: phases, tsv)
  <!-- /results -->

  <!-- results: charts FOLDER -->          the profiling charts (profiling/catalog.py) found in a
  ...                                      committed folder, as images with their captions
  <!-- /results -->

  <!-- value: KIND PATH [key=value ...] -->N<!-- /value -->   one number inside a sentence:
      tsv PATH where=col:value,... col=COLUMN [fmt=.1f] [scale=X]   a cell of a result table
                                              (nth=K: the K-th of several matching rows, in file order)
      share PATH category=CAT                                        a category's share (%) of a
                                                                     phase stats file
      ratio PATH where=... col=C over=col:value,... [over_path=P]    cell / the cell of another row
                                              (of file P when given; over_col=C2 for another column)

A PATH may name a file as it stood at an earlier commit, REV:PATH (REV: 7 to 40 hex digits), read
with `git show`: the records of experiments that are no longer in the tree (the history of a
chapter's "what did not work") stay in git, and a page quotes them from there. Where the clone has
no such commit (a shallow one), those values are reported as not checked, not as wrong.

Usage: docs_sync.py [FILE...]          rewrite the regions in place (of README.md and docs/, or FILEs)
       docs_sync.py --check [FILE...]  exit 1 (and show what differs) if any region is out of date
Only the standard library (and git, for REV:PATH) is used, so the check runs wherever Python 3 does.
"""
import argparse
import csv
import difflib
import functools
import io
import os
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
INCLUDE = re.compile(r"(<!-- include: (?P<path>[^#\s]+)#(?P<region>[\w.-]+) -->\n)(?P<body>.*?)(<!-- /include -->)", re.S)
VALUE = re.compile(r"(<!-- value: (?P<args>[^>]*?) -->)(?P<body>[^<\n]*)(<!-- /value -->)")
DIFF = re.compile(r"(<!-- diff: (?P<a>[^#\s]+)#(?P<ra>[\w.-]+) (?P<b>[^#\s]+)#(?P<rb>[\w.-]+) -->\n)(?P<body>.*?)(<!-- /diff -->)", re.S)
RESULTS = re.compile(r"(<!-- results: (?P<args>[^>]*?) -->\n)(?P<body>.*?)(<!-- /results -->)", re.S)
LANG = {".cu": "cuda", ".cuh": "cuda", ".h": "cpp", ".cpp": "cpp", ".py": "python", ".sh": "bash", ".cmake": "cmake"}


class DocError(Exception):
    pass


class MissingHistory(Exception):
    """A REV:PATH whose commit this clone does not have."""


PINNED = re.compile(r"^(?P<rev>[0-9a-f]{7,40}):(?P<path>.+)$")


@functools.lru_cache(maxsize=None)
def pinned_text(rev, path):
    """The text of PATH at commit REV (git show), or MissingHistory when the commit is not here."""
    have = subprocess.run(["git", "-C", str(ROOT), "cat-file", "-e", f"{rev}^{{commit}}"],
                          capture_output=True)
    if have.returncode != 0:
        raise MissingHistory(rev)
    shown = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:{path}"], capture_output=True,
                           text=True)
    if shown.returncode != 0:
        raise DocError(f"{rev}:{path}: no such file at that commit")
    return shown.stdout


MARKER_LINE = re.compile(r"^// \[/?docs:[\w.-]+\]$")


def region_lines(path, region):
    """The lines of a marked region of a source file."""
    src = ROOT / path
    if not src.is_file():
        raise DocError(f"{path}: no such source file")
    lines = src.read_text().splitlines()
    begin = [i for i, l in enumerate(lines) if l.strip() == f"// [docs:{region}]"]
    end = [i for i, l in enumerate(lines) if l.strip() == f"// [/docs:{region}]"]
    if len(begin) != 1 or len(end) != 1 or end[0] <= begin[0]:
        raise DocError(f"{path}: region '{region}' must be marked once by // [docs:{region}] ... // [/docs:{region}]")
    # Markers of regions nested inside this one are not shown: they are the docs' bookkeeping.
    return [l for l in lines[begin[0] + 1:end[0]] if not MARKER_LINE.match(l.strip())]


def source_region(path, region):
    body = "\n".join(region_lines(path, region))
    return f"```{LANG.get(pathlib.Path(path).suffix, '')}\n{body}\n```\n"


def diff_region(m):
    """A unified diff from one marked region to another (three lines of context)."""
    a = region_lines(m.group("a"), m.group("ra"))
    b = region_lines(m.group("b"), m.group("rb"))
    lines = list(difflib.unified_diff(a, b, f"{m.group('a')} ({m.group('ra')})",
                                      f"{m.group('b')} ({m.group('rb')})", lineterm=""))
    if not lines:
        raise DocError(f"diff {m.group('a')}#{m.group('ra')} {m.group('b')}#{m.group('rb')}: the regions are identical")
    return "```diff\n" + "\n".join(lines) + "\n```\n"


def read_csv(path):
    pinned = PINNED.match(path)
    if pinned:
        text = pinned_text(pinned.group("rev"), pinned.group("path"))
        delimiter = "\t" if pinned.group("path").endswith(".tsv") else ","
        rows = list(csv.DictReader(io.StringIO(text), delimiter=delimiter))
        if not rows:
            raise DocError(f"{path}: no rows")
        return rows
    p = ROOT / path
    if not p.is_file():
        raise DocError(f"{path}: result file not found")
    with p.open(newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t" if p.suffix == ".tsv" else ","))
    if not rows:
        raise DocError(f"{path}: no rows")
    return rows


def select(path, where):
    """The rows of a result table whose columns hold the given values (where=col:value,...)."""
    rows = read_csv(path)
    for cond in filter(None, where.split(",")):
        col, _, value = cond.partition(":")
        if not rows:  # (nothing left to match: the caller says which where= found none)
            break
        if col not in rows[0]:
            raise DocError(f"{path}: no column {col}")
        value = value.replace("+", " ").replace("%2C", ",").replace("%3C", "<").replace("%3E", ">")
        rows = [r for r in rows if r[col] == value]
    return rows


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out) + "\n"


def results_phases(path, opts):
    """A phase table from a chapter's --profile-csv stats file (per timed run)."""
    rows = read_csv(path)
    runs = int(opts.get("runs", "1"))
    body = []
    for r in rows:
        total_ms = float(r["TotalDurationNs"]) / 1e6 / runs
        body.append([r["Name"], r["Category"], int(r["Calls"]) // runs, f"{total_ms:.3f}", f"{float(r['Percentage']):.1f} %"])
    shares = {}
    for r in rows:
        shares[r["Category"]] = shares.get(r["Category"], 0.0) + float(r["Percentage"])
    text = table(["phase", "kind", "calls per run", "ms per run", "share"], body)
    text += "\nBy kind: " + ", ".join(f"{k} {v:.1f} %" for k, v in sorted(shares.items(), key=lambda kv: -kv[1])) + ".\n"
    return text


def results_tsv(path, opts):
    """Any tab-separated file with a header, as a table: columns=a,b,c keeps those columns,
    where=col:value[,col:value...] keeps the rows whose columns hold those values ("+" in a value
    stands for a space, "%2C" for a comma, "%3C" and "%3E" for < and >)."""
    rows = select(path, opts.get("where", ""))
    if not rows:
        raise DocError(f"{path}: no rows match {opts.get('where')}")
    cols = opts["columns"].split(",") if "columns" in opts else list(rows[0].keys())
    missing = [c for c in cols if c not in rows[0]]
    if missing:
        raise DocError(f"{path}: no column(s) {', '.join(missing)}")
    return table(cols, [[r[c] for c in cols] for r in rows])


KINDS = {"phases": results_phases, "tsv": results_tsv}


def filtered(path, where, nth=None):
    """The one row `where` selects; with nth=K, the K-th (from 1, in file order) of several."""
    rows = select(path, where)
    if nth is not None:
        k = int(nth)
        if not 1 <= k <= len(rows):
            raise DocError(f"{path}: where={where} nth={nth}: only {len(rows)} row(s) match")
        rows = [rows[k - 1]]
    if len(rows) != 1:
        raise DocError(f"{path}: where={where} must select exactly one row (got {len(rows)})")
    return rows[0]


def cell(path, opts, where_key="where"):
    row = filtered(path, opts.get(where_key, ""), opts.get("nth" if where_key == "where" else "over_nth"))
    col = opts.get("col") if where_key == "where" else opts.get("over_col", opts.get("col"))
    if col not in row:
        raise DocError(f"{path}: no column {col}")
    return float(row[col])


def value_region(args):
    parts = args.split()
    if len(parts) < 2:
        raise DocError(f"value region '{args}': expected KIND PATH [key=value...]")
    kind, path = parts[0], parts[1]
    opts = dict(p.split("=", 1) for p in parts[2:] if "=" in p)
    if kind == "tsv":
        v = cell(path, opts) * float(opts.get("scale", "1"))
    elif kind == "ratio":
        v = cell(path, opts) / cell(opts.get("over_path", path), opts, "over")
    elif kind == "share":
        rows = read_csv(path)
        v = sum(float(r["Percentage"]) for r in rows if r["Category"] == opts.get("category"))
    else:
        raise DocError(f"value region '{args}': unknown kind {kind} (tsv, ratio, share)")
    return format(v, opts.get("fmt", ".1f"))


def results_charts(folder, md):
    """The charts present in a committed folder, in the catalog's order, linked relative to the page."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from profiling.catalog import CHARTS  # standard library only
    d = ROOT / folder
    if not d.is_dir():
        raise DocError(f"{folder}: result folder not found")
    out = []
    for name, title, caption in CHARTS:
        if (d / name).is_file():
            link = pathlib.Path(os.path.relpath(d / name, md.parent)).as_posix()
            out.append(f"![{title}]({link})\n\n*{caption}*\n")
    if not out:
        raise DocError(f"{folder}: none of the charts {', '.join(n for n, _, _ in CHARTS)}")
    return "\n".join(out)


def results_region(args, md=ROOT / "README.md"):
    parts = args.split()
    if len(parts) == 2 and parts[0] == "charts":
        return results_charts(parts[1], md)
    if len(parts) < 2 or parts[0] not in KINDS:
        raise DocError(f"results region '{args}': expected KIND PATH [key=value...], KIND one of "
                       f"{', '.join(KINDS)}, charts")
    opts = dict(p.split("=", 1) for p in parts[2:] if "=" in p)
    return KINDS[parts[0]](parts[1], opts)


def unparsed(text):
    """A marker's opening that its pattern does not take (a '>' in its arguments, a missing
    closing tag) would be left as it is, silently: say so instead."""
    for opener, pattern in (("<!-- include: ", INCLUDE), ("<!-- diff: ", DIFF), ("<!-- results: ", RESULTS),
                            ("<!-- value: ", VALUE)):
        taken = {m.start() for m in pattern.finditer(text)}
        for i in (m.start() for m in re.finditer(re.escape(opener), text)):
            if i not in taken:
                line = text.count("\n", 0, i) + 1
                raise DocError(f"line {line}: a marker that cannot be read ({text[i:i + 60].split(chr(10))[0]}...): "
                               "no '>' in its arguments (write < and > as %3C and %3E), and its closing tag on the same line")


UNCHECKED = []  # (file, marker) of REV:PATH values whose commit this clone lacks


def render(text, md=ROOT / "README.md"):
    unparsed(text)
    text = INCLUDE.sub(lambda m: m.group(1) + source_region(m.group("path"), m.group("region")) + m.group(5), text)
    text = DIFF.sub(lambda m: m.group(1) + diff_region(m) + m.group(7), text)
    text = RESULTS.sub(lambda m: m.group(1) + results_region(m.group("args"), md) + m.group(4), text)

    def value(m):
        try:
            return m.group(1) + value_region(m.group("args")) + m.group(4)
        except MissingHistory:
            UNCHECKED.append((md, m.group("args")))
            return m.group(0)  # (left as it is: there is nothing here to check it against)
    return VALUE.sub(value, text)


def markdown_files():
    return sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="report out-of-date regions instead of rewriting them")
    ap.add_argument("files", nargs="*", type=pathlib.Path,
                    help="Markdown files to process (default: README.md and everything under docs/)")
    args = ap.parse_args()
    stale = 0
    for md in [f.resolve() for f in args.files] or markdown_files():
        if not md.is_file():
            continue
        old = md.read_text()
        try:
            new = render(old, md)
        except DocError as e:
            print(f"{md.relative_to(ROOT)}: {e}", file=sys.stderr)
            return 2
        if new != old:
            stale += 1
            if args.check:
                sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), new.splitlines(True),
                                                           str(md.relative_to(ROOT)), "generated"))
            else:
                md.write_text(new)
                print(f"updated {md.relative_to(ROOT)}")
    if UNCHECKED:
        revs = sorted({m.group("rev") for _, a in UNCHECKED for tok in a.split()
                       if (m := PINNED.match(tok.split("=", 1)[-1]))})
        print(f"{len(UNCHECKED)} value(s) from earlier commits not checked: this clone lacks "
              f"{', '.join(revs)} (a shallow clone? `git fetch --unshallow` brings them)",
              file=sys.stderr)
    if args.check and stale:
        print(f"{stale} file(s) out of date: run scripts/docs_sync.py", file=sys.stderr)
        return 1
    if args.check:
        print("docs in sync with sources and result files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
