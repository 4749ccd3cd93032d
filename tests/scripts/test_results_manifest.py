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
         files=("a.tsv",), number=None):
    p = root / name
    (p / "results").mkdir(parents=True)
    (p / "check.tsv").write_text(f"commit\t{commit}\ntree_clean\tyes\ngpu\t{gpu}\ndate\t2026-12-07 10:00 UTC\n"
                                 + (f"part\t{number}\n" if number else "") +
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
        self.assertIn("commit abc1234 on GPU X, 80 GiB (name, memory; driver 580.1)", manifest)
        self.assertIn("| 2 | 2026-12-07 10:00 UTC | 580.1 | ctest |", manifest)
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

    def test_out_replaces_an_earlier_check(self):
        out = self.root / "out"
        self.assertEqual(run(part(self.root, "old", files=("gone.tsv",)), "--out", out)[0], 0)
        self.assertEqual(run(part(self.root, "new", files=("b.tsv",)), "--out", out)[0], 0)
        self.assertFalse((out / "gone.tsv").exists())
        self.assertTrue((out / "b.tsv").is_file())
        # A folder that is not a check's is left alone.
        other = self.root / "other"
        other.mkdir()
        (other / "notes.txt").write_text("mine\n")
        rc, err = run(part(self.root, "x"), "--out", other)
        self.assertEqual(rc, 1)
        self.assertIn("not a GPU check's folder", err)
        self.assertTrue((other / "notes.txt").is_file())

    def test_parts_kept_between_sessions(self):
        kept = self.root / "kept"
        first = part(self.root, "p1", files=("a.tsv",), number="1")
        (first / "logs").mkdir()
        (first / "logs" / "section_seconds.tsv").write_text("15-book.sh\t238\n")
        (first / "logs" / "big.log").write_text("not kept\n")
        self.assertEqual(run(first, "--keep", kept)[0], 0)
        self.assertEqual(sorted(str(f.relative_to(kept)) for f in kept.rglob("*") if f.is_file()),
                         ["part-1/check.tsv", "part-1/logs/section_seconds.tsv", "part-1/results/a.tsv",
                          "part-1/summary.md"])
        # The same part twice, another commit or another GPU than the kept parts: refused.
        rc, err = run(part(self.root, "again", files=("c.tsv",), number="1"), "--keep", kept)
        self.assertEqual((rc, "kept already" in err), (1, True))
        rc, err = run(part(self.root, "other", commit="fff0000", files=("c.tsv",), number="2"), "--keep", kept)
        self.assertEqual((rc, "differ in commit" in err), (1, True))
        # The same part twice in an assembly (kept and fetched again): refused, its rows would double.
        rc, err = run(*sorted(kept.glob("part-*")), part(self.root, "p1b", files=("d.tsv",), number="1"),
                      "--out", self.root / "twice")
        self.assertEqual((rc, "part(s) 1 given more than once" in err), (1, True))
        # The last assembly joins the kept parts with the new ones.
        second = part(self.root, "p2", files=("b.tsv",), number="2")
        out = self.root / "out"
        self.assertEqual(run(*sorted(kept.glob("part-*")), second, "--out", out)[0], 0)
        self.assertEqual(sorted(f.name for f in out.iterdir()),
                         ["MANIFEST.md", "a.tsv", "b.tsv", "gpu_check_summary.md"])
        self.assertIn("| 2 | 2026-12-07 10:00 UTC | 580.1 |", (out / "MANIFEST.md").read_text())

    def test_drivers_may_differ(self):
        # Parts run on two machines of one model (name and memory) with different drivers are one
        # check; MANIFEST.md gives each part's driver. Another memory size is another model.
        one = part(self.root, "d1", number="1")
        two = part(self.root, "d2", gpu="GPU X, 590.2, 80 GiB", files=("b.tsv",), number="2")
        out = self.root / "out"
        self.assertEqual(run(one, two, "--out", out)[0], 0)
        manifest = (out / "MANIFEST.md").read_text()
        self.assertIn("on GPU X, 80 GiB (name, memory; drivers 580.1, 590.2)", manifest)
        self.assertIn("| 2 | 2026-12-07 10:00 UTC | 590.2 |", manifest)
        other = part(self.root, "d3", gpu="GPU X, 580.1, 141 GiB", files=("c.tsv",), number="3")
        rc, err = run(one, other, "--out", self.root / "out2")
        self.assertEqual((rc, "differ in gpu model" in err), (1, True))
        self.assertFalse((self.root / "out2").exists())

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
