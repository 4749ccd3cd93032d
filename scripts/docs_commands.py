#!/usr/bin/env python3
"""Every shell command the pages show (README.md, docs/**/*.md), checked: the pages work as written.

  docs_commands.py --list [FILES]                  each command: file:line, kind, command; then the
                                                   code blocks not taken as commands, and the counts
  docs_commands.py --parse --build DIR [FILES]     without a GPU (CTest's docs.commands_parse)
  docs_commands.py --run --build DIR [FILES]       on the GPU machine (scripts/gpu-check.d/70-docs-commands.sh)
      [--python PY] [--timeout S] [--work DIR] [--logs DIR]

FILES (Markdown) default to README.md and docs/**/*.md of the repository this script is in.

What counts as a command: the lines of ```bash, ```sh, ```shell and ```console blocks (in a block
with `$ ` prompts only the prompted lines, the rest is output), and of plain ``` and four-space
indented blocks whose first line starts with a command (a chapter executable, cmake, python, ncu,
...: formulas, diagrams and program output are not); a trailing `\\` joins the next line, `# ...` is
a comment, `a && b` is two commands on one line, `NAME=value` alone sets a variable for the block's
later lines ($NAME), `NAME=value cmd` passes NAME to cmd. Inline code spans count too when they hold
a command with arguments (`ch05_wmma_gemm --batch 8 ...`); a span may name a command in part, so a
missing required argument is not held against it. A word such as `...`, `<N>` or an all-capitals
name (RUN_DIR, FILE) is a placeholder: such a command cannot run as written and is reported as one.

Kinds: chapter (build/<preset>/chapters/NN_name/chNN_name, or chNN_name alone, ./chNN_name), tour
(conv1d_tour), test-helper (build/<preset>/tests/...), profiling (python -m profiling ...), script
(scripts/*.sh|py), cmake, ctest, profiler (ncu, nsys, compute-sanitizer, rocprofv3, rocprof, rocpd;
with the chapter command it wraps, if any), tool (cuobjdump, nvdisasm: no GPU needed), git, other.
`build/<preset>` (and $PWD/build/<preset>) becomes --build DIR; a chapter named alone (or ./chNN_name,
as the profiling page runs them) is the one in DIR.

--parse: a chapter command runs with CONV1D_PARSE_ONLY=1 (common/runner.h: the chapter checks its
command line and exits, no GPU needed) and must print "arguments accepted"; a profiler's chapter
command likewise (the profiler is not run); the tour, test helpers, Python scripts and profiling/
commands must answer --help with exit 0 and list every --option the command uses, and profiling/
commands must pass its own argument parser; cmake commands' presets (CMakePresets.json) and
--target names (the build tree) must exist, and ctest's -R must select tests; shell scripts get
`bash -n`; read-only git commands and toolkit tools (where installed, on files that exist) run, in a
scratch folder. Everything else is listed as not run, with why.

--run: every command runs for real, in page order, in one scratch folder (--work, default a new
temporary folder, holding a copy of results/ so that commands on results/ touch no committed file),
each with a time limit (--timeout, default 600 s), its output in --logs (default: the scratch folder's
logs/); python is --python (numpy and matplotlib for the charts). A command whose tool is missing
(ncu, nsys, cuobjdump), AMD's builds and profilers, and cmake commands (they configure and build
trees of their own) are listed as not run, with why; EXCLUDE below lists the other commands that are
not run, and why, and DEFER those run last. A page's folder named after its GPU (profiles/NVIDIA_H200/)
is read as this GPU's, and the report says so. Exit status (both modes): 1 when a command failed, 0
otherwise; 2 on a bad command line. Standard library only.
"""
import argparse
import dataclasses
import fnmatch
import json
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]

# Commands not run, or run otherwise than as written, and why: (page glob, text in the command,
# modes, reason). "parse" and "run" are the modes the entry applies to.
EXCLUDE = [
    ("docs/05_wmma_gemm.md", "--block-tile 128x128x32w64", {"parse", "run"},
     "an exercise: the tile 128x128x32w64 exists only after the reader adds it to the block "
     "variant's table (the chapter refuses it until then)"),
    ("docs/profiling.md", "instantiate.cu", {"parse", "run"},
     "compiles the reader's own instantiate.cu (one is in the history: ef6ca0a:results/grid-constant/)"),
    ("docs/profiling.md", "ncu --import rep.ncu-rep", {"run"},
     "reads rep.ncu-rep, which the ncu command above it writes, and that one cannot run as written ('...')"),
    ("docs/profiling.md", "sass-lines src.csv.gz", {"run"},
     "reads src.csv.gz, which the ncu commands above it write, and the first of them cannot run as written"),
    ("docs/profiling.md", "profiling plot out", {"run"},
     "reads out/, which the rocprofv3 commands above it write on an AMD GPU"),
]

