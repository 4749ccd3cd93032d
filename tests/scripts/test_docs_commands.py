"""scripts/docs_commands.py on a made-up page: what it takes as a command (code blocks of every kind,
inline spans, continuations, chains, comments, prompts, variables) and what it leaves (formulas,
diagrams, program output, other languages); how it classifies them; and --parse and --run against a
made-up build tree whose chapter refuses an unknown flag, so that a page with a bad flag fails. With
CONV1D_BUILD_DIR (CTest sets it), the same against the real chapter 01 (CONV1D_PARSE_ONLY, in
common/runner.cu). Standard library only (run with plain Python: python3
tests/scripts/test_docs_commands.py)."""
import contextlib
import io
import os
import pathlib
import stat
import sys
import tempfile
import textwrap
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import docs_commands  # noqa: E402

PAGE = textwrap.dedent("""\
    # A page

    Run it:

        build/default/chapters/99_fake/ch99_fake --batch 2   # a comment
        ch99_fake --dim 3

    A formula, not a command:

        out[t] = sum_k weight[k] * x[t - k]

    ```bash
    cmake --build --preset default --target ch99_fake && \\
      ./build/default/chapters/99_fake/ch99_fake --bias
    ```

    ```console
    $ ch99_fake --batch 1
    ch99_fake: arguments accepted
    ```

    ```
    a diagram ──> with arrows
    ```

    ```cuda
    ch99_fake --bogus   // code, not a command
    ```

        b=build/default
        CONV1D_STREAM_GATE=0 \\
          $b/chapters/99_fake/ch99_fake --batch 4
        ncu --csv -o ch99_fake ./ch99_fake --dim 8 | gzip > x.gz
        python -m profiling plot profiles/SOME_GPU/builtin

    Inline: run `ch99_fake --batch 5` and then `ch99_fake --dim <N>`; `ch99_fake` alone names it, and
    `python -m profiling
    parse --brief traces` spans two lines.
    """)


def fake_build(d):
    """A build tree with one chapter, ch99_fake: knows --batch, --dim, --bias; refuses anything else
    with exit 2, as the real chapters do; with CONV1D_PARSE_ONLY=1 it says the arguments were accepted."""
    exe = pathlib.Path(d) / "chapters" / "99_fake" / "ch99_fake"
    exe.parent.mkdir(parents=True)
    exe.write_text(textwrap.dedent("""\
        #!/bin/sh
        while [ $# -gt 0 ]; do
          case "$1" in
            --batch|--dim) shift ;;
            --bias) ;;
            *) echo "ch99_fake: unknown flag '$1' (see --help)" >&2; exit 2 ;;
          esac
          shift
        done
        if [ "$CONV1D_PARSE_ONLY" = 1 ]; then echo "ch99_fake: arguments accepted"; exit 0; fi
        echo VERIFIED
        """))
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    (pathlib.Path(d) / "CMakeFiles").mkdir()
    (pathlib.Path(d) / "CMakeFiles" / "TargetDirectories.txt").write_text(
        f"{d}/chapters/99_fake/CMakeFiles/ch99_fake.dir\n")
    return exe


def run_main(*args):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = docs_commands.main([str(a) for a in args])
    return rc, out.getvalue()


