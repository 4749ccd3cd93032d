"""scripts/result_tables.py ab: an A/B run's timings grouped by configuration and tree (a
configuration's name may hold an underscore), the layout read from the variants, medians over the
rounds and the ratio's range; and one_launch_row, a profiled launch's facts from made-up details
and source pages. Standard library only (run with plain Python: python3
tests/scripts/test_result_tables.py)."""
import csv
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "result_tables.py")
sys.path.insert(0, os.path.join(ROOT, "scripts"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from result_tables import launch_tables, one_launch_row, source_page as summarise_page  # noqa: E402
from test_ncu_source_summary import source_page  # noqa: E402
HEADER = "chapter\tname\tvariant\tkernel\tms\ttflops\tgbs\tceiling_pct\tcopy_ceiling_gbs\tdevice\tshape\n"


def bench(d, name, layout, packed, plain):
    with open(os.path.join(d, f"bench_{name}_kernels.tsv"), "w") as f:
        f.write(HEADER)
        for v, ms in ((f"{layout}_packed_bwd", packed), (f"{layout}_plain_bwd", plain)):
            f.write(f"10\tpacked_sequences\t{v}\tconv_bwd\t{ms / 2}\t0\t0\t0\t0\tGPU\tS\n")  # not whole
            f.write(f"10\tpacked_sequences\t{v}\twhole backward\t{ms}\t0\t0\t0\t0\tGPU\tS\n")


def ab_table(d, command="ab"):
    """Runs `result_tables.py COMMAND d d/out.tsv`; its result and the table by (config, tree)."""
    out = os.path.join(d, "out.tsv")
    r = subprocess.run([sys.executable, SCRIPT, command, d, out], capture_output=True, text=True)
    if r.returncode != 0:
        return r, None
    with open(out, newline="") as f:
        return r, {(x["config"], x["tree"]): x for x in csv.DictReader(f, delimiter="\t")}


class AbTable(unittest.TestCase):
    def test_groups_and_medians(self):
        with tempfile.TemporaryDirectory() as d:
            for rnd, (p, q) in enumerate([(0.30, 0.20), (0.33, 0.22), (0.24, 0.20)], 1):
                bench(d, f"rows8_old_{rnd}", "cl", p, q)
            bench(d, "cf_rows8_new_1", "cf", 0.21, 0.20)
            with open(os.path.join(d, "bench_varlen_new_1_kernels.tsv"), "w") as f:
                f.write(HEADER + "10\tpacked_sequences\tcl_varlen_bwd\twhole backward\t0.25\t0\t0\t0\t0\tGPU\tS\n")
            r, rows = ab_table(d)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(set(rows), {("rows8", "old"), ("cf_rows8", "new"), ("varlen", "new")})
            old = rows[("rows8", "old")]
            self.assertEqual(old["processes"], "3")
            self.assertEqual(old["bwd_ms"], "0.3000")
            self.assertEqual(old["plain_ms"], "0.2000")
            self.assertEqual(old["ratio"], "1.5000")  # median of 1.5, 1.5, 1.2
            self.assertEqual(old["ratio_min"], "1.2000")
            self.assertEqual(rows[("cf_rows8", "new")]["ratio"], "1.0500")
            varlen = rows[("varlen", "new")]  # (no plain kernel: its time, no ratio)
            self.assertEqual((varlen["bwd_ms"], varlen["plain_ms"], varlen["ratio"]), ("0.2500", "", ""))

    def test_forward(self):
        # A forward run: a variant's time is its "whole forward" row where it has several kernels,
        # else its one kernel's; backward rows in the same file are not the forward's.
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "bench_rows8_old_1_kernels.tsv"), "w") as f:
                f.write(HEADER
                        + "10\tpacked_sequences\tcf_packed\tmake_tap_words + conv\t0.14\t0\t0\t0\t0\tGPU\tS\n"
                        + "10\tpacked_sequences\tcf_packed\twhole forward\t0.16\t0\t0\t0\t0\tGPU\tS\n"
                        + "10\tpacked_sequences\tcf_plain\tconv_fwd_cf_staged\t0.15\t0\t0\t0\t0\tGPU\tS\n"
                        + "10\tpacked_sequences\tcf_packed_bwd\twhole backward\t0.3\t0\t0\t0\t0\tGPU\tS\n")
            with open(os.path.join(d, "bench_varlen_new_1_kernels.tsv"), "w") as f:
                f.write(HEADER + "10\tpacked_sequences\tcl_varlen\tconv_fwd_cl_staged\t0.152\t0\t0\t0\t0\tGPU\tS\n")
            r, rows = ab_table(d, "ab-forward")
            self.assertEqual(r.returncode, 0, r.stderr)
            rows8 = rows[("rows8", "old")]
            self.assertEqual((rows8["fwd_ms"], rows8["plain_ms"], rows8["ratio"]), ("0.1600", "0.1500", "1.0667"))
            self.assertEqual((rows[("varlen", "new")]["fwd_ms"], rows[("varlen", "new")]["ratio"]), ("0.1520", ""))
            os.remove(os.path.join(d, "bench_varlen_new_1_kernels.tsv"))
            r, _ = ab_table(d)
            self.assertEqual(r.returncode, 1)  # (the backward has no plain kernel in this file)
            self.assertIn("no packed and plain whole backward", r.stderr)

    def test_clear_errors(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "out.tsv")
            r = subprocess.run([sys.executable, SCRIPT, "ab", d, out], capture_output=True, text=True)
            self.assertEqual(r.returncode, 1)
            self.assertIn("no bench_*_kernels.tsv", r.stderr)
            bench(d, "rows8", "cl", 0.3, 0.2)  # (no tree, no round)
            r = subprocess.run([sys.executable, SCRIPT, "ab", d, out], capture_output=True, text=True)
            self.assertEqual(r.returncode, 1)
            self.assertIn("expected bench_CONFIG_TREE_ROUND_kernels.tsv", r.stderr)
            self.assertFalse(os.path.exists(out))
            os.remove(os.path.join(d, "bench_rows8_kernels.tsv"))
            with open(os.path.join(d, "bench_rows8_old_1_kernels.tsv"), "w") as f:  # (a forward run)
                f.write(HEADER + "10\tpacked_sequences\tcl_packed\twhole forward\t0.2\t0\t0\t0\t0\tGPU\tS\n")
            r = subprocess.run([sys.executable, SCRIPT, "ab", d, out], capture_output=True, text=True)
            self.assertEqual(r.returncode, 1)
            self.assertIn("no packed and plain whole backward", r.stderr)

    def test_usage(self):
        r = subprocess.run([sys.executable, SCRIPT, "ab"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 2)
        self.assertIn("result_tables.py ab RUN_DIR OUT.tsv", r.stderr)


class OneLaunchRow(unittest.TestCase):
    def details(self, path, rows):
        with open(path, "w", newline="") as f:
            w = csv.writer(f, quoting=csv.QUOTE_ALL)
            w.writerow(["ID", "Kernel Name", "Section Name", "Metric Name", "Metric Unit", "Metric Value"])
            for name, unit, value in rows:
                w.writerow(["0", "k", "s", name, unit, value])

    def test_facts_from_both_pages(self):
        with tempfile.TemporaryDirectory() as d:
            det, src = os.path.join(d, "details.csv"), os.path.join(d, "src.csv.gz")
            self.details(det, [("Executed Instructions", "inst", "1,800"),
                               ("Registers Per Thread", "register/thread", "120"),
                               ("Warp Cycles Per Issued Instruction", "cycle", "8.23"),
                               ("DRAM Throughput", "%", "86.21"), ("Duration", "ms", "0.2")])
            source_page(src, [("k", [("FFMA R2, R3, R4, R5", 40, 1700, 0, 0),
                                     ("BAR.SYNC.DEFER_BLOCKING 0x0", 60, 100, 60, 0)])])
            row = one_launch_row("plain_new", det, src)
            self.assertEqual(row["instructions"], "1800")  # (thousands separators gone)
            self.assertEqual((row["registers"], row["cycles_per_issue"]), ("120", "8.23"))
            self.assertEqual((row["dram_pct"], row["duration_us"]), ("86.21", "200.00"))
            self.assertEqual((row["sass_lines"], row["samples"], row["barrier_pct"]), ("2", 100, "60.0"))
            self.assertEqual(row["uniform"], "")  # (not asked in that profile)
            page = summarise_page(src)
            self.assertEqual(page["opcodes"], {"FFMA": 1700, "BAR": 100})
            self.assertEqual(page["reasons"]["barrier"], 60)

    def test_optional_metrics_left_empty(self):
        with tempfile.TemporaryDirectory() as d:
            det, src = os.path.join(d, "details.csv"), os.path.join(d, "src.csv.gz")
            self.details(det, [("Executed Instructions", "inst", "10"),
                               ("Registers Per Thread", "register/thread", "64"),
                               ("Warp Cycles Per Issued Instruction", "cycle", "5")])
            source_page(src, [("k", [("NOP", 1, 10, 0, 0)])])
            row = one_launch_row("old", det, src)
            self.assertEqual((row["dram_pct"], row["duration_us"], row["barrier_pct"]), ("", "", "0.0"))

    def test_launch_tables(self):
        # Two launches: a row each, and their opcodes side by side in the first launch's order
        # (ties by name; an opcode one launch lacks counts 0 there).
        with tempfile.TemporaryDirectory() as d:
            launches = []
            for name, lines in (("a", [("FFMA R2, R3, R4, R5", 5, 300, 0, 0), ("IMAD R1, R2, R3, R4", 1, 100, 0, 0),
                                       ("BAR.SYNC.DEFER_BLOCKING 0x0", 4, 100, 4, 0)]),
                                ("b", [("IMAD R1, R2, R3, R4", 2, 700, 0, 0), ("LOP3.LUT R1, R2, 0x1, RZ", 1, 50, 0, 0)])):
                det, src = os.path.join(d, f"{name}.csv"), os.path.join(d, f"{name}.csv.gz")
                self.details(det, [("Executed Instructions", "inst", "500"),
                                   ("Registers Per Thread", "register/thread", "64"),
                                   ("Warp Cycles Per Issued Instruction", "cycle", "5")])
                source_page(src, [("k", lines)])
                launches.append((name, det, src))
            rows, opcodes = launch_tables(launches, "a")
            self.assertEqual([r["kernel"] for r in rows], ["a", "b"])
            self.assertEqual(opcodes, [{"opcode": "FFMA", "a": 300, "b": 0}, {"opcode": "BAR", "a": 100, "b": 0},
                                       {"opcode": "IMAD", "a": 100, "b": 700}, {"opcode": "LOP3", "a": 0, "b": 50}])


if __name__ == "__main__":
    unittest.main()
