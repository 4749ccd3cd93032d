"""results/ holds what the pages, README, tests and scripts read, and nothing else: no script, no
patch, no file that nothing reads. (The records of earlier experiments stay in git history, and a
page quotes them from there: scripts/docs_sync.py's REV:PATH.) Standard library only (run with
plain Python: python3 tests/scripts/test_results_read.py; `--list` prints what nothing reads).

A file under results/ counts as read when
  - a page or README.md names it in a docs_sync marker (`value`, `results`, `over_path=`), shows it
    (a Markdown link or image), draws it among a folder's charts (`results: charts FOLDER`), or
    sends the reader to it by its path in the text;
  - the source of a test, a script, the profiling package or the build names it;
  - it is a profile the profiling package reads (profiling.formats.detect) in a results folder that
    a test loads whole (results/gpu-check: the charts and the profiling tests read every profile
    in it);
  - it belongs to a finished part of a GPU check split over sessions, kept in
    results/check-in-progress/part-N/ (with the part's check.tsv) until scripts/results_manifest.py
    joins it with the last parts into results/gpu-check.
"""
import os
import pathlib
import re
import sys
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import docs_sync  # noqa: E402
from profiling import formats  # noqa: E402
from profiling.catalog import CHARTS  # noqa: E402
from profiling.csvread import read_text  # noqa: E402

RESULTS = ROOT / "results"
# Folders the tests and the charts load whole, as the profiling package reads them.
LOADED_WHOLE = [RESULTS / "gpu-check"]
# Where a GPU check split over sessions keeps its finished parts (scripts/results_manifest.py --keep).
KEPT = RESULTS / "check-in-progress"
# No code in results/: scripts, patches, sources.
CODE = {".patch", ".diff", ".sh", ".py", ".cu", ".cuh", ".cpp", ".cc", ".h", ".hpp", ".c", ".ipynb"}
# Where code that reads result files lives.
CODE_DIRS = ["tests", "scripts", "profiling", "cmake", "chapters", ".ci"]
CODE_SUFFIXES = {".py", ".sh", ".cmake", ".txt", ".cu", ".cuh", ".cpp", ".h", ""}
LINK = re.compile(r"\]\(([^)\s]+)\)")
PATH = re.compile(r"results/[A-Za-z0-9_./-]+")


def markdown_files():
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def named_by_pages():
    """Files under results/ that a page or README names (markers, links, chart folders)."""
    read = set()
    for md in markdown_files():
        text = md.read_text()
        for pattern in (docs_sync.VALUE, docs_sync.RESULTS):
            for m in pattern.finditer(text):
                parts = m.group("args").split()
                if len(parts) == 2 and parts[0] == "charts":
                    folder = ROOT / parts[1]
                    read |= {(folder / name).resolve() for name, _, _ in CHARTS}
                    continue
                for part in parts[1:2] + [p.split("=", 1)[1] for p in parts if p.startswith("over_path=")]:
                    if not docs_sync.PINNED.match(part):
                        read.add((ROOT / part).resolve())
        for m in LINK.finditer(text):
            target = m.group(1).split("#", 1)[0]
            if target and "://" not in target:
                read.add((md.parent / target).resolve())
        for m in PATH.finditer(text):  # (in the text: `results/gpu-check/x.tsv`)
            read.add((ROOT / m.group(0).rstrip(".")).resolve())
    return read


def named_by_code():
    """Files under results/ whose path the source of a test, script or the build names."""
    read = set()
    for d in CODE_DIRS:
        base = ROOT / d
        files = [base] if base.is_file() else [p for p in base.rglob("*") if p.is_file()]
        for f in files:
            if f.suffix not in CODE_SUFFIXES or "fixtures" in f.parts:
                continue
            try:
                text = f.read_text()
            except UnicodeDecodeError:
                continue
            for m in PATH.finditer(text):
                read.add((ROOT / m.group(0).rstrip(".")).resolve())
    return read


def profiles_loaded():
    """The profiles the profiling package reads in the folders the tests load whole."""
    read = set()
    for folder in LOADED_WHOLE:
        for f in folder.rglob("*") if folder.is_dir() else []:
            if not f.is_file():
                continue
            try:
                d = formats.detect(f, read_text(f) if f.suffix in (".csv", ".tsv") else "")
            except Exception:  # (a file it cannot read is not one it reads)
                continue
            if d is not None and d.fmt not in ("unknown", "unused"):
                read.add(f.resolve())
    return read


def result_files():
    return sorted(p for p in RESULTS.rglob("*") if p.is_file()) if RESULTS.is_dir() else []


def kept_parts():
    """The files of finished parts of a split GPU check (results_manifest.py --keep)."""
    read = set()
    for part in sorted(KEPT.glob("part-*")) if KEPT.is_dir() else []:
        if (part / "check.tsv").is_file():
            read |= {f.resolve() for f in part.rglob("*") if f.is_file()}
    return read


def unread():
    read = named_by_pages() | named_by_code() | profiles_loaded() | kept_parts()
    return [f for f in result_files() if f.resolve() not in read and f.suffix.lower() not in CODE]


class ResultsHoldWhatIsRead(unittest.TestCase):
    def test_no_code_under_results(self):
        code = [str(f.relative_to(ROOT)) for f in result_files() if f.suffix.lower() in CODE]
        self.assertEqual(code, [], "scripts and patches do not belong in results/ (git keeps "
                                   "the history of an experiment; its lesson goes in a page)")

    def test_every_result_file_is_read(self):
        orphans = [str(f.relative_to(ROOT)) for f in unread()]
        self.assertEqual(orphans, [], "result files nothing reads (delete them, or show them "
                                      "on a page)")

    def test_the_checks_can_fail(self):
        # A file nothing names is found, and so is a script; both only in a copy of the lists.
        ghost = RESULTS / "gpu-check" / "no-page-reads-this.txt"
        self.assertNotIn(ghost.resolve(), named_by_pages() | named_by_code())
        self.assertIn(".sh", CODE)
        # And what a page does name counts as read.
        pages = named_by_pages()
        self.assertTrue(any(str(p).startswith(str(RESULTS)) for p in pages),
                        "no page names a result file: the scan of the markers is broken")


if __name__ == "__main__":
    if "--list" in sys.argv:
        for f in unread():
            print(f.relative_to(ROOT))
        sys.exit(0)
    unittest.main()