# Run after every other command (--run), with why: they read what a command of another page writes.
DEFER = [
    ("docs/01_host_img2col.md", "parse --brief traces/ch01_host_img2col",
     "reads the traces of docs/profiling.md's CUPTI tracer command"),
]

CHAPTER = re.compile(r"^ch(\d\d)_[a-z0-9_]+$")
KNOWN = {"cmake", "ctest", "python", "python3", "pip", "pip3", "git", "ncu", "nsys", "compute-sanitizer",
         "rocprofv3", "rocprof", "rocpd", "nvcc", "hipcc", "sudo", "apt-get", "apt", "bash", "sh", "cd",
         "export", "cuobjdump", "nvidia-smi", "ninja", "make", "conv1d_tour", "gzip", "ls", "cat", "rm",
         "mkdir", "cp", "mv", "diff", "env"}
TOOLS = {"cuobjdump", "nvdisasm"}  # the CUDA toolkit's, on files: no GPU needed
PROFILERS = {"ncu", "nsys", "compute-sanitizer", "rocprofv3", "rocprof", "rocpd"}
AMD_TOOLS = {"rocprofv3", "rocprof", "rocpd"}
AMD_PRESETS = {"hip", "hip-check"}
OPERATORS = {"&&", "||", ";", "|", ">", ">>", "<", "&", ">&", "2>", "&>"}
CHAIN = {"&&", "||", ";"}
ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
BUILD = re.compile(r"(?:(?<=^)|(?<==)|(?<=:))(?:\$PWD/|\$\{PWD\}/|\./)?build/([A-Za-z0-9_.-]+)")
READ_ONLY_GIT = {"show", "ls-tree", "log", "diff", "cat-file", "rev-parse", "status", "grep", "blame"}
PLACEHOLDER_ANGLE = re.compile(r"<([A-Za-z][A-Za-z0-9_.-]*)>")
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([^`\s]*)")
COMMAND_FENCES = {"bash", "sh", "shell", "console", "shell-session"}
STATUSES = ["pass", "checked", "FAIL", "not run", "placeholder"]


@dataclasses.dataclass
class Command:
    file: str                 # the page, relative to the repository where it is in it
    line: int                 # where the command starts
    shown: str                # the command as the page shows it (continuations joined, no comment)
    words: list               # its words, the block's variables expanded, NAME=value prefixes removed
    env: dict                 # NAME=value prefixes
    inline: bool = False      # an inline code span
    after_and: bool = False   # the second of `a && b`
    chain: int = -1           # then the index of a in the list of commands
    kind: str = ""
    argv: list = dataclasses.field(default_factory=list)   # the words before any | or redirection
    inner: list = None        # a profiler's chapter command (from the chapter's word on)
    placeholder: str = ""     # the first placeholder word

    def where(self):
        return f"{self.file}:{self.line}"


@dataclasses.dataclass
class Block:
    file: str
    line: int
    lang: str                 # fence info string, "" for a plain fence, "indented"
    lines: list               # (line number, text), indentation removed


# ---------------------------------------------------------------------------------------------
# Extraction.

def strip_comment(text):
    """The text before a `#` that starts a word outside quotes."""
    quote = None
    for i, c in enumerate(text):
        if quote:
            if c == quote:
                quote = None
            elif c == "\\" and quote == '"':
                continue
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or text[i - 1] in " \t"):
            return text[:i].rstrip()
    return text.rstrip()


def split_words(text):
    """Shell words and operators (&&, |, >, ...) of one logical line, its comment removed; None when
    the line is not valid shell (an unclosed quote)."""
    # <N>-style placeholders are words, not redirections.
    text = PLACEHOLDER_ANGLE.sub(lambda m: "\x01" + m.group(1) + "\x02", strip_comment(text))
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        return [w.replace("\x01", "<").replace("\x02", ">") for w in lexer]
    except ValueError:
        return None


def blocks_and_spans(path, rel):
    """The code blocks of a Markdown file, and its inline code spans as (line, text)."""
    lines = pathlib.Path(path).read_text(encoding="utf-8").split("\n")
    blocks, prose = [], []
    i = 0
    prev_blank = True
    while i < len(lines):
        line = lines[i]
        m = FENCE.match(line)
        if m:
            indent, fence, lang = len(m.group(1)), m.group(2), m.group(3).lower()
            start = i + 1
            body = []
            i += 1
            while i < len(lines) and not re.match(r"^\s*" + re.escape(fence[0]) + "{%d,}\\s*$" % len(fence), lines[i]):
                text = lines[i]
                body.append((i + 1, text[indent:] if text[:indent].strip() == "" else text.lstrip()))
                i += 1
            blocks.append(Block(rel, start, lang, body))
            i += 1
            prev_blank = True
            continue
        if (line.startswith("    ") or line.startswith("\t")) and prev_blank and line.strip():
            body = []
            while i < len(lines) and (lines[i].startswith("    ") or lines[i].startswith("\t") or not lines[i].strip()):
                body.append((i + 1, lines[i]))
                i += 1
            while body and not body[-1][1].strip():
                body.pop()
            width = min(len(t) - len(t.lstrip()) for _, t in body if t.strip())
            blocks.append(Block(rel, body[0][0], "indented", [(n, t[width:]) for n, t in body]))
            prev_blank = False
            continue
        prose.append((i + 1, line))
        prev_blank = not line.strip()
        i += 1
    return blocks, inline_spans(prose)


def inline_spans(prose):
    """Inline code spans (single backticks, possibly across a line break within a paragraph):
    (line where the span starts, its text with the line break as a space)."""
    spans = []
    para = []

    def flush():
        if not para:
            return
        text = "\n".join(t for _, t in para)
        starts = []
        pos = 0
        for n, t in para:
            starts.append((pos, n))
            pos += len(t) + 1
        for m in re.finditer(r"(?<!`)`([^`]+)`(?!`)", text):
            line = max(n for p, n in starts if p <= m.start())
            spans.append((line, " ".join(m.group(1).split())))
        para.clear()

    for n, t in prose:
        if not t.strip() or t.lstrip().startswith("<!--") and t.rstrip().endswith("-->") and "`" not in t:
            flush()
            continue
        para.append((n, t))
    flush()
    return spans


def first_word(words):
    """The command word after any NAME=value prefixes, or None."""
    for w in words:
        if not ASSIGN.match(w):
            return w
    return None


def looks_like_command(words):
    w = first_word(words)
    if w is None:
        return bool(words)  # NAME=value alone: a variable for later lines
    base = os.path.basename(w)
    return (base in KNOWN or bool(CHAPTER.match(base)) or w.startswith(("./", "build/", "scripts/", "$"))
            or (w.startswith("/") and "/bin/" in w))


def logical_lines(body):
    """(line, text) of each logical line: `\\` continuations joined."""
    out = []
    cur, start = None, 0
    for n, t in body:
        if cur is None:
            cur, start = "", n
        s = t.rstrip()
        if s.endswith("\\") and not s.endswith("\\\\"):
            cur += s[:-1].strip() + " "
            continue
        cur += s.strip()
        out.append((start, cur))
        cur = None
    if cur is not None:
        out.append((start, cur.strip()))
    return out


def expand(word, variables):
    def sub(m):
        name = m.group(1) or m.group(2)
        return variables.get(name, m.group(0))
    return re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)", sub, word)


