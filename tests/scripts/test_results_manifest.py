"""scripts/results_manifest.py: the parts of a split GPU check become one folder only when they
name one commit and one GPU, have no failed row and no file twice. Standard library only (run
with plain Python: python3 tests/scripts/test_results_manifest.py)."""
import contextlib
import io
import pathlib
import sys
import tempfile
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import results_manifest  # noqa: E402


def part(root, name, commit="abc1234", gpu="GPU X, 580.1, 80 GiB", rows=("| build | b | pass | |",),
         files=("a.tsv",)):
    p = root / name
    (p / "results").mkdir(parents=True)
    (p / "check.tsv").write_text(f"commit\t{commit}\ntree_clean\tyes\ngpu\t{gpu}\ndate\t2026-12-07 10:00 UTC\n"
                                 f"steps\tctest\nchapters\t*\nsections\t*\nseconds\t42\n")
    (p / "summary.md").write_text("| step | what | result | note |\n|---|---|---|---|\n" + "\n".join(rows) + "\n")
    for f in files:
        (p / "results" / f).write_text(f"{name}\n")
    return p


def run(*args):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        rc = results_manifest.main([str(a) for a in args])
    return rc, err.getvalue()


class Manifest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = pathlib.Path(self.tmp.name)

    def tearDown(self):
        self.tmp.cleanup()

    def test_parts_of_one_check(self):
        a = part(self.root, "a", files=("a.tsv",))
        b = part(self.root, "b", rows=("| ch01 | default | pass | |", "| ch02 | x | pass | |"), files=("b.tsv",))
        out = self.root / "out"
        self.assertEqual(run(a, b, "--out", out)[0], 0)
        self.assertEqual((out / "a.tsv").read_text(), "a\n")
        self.assertEqual((out / "b.tsv").read_text(), "b\n")
        manifest = (out / "MANIFEST.md").read_text()
        self.assertIn("commit abc1234 on GPU X, 580.1, 80 GiB", manifest)
        self.assertIn("| 2 | 2026-12-07 10:00 UTC | ctest |", manifest)
        self.assertEqual((out / "gpu_check_summary.md").read_text().count("| pass |"), 3)

    def test_tables_of_several_parts_become_one(self):
        a = part(self.root, "a", files=())
        b = part(self.root, "b", files=())
        (a / "results" / "s.tsv").write_text("chapter\tms\n01\t1.0\n")
        (b / "results" / "s.tsv").write_text("chapter\tms\n08\t0.2\n10\t0.3\n")
        out = self.root / "out"
        self.assertEqual(run(a, b, "--out", out)[0], 0)
        self.assertEqual((out / "s.tsv").read_text(), "chapter\tms\n01\t1.0\n08\t0.2\n10\t0.3\n")
        (b / "results" / "s.tsv").write_text("other\theader\n")
        rc, err = run(a, b, "--out", self.root / "out2")
        self.assertEqual(rc, 1)
        self.assertIn("not one table", err)

    def test_refused(self):
        cases = {
            "commit": (part(self.root, "c1"), part(self.root, "c2", commit="fff0000", files=("z.tsv",))),
            "gpu": (part(self.root, "g1"), part(self.root, "g2", gpu="GPU Y", files=("z.tsv",))),
            "failed": (part(self.root, "f1", rows=("| ch01 | default | FAIL | see log |",)),),
            "not one table": (part(self.root, "t1"), part(self.root, "t2")),
        }
        for why, parts in cases.items():
            out = self.root / ("out_" + why.replace(" ", "_"))
            rc, err = run(*parts, "--out", out)
            self.assertEqual(rc, 1, why)
            self.assertIn(why if why != "failed" else "failed row", err)
            self.assertFalse(out.exists(), why)


if __name__ == "__main__":
    unittest.main()
