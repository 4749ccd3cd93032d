#!/usr/bin/env python3
"""summary.tsv from run1's A/B timings (run from the repository root): the channel-first rows
backward (whole backward) and chapter 09's plain kernel in the same process, by configuration and
tree (base: before the change; skip: with it), medians over the three rounds and the ratio's range.
"""
import csv
import importlib.util
import pathlib
import sys

sys.path.insert(0, "scripts")
from result_tables import ab_rows  # noqa: E402

HERE = pathlib.Path("results/padding-skip")
_spec = importlib.util.spec_from_file_location("code_size", "results/code-size/scripts/derive.py")
code_size = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(code_size)

if __name__ == "__main__":
    rows = ab_rows(HERE / "run1" / "ab", lambda tree: "base" if tree == "base8" else "skip")
    code_size.HERE = HERE
    code_size.write("summary.tsv", rows)