def commands_of_line(rel, n, text, variables, inline=False):
    """The commands of one logical line (several for `a && b`); updates `variables` for a line that
    only assigns."""
    words = split_words(text)
    if not words:
        return []
    if all(ASSIGN.match(w) for w in words):
        for w in words:
            name, _, value = w.partition("=")
            variables[name] = expand(value, variables)
        return []
    cmds, cur, shown = [], [], []
    after_and = False
    for w in words + [";"]:
        if w in CHAIN:
            if cur:
                env = {}
                k = 0
                while k < len(cur) and ASSIGN.match(cur[k]):
                    name, _, value = cur[k].partition("=")
                    env[name] = expand(value, variables)
                    k += 1
                c = Command(rel, n, " ".join(shown), [expand(x, variables) for x in cur[k:]], env, inline)
                c.after_and = after_and
                cmds.append(c)
            after_and = w == "&&"
            cur, shown = [], []
            continue
        cur.append(w)
        shown.append(w if w in OPERATORS or not re.search(r"[\s'\"]", w) and w else shlex.quote(w))
    return cmds


def extract(path, rel=None):
    """(commands, blocks not taken as commands) of one Markdown file."""
    rel = rel or str(path)
    blocks, spans = blocks_and_spans(path, rel)
    cmds, skipped = [], []
    for b in blocks:
        if b.lang not in COMMAND_FENCES and b.lang not in ("", "indented"):
            continue
        lines = logical_lines(b.lines)
        prompted = [(n, t[2:]) for n, t in lines if t.startswith("$ ")]
        if prompted:
            lines = prompted  # the rest is output
        lines = [(n, t) for n, t in lines if t.strip() and not t.lstrip().startswith("#")]
        if not lines:
            continue
        if b.lang in ("", "indented") and not prompted:
            first = split_words(lines[0][1])
            if first is None or not looks_like_command(first):
                skipped.append(b)
                continue
        variables = {}
        block_cmds = []
        for n, t in lines:
            words = split_words(t)
            if words is None:
                block_cmds.append(Command(rel, n, t, [], {}, kind="other"))
                continue
            if b.lang in ("", "indented") and not prompted and not looks_like_command(words):
                continue  # output shown under a command
            block_cmds.extend(commands_of_line(rel, n, t, variables))
        cmds.extend(block_cmds)
    for n, text in spans:
        words = split_words(text)
        if not words or len([w for w in words if not ASSIGN.match(w)]) < 2 or not looks_like_command(words):
            continue
        w = first_word(words)
        if not (os.path.basename(w) in KNOWN or CHAPTER.match(os.path.basename(w))
                or w.startswith(("./", "build/", "scripts/"))):
            continue
        cmds.extend(commands_of_line(rel, n, text, {}, inline=True))
    cmds.sort(key=lambda c: (c.line, c.inline))  # stable: a line's chain stays in order
    for i, c in enumerate(cmds):
        c.chain = i - 1 if c.after_and else -1
    for c in cmds:
        classify(c)
    return cmds, skipped


