"""Where a kernel's instructions and warp-stall samples are, from Nsight Compute's source page.

    python3 -m profiling.sass_lines SOURCE.csv.gz OUT.md
    python3 -m profiling sass-lines SOURCE.csv.gz OUT.md

SOURCE.csv.gz is a saved report's source page as CSV, gzipped:
`ncu --import REPORT --page source --csv --print-source sass | gzip > SOURCE.csv.gz`.
Only the page's first kernel is read.

OUT.md groups the SASS lines by how many times each ran. Code run once a tile, once a batch or
once a step of a rarer walk has a count of its own, so the groups name the code without reading
the SASS. It also counts the executed instructions by opcode and the stall samples by reason, and
lists the lines with the most samples. Beside it go OUT_groups.tsv (every group), OUT_opcodes.tsv
(every opcode, its modifiers and predicate left off) and OUT_reasons.tsv (every stall reason), for
the docs to quote.

Exit status: 0 written; 1 the page holds no SASS lines; 2 a bad command line, or an input that
cannot be read as a source page. Standard library only, so that any Python 3 runs it (CTest runs
its test without the virtual environment).
"""
import argparse
import collections
import csv
import gzip
import sys
import zlib

ADDRESS, SOURCE = "Address", "Source"
EXECUTED = "Instructions Executed"
SAMPLED = "Warp Stall Sampling (All Samples)"
NEEDED = (ADDRESS, SOURCE, EXECUTED, SAMPLED)
HOW = "export it with: ncu --import REPORT --page source --csv --print-source sass | gzip"


class PageError(Exception):
    """An input or output this tool cannot use; the message names the file and what is wrong."""


class NoLines(PageError):
    """A readable page without SASS lines, as when a report's kernel filter matched nothing."""


def reason_columns(header):
    # ncu gives each reason twice; the "(Not Issued)" copy counts a subset of the same samples.
    return [h for h in header if h.startswith("stall_") and "Not Issued" not in h]


def read_page(path):
    """(kernel, header, rows) of the first kernel on the page, each row a dict by column name.

    Every count a summary reads is checked here, so that a bad page fails with its line number
    instead of half-way through the tables."""
    rows, header, kernel, other = [], None, None, False
    try:
        with gzip.open(path, "rt") as f:
            for number, line in enumerate(f, 1):
                if line.startswith('"Kernel Name"'):
                    if kernel is not None:
                        break  # the first kernel only
                    fields = next(csv.reader([line]))
                    kernel = fields[1] if len(fields) > 1 else ""
                    continue
                fields = next(csv.reader([line]), [])
                if not fields:
                    continue
                if fields[0] == ADDRESS:
                    header = fields
                    missing = [c for c in NEEDED if c not in header]
                    if missing:
                        raise PageError(f"{path}: line {number}: the header lacks "
                                        f"{', '.join(repr(c) for c in missing)} (profile with "
                                        "--section SourceCounters --section WarpStateStats)")
                    numeric = [EXECUTED, SAMPLED] + reason_columns(header)
                    continue
                if not header:
                    # ncu's own notes (==PROF==, ==WARNING==) may come before the page.
                    other = other or not line.startswith("==")
                    continue
                if len(fields) != len(header):
                    raise PageError(f"{path}: line {number}: {len(fields)} fields, "
                                    f"the header has {len(header)}")
                row = dict(zip(header, fields))
                check_numbers(path, number, row, numeric)
                rows.append(row)
    except FileNotFoundError:
        raise PageError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise PageError(f"{path}: a folder, not a file") from None
    except gzip.BadGzipFile:
        raise PageError(f"{path}: not gzipped; {HOW}") from None
    except (EOFError, zlib.error) as e:
        raise PageError(f"{path}: a broken or cut-off gzip file ({e})") from None
    except UnicodeDecodeError:
        raise PageError(f"{path}: not text once unzipped; {HOW}") from None
    except csv.Error as e:
        raise PageError(f"{path}: not CSV ({e})") from None
    except OSError as e:
        raise PageError(f"{path}: cannot read it ({e.strerror or e})") from None
    if header is None and other:
        raise PageError(f"{path}: no source page in it (no header row that starts with "
                        f"\"{ADDRESS}\"); {HOW}")
    if not rows:
        raise NoLines(f"{path}: no SASS lines")
    return kernel, header, rows


def check_numbers(path, number, row, numeric):
    try:
        int(row[ADDRESS], 16)
    except ValueError:
        raise PageError(f"{path}: line {number}: {ADDRESS} {row[ADDRESS]!r} is not a hexadecimal "
                        "number") from None
    for column in numeric:
        try:
            int(row[column] or 0)
        except ValueError:
            raise PageError(f"{path}: line {number}: {column} {row[column]!r} is not a whole "
                            "number") from None


