"""profiling/sass_lines.py on made-up source pages: SASS lines grouped by how many times each ran,
every opcode's count (a predicated line under its opcode), the shares right, only the first kernel
of a file with several, the same files from both command lines, and a clear error for a page it
cannot use. Standard library only, so plain Python runs it
(python3 tests/python/profiling/test_sass_lines.py); pytest collects it too."""
import csv
import gzip
import io
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
MODULE = ["-m", "profiling.sass_lines"]
PACKAGE = ["-m", "profiling", "sass-lines"]
HEADER = ["Address", "Source", "Warp Stall Sampling (All Samples)", "Instructions Executed",
          "stall_barrier", "stall_long_sb", "stall_barrier (Not Issued)"]
KERNEL_A = [("LDC R1, c[0x0][0x28]", 10, 100, 0, 10),   # once a tile (100)
            ("FFMA R2, R3, R4, R5", 20, 800, 0, 0),     # a batch (800)
            ("@P0 FFMA R2, R3, R4, R2", 10, 800, 0, 0),
            ("BAR.SYNC.DEFER_BLOCKING 0x0", 60, 100, 60, 0)]


def source_page(path, kernels, header=HEADER):
    """A gzipped source page as ncu writes it: per kernel a name line, a header, a row a line."""
    buf = io.StringIO()
    w = csv.writer(buf, quoting=csv.QUOTE_ALL)
    for name, lines in kernels:
        w.writerow(["Kernel Name", name])
        w.writerow(header)
        for k, (sass, samples, times, barrier, long_sb) in enumerate(lines):
            row = [hex(0x7F0000 + 16 * k), "      " + sass, samples, times, barrier, long_sb, 0]
            w.writerow(row[:len(header)])
    with gzip.open(path, "wt") as f:
        f.write(buf.getvalue())


def run(*args, command=MODULE):
    # From the repository root, so that `-m profiling...` finds the package without installing it.
    path = os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")]))
    env = dict(os.environ, PYTHONPATH=path)
    return subprocess.run([sys.executable, *command, *args], capture_output=True, text=True,
                          cwd=ROOT, env=env)


def read(path):
    with open(path) as f:
        return f.read()


class SourceSummary(unittest.TestCase):
    def test_groups_reasons_and_first_kernel_only(self):
        with tempfile.TemporaryDirectory() as d:
            src, out = os.path.join(d, "src.csv.gz"), os.path.join(d, "out.md")
            source_page(src, [
                ("kernel_a", KERNEL_A),
                ("kernel_b", [("NOP", 999, 5, 0, 0)]),  # a second kernel: not read
            ])
            r = run(src, out)
            self.assertEqual(r.returncode, 0, r.stderr)
            md = read(out)
            self.assertIn("kernel_a", md)
            self.assertNotIn("kernel_b", md)
            self.assertIn("4 SASS lines, 1800 warp instructions executed, 100 warp-stall samples.",
                          md)
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

    def test_busiest_lines(self):
        # The lines with the most samples first, at their offset from the kernel's first line,
        # with their two main reasons, the larger first (a reason without samples left out).
        with tempfile.TemporaryDirectory() as d:
            src, out = os.path.join(d, "src.csv.gz"), os.path.join(d, "out.md")
            source_page(src, [("kernel_a", KERNEL_A + [("LDS R4, [R5]", 30, 100, 5, 25)])])
            self.assertEqual(run(src, out).returncode, 0)
            busiest = read(out).split("## The 12 lines with the most samples")[1]
            rows = [line for line in busiest.splitlines() if line.startswith("| 0x")]
            # (The last two have equal samples and keep the page's order.)
            self.assertEqual(rows, [
                "| 0x00030 | `BAR.SYNC.DEFER_BLOCKING 0x0` | 100 | 60 | barrier 60 |",
                "| 0x00040 | `LDS R4, [R5]` | 100 | 30 | long_sb 25, barrier 5 |",
                "| 0x00010 | `FFMA R2, R3, R4, R5` | 800 | 20 |  |",
                "| 0x00000 | `LDC R1, c[0x0][0x28]` | 100 | 10 | long_sb 10 |",
                "| 0x00020 | `@P0 FFMA R2, R3, R4, R2` | 800 | 10 |  |"])

    def test_both_command_lines_write_the_same_files(self):
        with tempfile.TemporaryDirectory() as d:
            src = os.path.join(d, "src.csv.gz")
            source_page(src, [("kernel_a", KERNEL_A)])
            a, b = os.path.join(d, "a.md"), os.path.join(d, "b.md")
            self.assertEqual(run(src, a).returncode, 0)
            r = run(src, b, command=PACKAGE)
            self.assertEqual(r.returncode, 0, r.stderr)
            for suffix in (".md", "_groups.tsv", "_opcodes.tsv", "_reasons.tsv"):
                self.assertEqual(read(os.path.join(d, "a" + suffix)),
                                 read(os.path.join(d, "b" + suffix)), suffix)

    def test_empty_file_is_an_error(self):
        with tempfile.TemporaryDirectory() as d:
            src = os.path.join(d, "src.csv.gz")
            with gzip.open(src, "wt") as f:
                f.write("")
            r = run(src, os.path.join(d, "out.md"))
            self.assertEqual(r.returncode, 1)
            self.assertIn("no SASS lines", r.stderr)

    def test_unusable_input_is_one_line_naming_the_file(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "out.md")
            missing = os.path.join(d, "missing.csv.gz")
            plain = os.path.join(d, "plain.csv")  # (not gzipped)
            with open(plain, "w") as f:
                f.write('"Address","Source"\n')
            no_samples = os.path.join(d, "no_samples.csv.gz")
            source_page(no_samples, [("k", KERNEL_A)], header=HEADER[:2] + HEADER[3:4])
            bad_count = os.path.join(d, "bad_count.csv.gz")
            source_page(bad_count, [("k", [("NOP", 1, "many", 0, 0)])])
            for src, what in ((missing, "no such file"), (plain, "not gzipped"),
                              (no_samples, "lacks 'Warp Stall Sampling (All Samples)'"),
                              (bad_count, "line 3: Instructions Executed 'many' is not a whole")):
                for command in (MODULE, PACKAGE):
                    r = run(src, out, command=command)
                    self.assertEqual(r.returncode, 2, (src, command))
                    self.assertEqual(len(r.stderr.splitlines()), 1, r.stderr)
                    self.assertIn(src, r.stderr)
                    self.assertIn(what, r.stderr)
            self.assertFalse(os.path.exists(out))

    def test_usage(self):
        self.assertEqual(run("--help").returncode, 0)
        self.assertEqual(run().returncode, 2)
        r = run("--help", command=PACKAGE)
        self.assertEqual(r.returncode, 0)
        self.assertIn("SOURCE.csv.gz OUT.md", r.stdout)
        self.assertEqual(run(command=PACKAGE).returncode, 2)

    def test_standard_library_only(self):
        # Plain Python must import it: nothing of the package that the charts need comes along.
        r = run("-c", "import sys, profiling.sass_lines; "
                      "print(sorted(m for m in sys.modules if m.split('.')[0] in "
                      "('profiling', 'matplotlib', 'numpy')))", command=[])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), "['profiling', 'profiling.sass_lines']")


if __name__ == "__main__":
    unittest.main()
