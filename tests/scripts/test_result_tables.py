"""scripts/result_tables.py, the two commands the GPU check runs, on made-up files: `ncu` (a row per
kernel instance, the medians of its launches, only the metrics asked for and the launch attributes
that explain occupancy, the units in the column names) and `resources` (registers, stack and local
memory by kernel and template arguments); and their errors. Standard library only (run with plain
Python: python3 tests/scripts/test_result_tables.py)."""
import csv
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "result_tables.py")
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from result_tables import split_name  # noqa: E402

CHUNKED = ("void conv1d::ch08::conv_fwd_cf_chunked<__nv_bfloat16, 4, 2>"
           "(conv1d::ch08::DirectArgs<__nv_bfloat16>, conv1d::FastDivmod)")
NAIVE = "void conv1d::ch08::conv_fwd_naive<float, 4, 0>(conv1d::ch08::DirectArgs<float>)"
# A raw page as `ncu --csv --page raw` writes it: a header, a row of units, a row per launch.
# Besides the metrics asked for (.sum, .avg.pct) ncu adds their .avg/.max/.min and device
# attributes, which the table leaves out.
RAW_HEADER = ["ID", "Process ID", "Kernel Name", "Block Size", "device__attribute_display_name",
              "launch__grid_size", "launch__block_size", "launch__occupancy_limit_registers",
              "launch__registers_per_thread", "dram__bytes_read.sum", "dram__bytes_read.avg",
              "dram__bytes_read.max", "gpu__time_duration.sum",
              "sm__warps_active.avg.pct_of_peak_sustained_active",
              "sm__warps_active.max.pct_of_peak_sustained_active"]
RAW_UNITS = ["", "", "", "", "", "", "", "block", "register/thread", "byte", "byte", "byte",
             "nsecond", "%", "%"]


def launch(i, name, grid, registers, dram, ns, warps):
    return [str(i), "42", name, "(128, 1, 1)", "NVIDIA H200", grid, "128", "4", registers, dram,
            "5", "9", ns, warps, "99"]


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)


def read_tsv(path):
    with open(path, newline="") as f:
        return list(csv.reader(f, delimiter="\t"))


class SplitName(unittest.TestCase):
    def test_kernel_and_arguments(self):
        self.assertEqual(split_name(CHUNKED), ("conv_fwd_cf_chunked", "__nv_bfloat16/4/2"))
        # The project's namespaces leave the arguments; a name without them stays whole.
        self.assertEqual(split_name("conv1d::ch10::k<conv1d::ch10::PackedRows<float>, 4>"),
                         ("k", "PackedRows<float>/4"))
        self.assertEqual(split_name(" reduce_weight_grads "), ("reduce_weight_grads", ""))


class Ncu(unittest.TestCase):
    def test_medians_by_kernel(self):
        with tempfile.TemporaryDirectory() as d:
            src, out = os.path.join(d, "ncu.csv"), os.path.join(d, "ncu.tsv")
            with open(src, "w", newline="") as f:
                f.write("==WARNING== Note: Running with unmodified GPU clocks.\n")  # (ncu's note)
                w = csv.writer(f, quoting=csv.QUOTE_ALL, lineterminator="\n")
                w.writerows([RAW_HEADER, RAW_UNITS,
                             launch(0, CHUNKED, "1,024", "40", "1,000", "3,000", "50.5"),
                             launch(1, NAIVE, "2,048", "32", "n/a", "1,500.5", "70"),
                             launch(2, CHUNKED, "1,024", "40", "2,000", "5,000", "49.5"),
                             launch(3, CHUNKED, "1,024", "40", "1,000", "4,000", "51"),
                             ["4", "42", CHUNKED]])  # (cut short: not a launch)
            r = run("ncu", src, out)
            self.assertEqual(r.returncode, 0, r.stderr)
            rows = read_tsv(out)
            self.assertEqual(rows[0], [
                "kernel", "args", "launches", "launch__grid_size",
                "launch__occupancy_limit_registers[block]",
                "launch__registers_per_thread[register/thread]", "dram__bytes_read.sum[byte]",
                "gpu__time_duration.sum[nsecond]",
                "sm__warps_active.avg.pct_of_peak_sustained_active[%]"])
            # The first kernel met first; the medians of three launches; "n/a" left empty.
            self.assertEqual(rows[1], ["conv_fwd_cf_chunked", "__nv_bfloat16/4/2", "3", "1024", "4",
                                       "40", "1000", "4000", "50.5"])
            self.assertEqual(rows[2], ["conv_fwd_naive", "float/4/0", "1", "2048", "4", "32", "",
                                       "1500.5", "70"])
            self.assertEqual(len(rows), 3)

    def test_no_raw_table(self):
        with tempfile.TemporaryDirectory() as d:
            src, out = os.path.join(d, "ncu.csv"), os.path.join(d, "ncu.tsv")
            with open(src, "w") as f:
                f.write("==ERROR== No kernels were profiled.\n")
            r = run("ncu", src, out)
            self.assertEqual(r.returncode, 1)
            self.assertIn(f"{src}: no Nsight Compute raw table", r.stderr)
            self.assertFalse(os.path.exists(out))