def classify(c):
    words = c.words
    cut = len(words)
    for i, w in enumerate(words):
        if w in OPERATORS:
            cut = i
            break
    c.argv = words[:cut]
    c.placeholder = next((w for w in c.argv if is_placeholder(w)), "")
    if not c.argv:
        c.kind = c.kind or "other"
        return
    a0 = c.argv[0]
    base = os.path.basename(a0)
    if CHAPTER.match(base):
        c.kind = "chapter"
    elif base == "conv1d_tour":
        c.kind = "tour"
    elif re.match(r"^(\./)?build/[^/]+/tests/", a0) or base.startswith(("conv1d_bench", "conv1d_tests")):
        c.kind = "test-helper"
    elif base in ("python", "python3") and len(c.argv) >= 3 and c.argv[1] == "-m" and \
            c.argv[2].split(".")[0] == "profiling":
        c.kind = "profiling"
    elif a0.startswith(("scripts/", "./scripts/")) or (
            base in ("python", "python3", "bash", "sh") and len(c.argv) >= 2
            and c.argv[1].startswith(("scripts/", "./scripts/"))):
        c.kind = "script"
    elif base in ("cmake", "ctest", "git"):
        c.kind = base
    elif base in PROFILERS:
        c.kind = "profiler"
        c.inner = wrapped_chapter(c.argv)
    elif base in TOOLS:
        c.kind = "tool"
    else:
        c.kind = "other"


def wrapped_chapter(argv):
    """The chapter command a profiler runs: after `--`, or from the first word that names a chapter
    executable (./chNN_name, a path through chapters/, or the name alone where it is no option's
    value: `-o ch01_host_img2col` names an output)."""
    if "--" in argv:
        rest = argv[argv.index("--") + 1:]
        return rest if rest and CHAPTER.match(os.path.basename(rest[0])) else None
    for i, w in enumerate(argv[1:], 1):
        base = os.path.basename(w)
        if not CHAPTER.match(base):
            continue
        if w.startswith("./") or "/chapters/" in w:
            return argv[i:]
        prev = argv[i - 1]
        if w == base and not (prev.startswith("-") and "=" not in prev):
            return argv[i:]
    return None


def is_placeholder(word):
    if "..." in word or "…" in word or re.search(r"<[^<>]+>", word):
        return True
    if word.startswith("-"):
        word = word.partition("=")[2]  # an option: its value only (-DNDEBUG is no placeholder)
    for part in re.split(r"[/:=,.]", word):
        if re.fullmatch(r"[A-Z][A-Z_]{2,}", part):
            return True
    return False


def pages(root):
    files = [root / "README.md"] + sorted((root / "docs").rglob("*.md"))
    return [f for f in files if f.is_file()]


def rel_to(path, root):
    try:
        return str(pathlib.Path(path).resolve().relative_to(root))
    except ValueError:
        return str(path)


def excluded(c, mode):
    for glob, text, modes, why in EXCLUDE:
        if mode in modes and fnmatch.fnmatch(c.file, glob) and text in c.shown:
            return why
    return ""


# ---------------------------------------------------------------------------------------------
# Checking.

