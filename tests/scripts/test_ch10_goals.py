"""scripts/ch10_goals.py: the goals read right from the GPU check's chapter-10 files, met and missed
told apart at the limits, and a clear error where a file or a row is missing. Standard library only
(run with plain Python: python3 tests/scripts/test_ch10_goals.py)."""
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "ch10_goals.py")
RUNS_HEADER = "chapter\tname\tvariant\tend_to_end_ms\tkernels_ms\tverified\tdevice\tshape\n"
KERNELS_HEADER = "chapter\tname\tvariant\tkernel\tms\ttflops\tgbs\tceiling_pct\tcopy_ceiling_gbs\tdevice\tshape\n"
SHAPE = "B=8 D=4096 L=4096 W=4 bf16"


def run(results_dir):
    return subprocess.run([sys.executable, SCRIPT, results_dir], capture_output=True, text=True)


def write(d, times, varlen_pct, silu_first=False):
    """bench_10.tsv with one rows run (variant -> kernels ms), optionally after a bias+SiLU run whose
    figures must be ignored; bench_10_kernels.tsv with the varlen forward at varlen_pct."""
    with open(os.path.join(d, "bench_10.tsv"), "w") as f:
        f.write(RUNS_HEADER)
        if silu_first:
            for v in times:
                f.write(f"10\tpacked_sequences\t{v}\t1\t9.0\tyes\tGPU\t{SHAPE} bias silu\n")
        for v, ms in times.items():
            f.write(f"10\tpacked_sequences\t{v}\t1\t{ms}\tyes\tGPU\t{SHAPE}\n")
        for v in times:  # a later run (the states alone): not the goals' rows
            f.write(f"10\tpacked_sequences\t{v}\t1\t0.001\tyes\tGPU\t{SHAPE}\n")
    with open(os.path.join(d, "bench_10_kernels.tsv"), "w") as f:
        f.write(KERNELS_HEADER)
        f.write(f"10\tpacked_sequences\tcl_varlen\tconv_fwd_cl_staged\t0.15\t1\t1\t{varlen_pct}\t4000\tGPU\t{SHAPE}\n")


TIMES = {"cf_packed": 0.105, "cf_plain": 0.1, "cl_packed": 0.1051, "cl_plain": 0.1,
         "cf_packed_bwd": 0.2, "cf_plain_bwd": 0.2, "cl_packed_bwd": 0.3, "cl_plain_bwd": 0.2}


class Ch10Goals(unittest.TestCase):
    def test_limits(self):
        with tempfile.TemporaryDirectory() as d:
            write(d, TIMES, 85.0, silu_first=True)
            r = run(d)
            self.assertEqual(r.returncode, 0, r.stderr)
            lines = {l.split("|")[1].strip(): l for l in r.stdout.splitlines() if l.startswith("| rows") or
                     l.startswith("| varlen")}
            self.assertIn("1.050", lines["rows, 8 documents and states, forward channel-first: time ÷ chapter 08's ≤ 1.05"])
            self.assertTrue(lines["rows, 8 documents and states, forward channel-first: time ÷ chapter 08's ≤ 1.05"]
                            .endswith("| met |"))
            self.assertTrue(lines["rows, 8 documents and states, forward channel-last: time ÷ chapter 08's ≤ 1.05"]
                            .endswith("| missed |"))
            self.assertTrue(lines["rows, 8 documents and states, backward channel-last: time ÷ chapter 09's ≤ 1.05"]
                            .endswith("| missed |"))
            self.assertTrue(lines["varlen, 64 sequences, forward: ≥ 85 % of the copy ceiling"].endswith("| met |"))
            self.assertIn("3 of 5 met", r.stdout)

    def test_varlen_below(self):
        with tempfile.TemporaryDirectory() as d:
            write(d, TIMES, 84.9)
            r = run(d)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("84.9 %", r.stdout)
            self.assertIn("2 of 5 met", r.stdout)

    def test_committed_check(self):
        # The GPU check's files as committed: the table made from them is the one the check wrote
        # beside them (results/gpu-check/ch10_goals.md, which the docs quote).
        d = os.path.join(ROOT, "results", "gpu-check")
        r = run(d)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(d, "ch10_goals.md"), encoding="utf-8") as f:
            self.assertEqual(r.stdout, f.read())

    def test_missing(self):
        with tempfile.TemporaryDirectory() as d:
            r = run(d)
            self.assertEqual(r.returncode, 2)
            self.assertIn("bench_10.tsv is missing", r.stderr)
            write(d, {k: v for k, v in TIMES.items() if k != "cl_plain_bwd"}, 85.0)
            r = run(d)
            self.assertEqual(r.returncode, 2)
            self.assertIn("no bf16 row for the plain kernel", r.stderr)


if __name__ == "__main__":
    unittest.main()