class Resources(unittest.TestCase):
    def test_registers_stack_local(self):
        with tempfile.TemporaryDirectory() as d:
            src, out = os.path.join(d, "res.txt"), os.path.join(d, "res.tsv")
            with open(src, "w") as f:
                f.write("# cuobjdump --dump-resource-usage, the chapter's kernels (demangled)\n"
                        "REG 56 STACK 0 LOCAL 0 void conv1d::ch08::conv_fwd_cl_tiled"
                        "<float, 4, 1, 32>(conv1d::ch08::DirectArgs<float>, conv1d::FastDivmod)\n"
                        "REG 168 STACK 16 LOCAL 8 void conv1d::ch10::conv_bwd_rows"
                        "<conv1d::ch10::PackedRows<__nv_bfloat16>, 4>(int)\n"
                        "cuobjdump: a line that is no kernel\n"
                        "REG 32 STACK 0 LOCAL 0 conv_fwd_cf_vector<__half, 4>\n")
            r = run("resources", src, out)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(read_tsv(out), [  # (sorted by kernel name)
                ["kernel", "args", "registers", "stack", "local"],
                ["conv_bwd_rows", "PackedRows<__nv_bfloat16>/4", "168", "16", "8"],
                ["conv_fwd_cf_vector", "__half/4", "32", "0", "0"],
                ["conv_fwd_cl_tiled", "float/4/1/32", "56", "0", "0"]])

    def test_no_lines(self):
        with tempfile.TemporaryDirectory() as d:
            src = os.path.join(d, "res.txt")
            with open(src, "w") as f:
                f.write("cuobjdump fatal   : Could not open input file\n")
            r = run("resources", src, os.path.join(d, "res.tsv"))
            self.assertEqual(r.returncode, 1)
            self.assertIn(f"{src}: no 'REG n STACK n LOCAL n name' lines", r.stderr)


class CommandLine(unittest.TestCase):
    def test_missing_input_is_one_line(self):
        with tempfile.TemporaryDirectory() as d:
            src = os.path.join(d, "missing.csv")
            for command in ("ncu", "resources"):
                r = run(command, src, os.path.join(d, "out.tsv"))
                self.assertEqual(r.returncode, 1)
                self.assertEqual(r.stderr.strip(), f"{src}: No such file or directory")

    def test_usage(self):
        r = run("ncu")
        self.assertEqual(r.returncode, 2)
        self.assertIn("result_tables.py ncu NCU_RAW.csv OUT.tsv", r.stderr)
        self.assertIn("result_tables.py resources CUOBJDUMP.txt OUT.tsv", r.stderr)
        # The experiments' A/B commands are gone.
        with tempfile.TemporaryDirectory() as d:
            r = run("ab", d, os.path.join(d, "out.tsv"))
            self.assertEqual(r.returncode, 2)
            self.assertNotIn("result_tables.py ab", r.stderr)


if __name__ == "__main__":
    unittest.main()