class Checker:
    def __init__(self, args):
        self.root = pathlib.Path(args.root).resolve()
        self.build = pathlib.Path(args.build).resolve() if args.build else None
        self.mode = args.mode
        self.python = args.python or sys.executable
        self.timeout = args.timeout
        self.work = None
        self.logs = None
        self.count = 0
        self.adapted = []
        self._presets = None
        self._targets = None

    # -- helpers

    def map_build(self, word):
        return BUILD.sub(lambda m: str(self.build), word) if self.build else word

    def presets_named(self, c):
        found = set()
        for w in list(c.words) + list(c.env.values()):
            for m in BUILD.finditer(w):
                found.add(m.group(1))
        if "--preset" in c.argv:
            i = c.argv.index("--preset")
            if i + 1 < len(c.argv):
                found.add(c.argv[i + 1])
        return found

    def chapter_exe(self, word):
        """The executable a chapter word names, in --build: a path under build/<preset>/ keeps its
        folders (a wrong folder fails), a name alone or ./name is looked up by its name."""
        base = os.path.basename(word)
        if BUILD.match(word):
            return pathlib.Path(self.map_build(word))
        return self.build / "chapters" / base[2:] / base

    def exe_of(self, word):
        if CHAPTER.match(os.path.basename(word)):
            return self.chapter_exe(word)
        if BUILD.match(word):
            return pathlib.Path(self.map_build(word))
        if os.path.basename(word) == "conv1d_tour":
            return self.build / "conv1d_tour"
        if os.path.basename(word).startswith("conv1d_"):
            return self.build / "tests" / os.path.basename(word)
        return pathlib.Path(word)

    def run_proc(self, argv, env=None, cwd=None, timeout=60, shell=False):
        e = dict(os.environ)
        e.update(env or {})
        try:
            p = subprocess.run(argv, cwd=cwd or self.root, env=e, capture_output=True, text=True,
                               timeout=timeout, shell=shell, executable="/bin/bash" if shell else None)
            return p.returncode, p.stdout, p.stderr
        except subprocess.TimeoutExpired as ex:
            def text(b):
                return b.decode(errors="replace") if isinstance(b, bytes) else (b or "")
            return None, text(ex.stdout), text(ex.stderr)
        except OSError as ex:
            return 127, "", str(ex)

    @staticmethod
    def last_line(*texts):
        for t in texts:
            lines = [x for x in (t or "").splitlines() if x.strip()]
            if lines:
                return lines[-1].strip()[:200]
        return ""

    def long_options(self, argv):
        opts = []
        for w in argv:
            if w == "--":
                break
            if w.startswith("--") and len(w) > 2:
                opts.append(w.split("=", 1)[0])
        return opts

    def presets(self):
        if self._presets is None:
            self._presets = {}
            for name in ("CMakePresets.json", "CMakeUserPresets.json"):
                p = self.root / name
                if p.is_file():
                    data = json.loads(p.read_text())
                    for kind in ("configurePresets", "buildPresets", "testPresets", "workflowPresets"):
                        self._presets.setdefault(kind, set()).update(x["name"] for x in data.get(kind, []))
        return self._presets

    def targets(self):
        if self._targets is None:
            self._targets = set()
            listing = self.build / "CMakeFiles" / "TargetDirectories.txt" if self.build else None
            if listing and listing.is_file():
                for line in listing.read_text().splitlines():
                    name = os.path.basename(line.strip())
                    if name.endswith(".dir"):
                        self._targets.add(name[:-4])
        return self._targets

    # -- the checks: each returns (status, note)

    def parse_chapter(self, argv):
        exe = self.chapter_exe(argv[0])
        if not exe.is_file():
            return "FAIL", f"{rel_to(exe, self.root)} not found (not built, or the page's path is wrong)"
        rc, out, err = self.run_proc([str(exe)] + [self.map_build(w) for w in argv[1:]],
                                     env={"CONV1D_PARSE_ONLY": "1"}, timeout=60)
        if rc == 0 and "arguments accepted" in out:
            return "pass", "arguments accepted"
        if rc == 0:
            return "FAIL", "exit 0 without 'arguments accepted' (built before CONV1D_PARSE_ONLY existed?)"
        return "FAIL", f"exit {rc}: {self.last_line(err, out)}"

    def help_check(self, prefix, argv, env=None, cwd=None):
        """`prefix --help` exits 0 and lists every --option of argv."""
        rc, out, err = self.run_proc(prefix + ["--help"], env=env, cwd=cwd, timeout=60)
        if rc != 0:
            what = " ".join(os.path.basename(p) for p in prefix[:4])
            return "FAIL", f"{what} --help: exit {rc}: {self.last_line(err, out)}"
        text = out + err
        missing = [o for o in self.long_options(argv)
                   if o != "--help" and not re.search(re.escape(o) + r"(?![\w-])", text)]
        if missing:
            return "FAIL", f"not in its --help: {' '.join(missing)}"
        return "pass", "--help lists its options"

    def check_profiling(self, c):
        argv = [self.map_build(w) for w in c.argv]
        module = argv[2]
        env = {"PYTHONPATH": str(self.root) + os.pathsep + os.environ.get("PYTHONPATH", "")}
        args = argv[3:]
        if c.inline and not args:
            status, note = self.help_check([self.python, "-m", module], [], env=env)
            return ("checked", "names the tool, no arguments (prose; not run); " + note) if status == "pass" \
                else (status, note)
        prefix = [self.python, "-m", module]
        if module == "profiling" and args and not args[0].startswith("-"):
            prefix.append(args[0])
        status, note = self.help_check(prefix, args, env=env)
        if status != "pass" or module != "profiling":
            return status, note
        rc, out, err = self.run_proc(
            [self.python, "-c",
             "import sys\nfrom profiling.cli import build_parser\nbuild_parser().parse_args(sys.argv[1:])"]
            + args, env=env, timeout=60)
        if rc == 0:
            return "pass", "accepted by profiling/'s parser"
        why = self.last_line(err, out)
        if c.inline and "are required" in why:
            return "checked", f"names the command in part (prose; not run): {why}"
        return "FAIL", f"profiling/'s parser: {why}"

    def check_script(self, c):
        argv = c.argv
        if os.path.basename(argv[0]) in ("python", "python3", "bash", "sh"):
            interp, script, args = argv[0], argv[1], argv[2:]
        else:
            interp, script, args = None, argv[0], argv[1:]
        path = self.root / (script[2:] if script.startswith("./") else script)
        if not path.is_file():
            return "FAIL", f"{script} not found"
        if path.suffix == ".py":
            return self.help_check([self.python, str(path)], args)
        rc, out, err = self.run_proc(["bash", "-n", str(path)])
        if rc != 0:
            return "FAIL", f"bash -n: {self.last_line(err, out)}"
        text = path.read_text()
        missing = [o for o in self.long_options(args) if o not in text]
        if missing:
            return "FAIL", f"not in {script}: {' '.join(missing)}"
        return "checked", "exists, bash -n passes (a shell script is not asked for --help)"

    def check_cmake(self, c):
        argv = c.argv
        presets = self.presets()
        notes = []
        if "--preset" in argv:
            i = argv.index("--preset")
            name = argv[i + 1] if i + 1 < len(argv) else ""
            kind = ("workflowPresets" if "--workflow" in argv else "buildPresets" if "--build" in argv
                    else "configurePresets")
            if name not in presets.get(kind, set()):
                return "FAIL", f"no {kind[:-7]} preset '{name}' in CMakePresets.json"
            notes.append(f"{kind[:-7]} preset '{name}' exists")
        if "--target" in argv:
            for t in argv[argv.index("--target") + 1:]:
                if t.startswith("-"):
                    break
                if self.targets() and t not in self.targets():
                    return "FAIL", f"no target '{t}' in {rel_to(self.build, self.root)}"
                notes.append(f"target '{t}' exists")
        what = ("builds" if "--build" in argv else "configures, builds and runs" if "--workflow" in argv
                else "configures")
        return "checked", "; ".join(notes + [f"not run: it {what} a build tree"])

    def check_ctest(self, c, run):
        argv = [self.map_build(w) for w in c.argv]
        if run:
            return None
        rc, out, err = self.run_proc(argv + ["-N"], timeout=60)
        m = re.search(r"Total Tests:\s*(\d+)", out)
        if rc != 0 or not m:
            return "FAIL", f"ctest -N: exit {rc}: {self.last_line(err, out)}"
        if int(m.group(1)) == 0:
            return "FAIL", "selects no test"
        return "checked", f"selects {m.group(1)} test(s) (ctest -N); not run here"

    def check_git(self, c):
        if len(c.argv) < 2 or c.argv[1] not in READ_ONLY_GIT:
            return "not run", "changes the repository"
        if not (self.root / ".git").exists():
            return "not run", "not a git checkout"
        rc, out, err = self.run_proc(c.argv, timeout=60)
        return ("pass", "ran (read-only)") if rc == 0 else ("FAIL", f"exit {rc}: {self.last_line(err, out)}")

    def other_reason(self, c):
        w = os.path.basename(c.argv[0]) if c.argv else ""
        if w in ("sudo", "apt-get", "apt", "pip", "pip3"):
            return "installs packages on the reader's machine"
        if w in ("nvcc", "hipcc"):
            return "compiles the reader's own file"
        return f"{w or c.shown!r}: not a command this script knows how to check"

    def check(self, c):
        """(status, note) of one command in --parse, or in --run for what --run does not run."""
        why = excluded(c, self.mode)
        if why:
            return "not run", why
        if c.placeholder:
            return "placeholder", f"cannot run as written: '{c.placeholder}' stands for what the reader fills in"
        if c.kind == "chapter":
            return self.parse_chapter(c.argv)
        if c.kind == "profiler":
            if c.inner:
                status, note = self.parse_chapter(c.inner)
                return status, f"{note} (the chapter command inside {c.argv[0]}; {c.argv[0]} itself is not run here)"
            return "not run", f"{c.argv[0]}: a profiler on the GPU machine (or AMD's)"
        if c.kind in ("tour", "test-helper"):
            exe = self.exe_of(c.argv[0])
            if not exe.is_file():
                return "FAIL", f"{rel_to(exe, self.root)} not found"
            return self.help_check([str(exe)], c.argv[1:])
        if c.kind == "profiling":
            return self.check_profiling(c)
        if c.kind == "script":
            return self.check_script(c)
        if c.kind == "cmake":
            return self.check_cmake(c)
        if c.kind == "ctest":
            return self.check_ctest(c, run=False)
        if c.kind == "git":
            return self.check_git(c)
        if c.kind == "tool":
            why = self.tool_reason(c)
            if why:
                return why
            status, note, _ = self.run_one(c)
            return status, note
        return "not run", self.other_reason(c)

    def tool_reason(self, c):
        """Why a toolkit tool's command (cuobjdump) cannot run here, or None."""
        tool = os.path.basename(c.argv[0])
        if not shutil.which(tool):
            return "not run", f"{tool} not found on this machine"
        operand = c.argv[-1] if len(c.argv) > 1 and not c.argv[-1].startswith("-") else ""
        if not operand:
            return "not run", "names the tool in part (no file to read)"
        path = pathlib.Path(self.map_build(operand))
        if not (self.work / path).exists():
            return "not run", f"reads {operand}, which no command run here makes"
        return None

    # -- --run

    def run_reason(self, c):
        """Why --run does not run c as written, or ""."""
        why = excluded(c, "run")
        if why:
            return "not run", why
        if c.placeholder:
            return "placeholder", f"cannot run as written: '{c.placeholder}' stands for what the reader fills in"
        amd = self.presets_named(c) & AMD_PRESETS
        if amd:
            return "not run", f"an AMD build (build/{sorted(amd)[0]}); this check runs the CUDA build"
        if c.kind == "profiler":
            tool = os.path.basename(c.argv[0])
            if tool in AMD_TOOLS:
                return "not run", f"{tool}: AMD's profiler"
            if not shutil.which(tool):
                return "not run", f"{tool} not found on this machine"
        if c.kind == "script" and "gpu-check" in " ".join(c.argv[:2]):
            return "not run", "the GPU check itself"
        if c.kind == "tool":
            return self.tool_reason(c)
        if c.kind == "script" and os.path.basename(c.argv[0]) == "docs_commands.py":
            return "not run", "this script itself"
        if c.kind in ("cmake", "git", "other"):
            return self.check(c)
        if c.kind == "profiling" and c.inline:
            status, note = self.check_profiling(c)
            if status != "pass":
                return status, note
        return None

    def shell_text(self, c):
        """The command as bash runs it here: build/<preset> mapped, chapters by their path in --build,
        python as --python."""
        # The word that runs a program of the build: the command's first, or a profiler's chapter.
        exe_at = 0 if c.kind in ("chapter", "tour", "test-helper") else \
            len(c.argv) - len(c.inner) if c.inner else -1
        words = []
        for i, w in enumerate(c.words):
            if w in OPERATORS:
                words.append(w)
                continue
            if i == exe_at:
                w = str(self.exe_of(w))
            elif i == 0 and os.path.basename(w) in ("python", "python3"):
                w = self.python
            w = self.adapt_device_folder(self.map_build(w))
            words.append(w if w in OPERATORS else shlex.quote(w))
        env = " ".join(f"{k}={shlex.quote(self.map_build(v))}" for k, v in c.env.items())
        return (env + " " if env else "") + " ".join(words)

    def adapt_device_folder(self, w):
        """profiles/<device>/...: the page names the device it was written on; with one device folder
        here, that one."""
        m = re.match(r"^profiles/([^/]+)(/.*)?$", w)
        if not m or (self.work / w).exists() or not (self.work / "profiles").is_dir():
            return w
        devices = [d.name for d in (self.work / "profiles").iterdir() if d.is_dir()]
        if len(devices) == 1:
            self.adapted.append(f"profiles/{m.group(1)} -> profiles/{devices[0]}")
            return f"profiles/{devices[0]}{m.group(2) or ''}"
        return w

    def run_one(self, c):
        self.count += 1
        index = self.count
        self.adapted = []
        text = self.shell_text(c)
        env = {"PYTHONPATH": str(self.root) + os.pathsep + os.environ.get("PYTHONPATH", ""), "MPLBACKEND": "Agg",
               "CONV1D_PARSE_ONLY": "0"}
        log = self.logs / f"{index:03d}_{c.file.replace('/', '_')}_{c.line}.log"
        start = time.monotonic()
        rc, out, err = self.run_proc("set -o pipefail; " + text, env=env, cwd=self.work, timeout=self.timeout,
                                     shell=True)
        secs = time.monotonic() - start
        log.write_text(f"# {c.where()}: {c.shown}\n# ran: {text}\n# exit: {rc}, {secs:.1f} s\n{out}\n{err}")
        note = f"{secs:.1f} s, log {log.name}"
        if self.adapted:
            note += "; ran with " + ", ".join(self.adapted)
        if rc is None:
            return "FAIL", f"over the time limit ({self.timeout} s); " + note, secs
        if rc != 0:
            return "FAIL", f"exit {rc}: {self.last_line(err, out)}; " + note, secs
        return "pass", note, secs


