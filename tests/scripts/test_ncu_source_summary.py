"""scripts/ncu_source_summary.py: SASS lines grouped by how many times each ran, every opcode's
count (a predicated line under its opcode), the shares right, only the first kernel of a file
with several, and a clear error for a file with no lines. Standard
library only (run with plain Python: python3 tests/scripts/test_ncu_source_summary.py)."""
import csv
import gzip
import io
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "ncu_source_summary.py")
HEADER = ["Address", "Source", "Warp Stall Sampling (All Samples)", "Instructions Executed",
          "stall_barrier", "stall_long_sb", "stall_barrier (Not Issued)"]


def source_page(path, kernels):
    """A gzipped source page as ncu writes it: per kernel a name line, a header, a row a line."""
    buf = io.StringIO()
    w = csv.writer(buf, quoting=csv.QUOTE_ALL)
    for name, lines in kernels:
        w.writerow(["Kernel Name", name])
        w.writerow(HEADER)
        for k, (sass, samples, times, barrier, long_sb) in enumerate(lines):
            w.writerow([hex(0x7F0000 + 16 * k), "      " + sass, samples, times, barrier, long_sb, 0])
    with gzip.open(path, "wt") as f:
        f.write(buf.getvalue())


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)


class SourceSummary(unittest.TestCase):
    def test_groups_reasons_and_first_kernel_only(self):
        with tempfile.TemporaryDirectory() as d:
            src, out = os.path.join(d, "src.csv.gz"), os.path.join(d, "out.md")
            source_page(src, [
                ("kernel_a", [("LDC R1, c[0x0][0x28]", 10, 100, 0, 10),   # once a tile (100)
                              ("FFMA R2, R3, R4, R5", 20, 800, 0, 0),     # a batch (800)
                              ("@P0 FFMA R2, R3, R4, R2", 10, 800, 0, 0),
                              ("BAR.SYNC.DEFER_BLOCKING 0x0", 60, 100, 60, 0)]),
                ("kernel_b", [("NOP", 999, 5, 0, 0)]),  # a second kernel: not read
            ])
            r = run(src, out)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(out) as f:
                md = f.read()
            self.assertIn("kernel_a", md)
            self.assertNotIn("kernel_b", md)
            self.assertIn("4 SASS lines, 1800 warp instructions executed, 100 warp-stall samples.", md)
            self.assertIn("| FFMA | 1600 | 88.9 % |", md)  # the predicated one counted as FFMA
            with open(os.path.join(d, "out_groups.tsv")) as f:
                groups = list(csv.DictReader(f, delimiter="\t"))
            self.assertEqual([g["times"] for g in groups], ["800", "100"])
            self.assertEqual((groups[0]["lines"], groups[0]["instructions"], groups[0]["samples"]),
                             ("2", "1600", "30"))
            self.assertEqual(groups[1]["samples_pct"], "70.00")
            with open(os.path.join(d, "out_opcodes.tsv")) as f:
                ops = {o["opcode"]: o["instructions"] for o in csv.DictReader(f, delimiter="\t")}
            self.assertEqual(ops, {"FFMA": "1600", "LDC": "100", "BAR": "100"})
            with open(os.path.join(d, "out_reasons.tsv")) as f:
                reasons = {r["reason"]: r for r in csv.DictReader(f, delimiter="\t")}
            self.assertEqual(reasons["barrier"]["samples"], "60")
            self.assertEqual(reasons["long_sb"]["samples_pct"], "10.00")
            self.assertNotIn("barrier (Not Issued)", reasons)

    def test_empty_file_is_an_error(self):
        with tempfile.TemporaryDirectory() as d:
            src = os.path.join(d, "src.csv.gz")
            with gzip.open(src, "wt") as f:
                f.write("")
            r = run(src, os.path.join(d, "out.md"))
            self.assertEqual(r.returncode, 1)
            self.assertIn("no SASS lines", r.stderr)

    def test_usage(self):
        self.assertEqual(run("--help").returncode, 0)
        self.assertEqual(run().returncode, 2)


if __name__ == "__main__":
    unittest.main()