class Extract(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.page = pathlib.Path(self.tmp.name) / "page.md"
        self.page.write_text(PAGE)
        self.cmds, self.skipped = docs_commands.extract(self.page, "page.md")

    def tearDown(self):
        self.tmp.cleanup()

    def test_commands_and_lines(self):
        got = [(c.line, c.kind, c.argv) for c in self.cmds]
        self.assertEqual(got, [
            (5, "chapter", ["build/default/chapters/99_fake/ch99_fake", "--batch", "2"]),
            (6, "chapter", ["ch99_fake", "--dim", "3"]),
            (13, "cmake", ["cmake", "--build", "--preset", "default", "--target", "ch99_fake"]),
            (13, "chapter", ["./build/default/chapters/99_fake/ch99_fake", "--bias"]),
            (18, "chapter", ["ch99_fake", "--batch", "1"]),
            (31, "chapter", ["build/default/chapters/99_fake/ch99_fake", "--batch", "4"]),
            (33, "profiler", ["ncu", "--csv", "-o", "ch99_fake", "./ch99_fake", "--dim", "8"]),
            (34, "profiling", ["python", "-m", "profiling", "plot", "profiles/SOME_GPU/builtin"]),
            (36, "chapter", ["ch99_fake", "--batch", "5"]),
            (36, "chapter", ["ch99_fake", "--dim", "<N>"]),
            (37, "profiling", ["python", "-m", "profiling", "parse", "--brief", "traces"]),
        ])

    def test_details(self):
        by_line = {}
        for c in self.cmds:
            by_line.setdefault(c.line, []).append(c)
        # `a && b`: b follows a; a comment is not part of the command.
        a, b = by_line[13]
        self.assertEqual(b.chain, self.cmds.index(a))
        self.assertNotIn("comment", by_line[5][0].shown)
        # NAME=value before a command goes to its environment; `b=...` alone is a variable.
        self.assertEqual(by_line[31][0].env, {"CONV1D_STREAM_GATE": "0"})
        # A profiler's chapter is the word that runs, not `-o ch99_fake` (an output name).
        self.assertEqual(by_line[33][0].inner, ["./ch99_fake", "--dim", "8"])
        # Placeholders: <N>, SOME_GPU; inline spans are marked.
        self.assertEqual(by_line[36][1].placeholder, "<N>")
        self.assertEqual(by_line[34][0].placeholder, "profiles/SOME_GPU/builtin")
        self.assertTrue(all(c.inline for c in by_line[36] + by_line[37]))
        self.assertFalse(by_line[5][0].inline)

    def test_what_is_not_a_command(self):
        skipped = {(b.line, b.lang) for b in self.skipped}
        self.assertEqual(skipped, {(10, "indented"), (22, "")})
        shown = " ".join(c.shown for c in self.cmds)
        self.assertNotIn("--bogus", shown)  # a cuda block
        self.assertNotIn("accepted", shown)  # console output
        self.assertNotIn("-m profiling plot profiles/SOME_GPU/builtin --", shown)


class Check(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.d = pathlib.Path(self.tmp.name)
        self.build = self.d / "build"
        fake_build(self.build)

    def tearDown(self):
        self.tmp.cleanup()

    def page(self, text):
        p = self.d / "page.md"
        p.write_text(textwrap.dedent(text))
        return p

    def test_parse_passes(self):
        p = self.page(PAGE)
        rc, out = run_main("--parse", "--build", self.build, p)
        self.assertEqual(rc, 0, out)
        self.assertRegex(out, r"(?m)^pass .*page\.md:5 .*\n.*arguments accepted")
        self.assertRegex(out, r"(?m)^checked .*page\.md:13 +cmake .*\n.*target 'ch99_fake' exists")
        self.assertRegex(out, r"(?m)^placeholder .*page\.md:36 .*<N>")
        self.assertRegex(out, r"0 FAIL")

    def test_a_bad_flag_fails(self):
        p = self.page("""\
            Text.

                ch99_fake --batch 2
                build/default/chapters/99_fake/ch99_fake --bogus 3

            And `ch99_fake --dim 2 --nope` inline, and a wrong path:

                build/default/chapters/98_gone/ch99_fake --batch 2
            """)
        rc, out = run_main("--parse", "--build", self.build, p)
        self.assertEqual(rc, 1, out)
        self.assertIn("FAIL page.md:4: build/default/chapters/99_fake/ch99_fake --bogus 3",
                      out.replace(str(self.d) + "/", ""))
        self.assertIn("unknown flag '--bogus'", out)
        self.assertIn("unknown flag '--nope'", out)
        self.assertRegex(out, r"98_gone/ch99_fake not found")
        self.assertIn("3 FAIL", out)

    def test_cmake_preset_and_target(self):
        p = self.page("""\
            Text.

                cmake --build --preset nosuch --target ch99_fake
                cmake --build --preset default --target nosuch
            """)
        rc, out = run_main("--parse", "--build", self.build, p)
        self.assertEqual(rc, 1, out)
        self.assertIn("no build preset 'nosuch'", out)
        self.assertIn("no target 'nosuch'", out)

    def test_profiling_options(self):
        p = self.page("""\
            Text.

                python -m profiling plot traces --out charts
                python -m profiling plot traces --no-such-option
            """)
        rc, out = run_main("--parse", "--build", self.build, p)
        self.assertEqual(rc, 1, out)
        self.assertRegex(out, r"(?m)^pass .*:3 .*\n.*profiling/'s parser")
        self.assertRegex(out, r"(?m)^FAIL .*:4 .*\n.*not in its --help: --no-such-option")

    def test_run(self):
        p = self.page("""\
            Text.

                ch99_fake --batch 2
                ch99_fake --bogus
                ch99_fake --dim <N>
            """)
        rc, out = run_main("--run", "--build", self.build, "--work", self.d / "work", p)
        self.assertEqual(rc, 1, out)
        self.assertRegex(out, r"(?m)^pass .*:3 ")
        self.assertRegex(out, r"(?m)^FAIL .*:4 .*\n.*exit 2: ch99_fake: unknown flag '--bogus'")
        self.assertRegex(out, r"(?m)^placeholder .*:5 ")
        self.assertIn("1 pass", out)
        log = next((self.d / "work" / "logs").glob("*_3.log")).read_text()
        self.assertIn("VERIFIED", log)


@unittest.skipUnless(os.environ.get("CONV1D_BUILD_DIR"), "CONV1D_BUILD_DIR not set (CTest sets it)")
class RealChapter(unittest.TestCase):
    """Chapter 01 built with the project: CONV1D_PARSE_ONLY=1 accepts good flags, refuses bad ones."""

    def test_parse_only(self):
        build = pathlib.Path(os.environ["CONV1D_BUILD_DIR"])
        if not (build / "chapters" / "01_host_img2col" / "ch01_host_img2col").is_file():
            self.skipTest("ch01_host_img2col not built")
        with tempfile.TemporaryDirectory() as d:
            p = pathlib.Path(d) / "page.md"
            p.write_text("    build/default/chapters/01_host_img2col/ch01_host_img2col --batch 2 --dtype fp16\n\n"
                         "    build/default/chapters/01_host_img2col/ch01_host_img2col --dtype fp8\n\n"
                         "    build/default/chapters/01_host_img2col/ch01_host_img2col --nope\n")
            rc, out = run_main("--parse", "--build", build, p)
        self.assertEqual(rc, 1, out)
        self.assertRegex(out, r"(?m)^pass .*:1 .*\n.*arguments accepted")
        self.assertRegex(out, r"(?m)^FAIL .*:3 .*\n.*exit 2: ch01_host_img2col: .*fp8")
        self.assertRegex(out, r"(?m)^FAIL .*:5 .*\n.*exit 2: ch01_host_img2col: unknown flag '--nope'")


if __name__ == "__main__":
    unittest.main()