def report_line(c, status, note):
    return f"{status:11} {c.where():38} {c.kind:11} {c.shown}\n{'':62} -> {note}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n", 1)[1])
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--list", dest="mode", action="store_const", const="list", help="list the commands")
    mode.add_argument("--parse", dest="mode", action="store_const", const="parse",
                      help="check each command without a GPU")
    mode.add_argument("--run", dest="mode", action="store_const", const="run", help="run each command (GPU machine)")
    ap.add_argument("--build", help="the build tree that build/<preset> stands for")
    ap.add_argument("--root", default=str(ROOT), help="the repository (default: this script's)")
    ap.add_argument("--python", help="python for profiling/ and scripts (default: this one)")
    ap.add_argument("--timeout", type=int, default=600, help="--run: seconds per command (default 600)")
    ap.add_argument("--work", help="the scratch folder commands run in (default: a new temporary one)")
    ap.add_argument("--logs", help="--run: a folder for each command's output (default: WORK/logs)")
    ap.add_argument("files", nargs="*", help="Markdown files (default: README.md and docs/**/*.md)")
    args = ap.parse_args(argv)
    if args.mode in ("parse", "run") and not args.build:
        ap.error(f"--{args.mode} needs --build DIR")
    if args.build and not pathlib.Path(args.build).is_dir():
        ap.error(f"--build {args.build}: not a folder")
    root = pathlib.Path(args.root).resolve()
    files = [pathlib.Path(f) for f in args.files] or pages(root)
    cmds, skipped = [], []
    for f in files:
        c, s = extract(f, rel_to(f, root))
        cmds += c
        skipped += s

    kinds = {}
    for c in cmds:
        kinds[c.kind] = kinds.get(c.kind, 0) + 1
    kinds_text = ", ".join(f"{k} {v}" for k, v in sorted(kinds.items(), key=lambda kv: -kv[1]))

    if args.mode == "list":
        for c in cmds:
            flags = " (inline)" if c.inline else ""
            flags += f" [placeholder '{c.placeholder}']" if c.placeholder else ""
            inner = f" [wraps {' '.join(c.inner)}]" if c.inner else ""
            print(f"{c.where():38} {c.kind:11} {c.shown}{flags}{inner}")
        print(f"\ncode blocks not taken as commands ({len(skipped)}):")
        for b in skipped:
            first = next((t for _, t in b.lines if t.strip()), "")
            print(f"  {b.file}:{b.line} ({b.lang or 'plain fence'}): {first.strip()[:80]}")
        print(f"\n{len(cmds)} commands in {len(files)} files: {kinds_text}")
        return 0

    checker = Checker(args)
    results = []
    failed_at = set()
    total = 0.0
    checker.work = pathlib.Path(args.work or tempfile.mkdtemp(prefix="docs_commands_")).resolve()
    checker.logs = pathlib.Path(args.logs).resolve() if args.logs else checker.work / "logs"
    checker.logs.mkdir(parents=True, exist_ok=True)
    if args.mode == "parse":
        for i, c in enumerate(cmds):
            status, note = checker.check(c)
            results.append((c, status, note))
            print(report_line(c, status, note), flush=True)
    else:
        if (root / "results").is_dir() and not (checker.work / "results").exists():
            shutil.copytree(root / "results", checker.work / "results")
        print(f"docs commands: running in {checker.work} (build {checker.build}, python {checker.python})",
              flush=True)
        deferred = [c for c in cmds if any(fnmatch.fnmatch(c.file, g) and t in c.shown for g, t, _ in DEFER)]
        order = [c for c in cmds if c not in deferred] + deferred
        for i, c in enumerate(order):
            pre = checker.run_reason(c)
            if pre is None and c.chain >= 0 and id(cmds[c.chain]) in failed_at:
                pre = ("not run", "the command before it in its && chain failed")
            if pre is not None:
                status, note = pre
            else:
                status, note, secs = checker.run_one(c)
                total += secs
                if c in deferred:
                    note += "; run last: " + next(w for g, t, w in DEFER if fnmatch.fnmatch(c.file, g) and t in c.shown)
            if status == "FAIL":
                failed_at.add(id(c))
            results.append((c, status, note))
            print(report_line(c, status, note), flush=True)
    counts = {s: sum(1 for _, st, _ in results if st == s) for s in STATUSES}
    print(f"\ndocs commands ({args.mode}): {len(cmds)} in {len(files)} files ({kinds_text}): "
          + ", ".join(f"{v} {k}" for k, v in counts.items())
          + (f"; {total:.0f} s running them" if args.mode == "run" else ""))
    if args.mode == "parse" and not args.work:
        shutil.rmtree(checker.work, ignore_errors=True)
    failures = [(c, note) for c, st, note in results if st == "FAIL"]
    for c, note in failures:
        print(f"FAIL {c.where()}: {c.shown}\n     {note}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