def summarise(path, kernel, header, rows):
    """The text of OUT.md and of the three tables beside it, by the suffix each adds to OUT."""
    count = lambda r: int(r[EXECUTED] or 0)  # noqa: E731
    samples = lambda r: int(r[SAMPLED] or 0)  # noqa: E731
    reasons = reason_columns(header)
    total_i, total_s = sum(map(count, rows)), sum(map(samples, rows))
    # Every share below divides by these: a page without them has nothing to share out.
    if total_i == 0:
        raise PageError(f"{path}: its SASS lines ran no instructions (\"{EXECUTED}\" is 0 "
                        "throughout); profile with --section SourceCounters")
    if total_s == 0:
        raise PageError(f"{path}: no warp-stall samples (\"{SAMPLED}\" is 0 throughout); profile "
                        "with --section SourceCounters --section WarpStateStats")

    # A group: every line that ran the same number of times (lines, instructions, samples).
    groups = collections.defaultdict(lambda: [0, 0, 0])
    for r in rows:
        g = groups[count(r)]
        g[0] += 1
        g[1] += count(r)
        g[2] += samples(r)
    by_group = sorted(groups.items(), key=lambda kv: -kv[1][1])
    by_reason = collections.Counter()
    for r in rows:
        for h in reasons:
            by_reason[h[len("stall_"):]] += int(r[h] or 0)
    ops = collections.Counter()
    for r in rows:
        words = r[SOURCE].split()
        if words:
            # "@P0 FFMA.FTZ R2, ...": a predicated line counts under its opcode, modifiers off.
            op = words[1] if words[0].startswith("@") and len(words) > 1 else words[0]
            ops[op.split(".")[0]] += count(r)

    def share(part, whole, digits=1):
        return f"{100 * part / whole:.{digits}f}"

    md = [f"# {kernel}", "",
          f"{len(rows)} SASS lines, {total_i} warp instructions executed, "
          f"{total_s} warp-stall samples.",
          "", "## SASS lines by how many times each ran (the 12 groups with the most instructions)",
          "", "| times a line ran | lines | instructions | share | samples | share |",
          "|---|---|---|---|---|---|"]
    for times, (n, i, s) in by_group[:12]:
        md.append(f"| {times} | {n} | {i} | {share(i, total_i)} % | {s} | {share(s, total_s)} % |")
    md += ["", "## Instructions executed by opcode (the 12 most)", "",
           "| opcode | instructions | share |", "|---|---|---|"]
    for op, i in ops.most_common(12):
        md.append(f"| {op} | {i} | {share(i, total_i)} % |")
    md += ["", "## Samples by stall reason", "", "| reason | samples | share |", "|---|---|---|"]
    for reason, s in by_reason.most_common(12):
        md.append(f"| {reason} | {s} | {share(s, total_s)} % |")
    md += ["", "## The 12 lines with the most samples", "",
           "| offset | SASS | times it ran | samples | main reasons |", "|---|---|---|---|---|"]
    base = int(rows[0][ADDRESS], 16)  # offsets from the kernel's first line, as cuobjdump shows
    for r in sorted(rows, key=samples, reverse=True)[:12]:
        main_two = sorted(((int(r[h] or 0), h[len("stall_"):]) for h in reasons), reverse=True)[:2]
        why = ", ".join(f"{name} {s}" for s, name in main_two if s)
        sass = r[SOURCE].strip().replace("|", "\\|")
        md.append(f"| 0x{int(r[ADDRESS], 16) - base:05x} | `{sass}` | {count(r)} | {samples(r)} "
                  f"| {why} |")

    groups_tsv = ["times\tlines\tinstructions\tinstructions_pct\tsamples\tsamples_pct"]
    for times, (n, i, s) in by_group:
        groups_tsv.append(f"{times}\t{n}\t{i}\t{share(i, total_i, 2)}\t{s}\t{share(s, total_s, 2)}")
    opcodes_tsv = ["opcode\tinstructions\tinstructions_pct"]
    for op, i in ops.most_common():
        opcodes_tsv.append(f"{op}\t{i}\t{share(i, total_i, 2)}")
    reasons_tsv = ["reason\tsamples\tsamples_pct"]
    for reason, s in by_reason.most_common():
        reasons_tsv.append(f"{reason}\t{s}\t{share(s, total_s, 2)}")
    return {"": md, "_groups.tsv": groups_tsv, "_opcodes.tsv": opcodes_tsv,
            "_reasons.tsv": reasons_tsv}


def write(out, texts):
    stem = out[:-3] if out.endswith(".md") else out
    for suffix, lines in texts.items():
        path = stem + suffix if suffix else out
        try:
            with open(path, "w") as f:
                f.write("\n".join(lines) + "\n")
        except OSError as e:
            raise PageError(f"{path}: cannot write it ({e.strerror or e})") from None


def add_arguments(parser):
    parser.add_argument("source", metavar="SOURCE.csv.gz",
                        help="the source page: ncu --import REPORT --page source --csv "
                             "--print-source sass, gzipped")
    parser.add_argument("out", metavar="OUT.md",
                        help="the summary; OUT_groups.tsv, OUT_opcodes.tsv and OUT_reasons.tsv "
                             "go beside it")


def run(args):
    """Both command lines end here: python3 -m profiling.sass_lines and python3 -m profiling
    sass-lines. Returns the exit status."""
    try:
        kernel, header, rows = read_page(args.source)
        write(args.out, summarise(args.source, kernel, header, rows))
    except NoLines as e:
        print(f"sass-lines: {e}", file=sys.stderr)
        return 1
    except PageError as e:
        print(f"sass-lines: {e}", file=sys.stderr)
        return 2
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m profiling.sass_lines", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
