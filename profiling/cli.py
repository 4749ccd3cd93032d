"""The command line: run, plot, book, parse, compare, sass-lines (python -m profiling --help)."""
import argparse
import pathlib
import sys

from profiling import analysis, book, load, sass_lines, table
from profiling.catalog import VARIANT_RUNS
from profiling.table import FormatError


def _plot(paths, out, args):
    ds = load.load(paths)
    load.print_notes(ds)
    view = analysis.select(ds, getattr(args, "run_name", None), getattr(args, "use_source", None))
    if getattr(args, "device", None):
        view.device = args.device
    if getattr(args, "date", None):
        view.date = args.date
        for b in view.books:  # the book's label too (the tour passes the date of its own run)
            b.date = args.date
    profiles = analysis.chapter_profiles(view)
    from profiling import charts  # matplotlib only where charts are drawn
    print(f"profiling: charts of {view.run} ({view.source}, {view.device}, {view.date})")
    drawn = charts.draw_all(view, profiles, out, getattr(args, "timeline_chapter", None))
    for p in drawn:
        print(f"  {p}")
    # Beside the charts: every run of every variant in the loaded summary tables, with the bytes its
    # kernels move, its copy floor and its share of the copy ceiling (docs/what-we-learned.md quotes it).
    rows = analysis.variant_runs(ds.summaries, ds.kernels, base=paths[0] if len(paths) == 1 else None)
    if rows:
        table = analysis.write_variant_runs(rows, pathlib.Path(out) / VARIANT_RUNS)
        print(f"  {table}")
    return drawn


def cmd_plot(args):
    first = pathlib.Path(args.paths[0])
    out = args.out or (first / "charts" if first.is_dir() else first.parent / "charts")
    _plot(args.paths, out, args)
    return 0


def cmd_book(args):
    b = book.read_book(args.book_tsv, args.date)
    out = pathlib.Path(args.out) if args.out else pathlib.Path(args.book_tsv).parent / "book.png"
    out.parent.mkdir(parents=True, exist_ok=True)
    from profiling import charts  # matplotlib only where charts are drawn
    print(charts.chart_book(b.rows, out, b.date, args.device))
    return 0


def cmd_run(args):
    from profiling import runner
    rc, final = runner.run_chapters(args)
    if final is None:
        return rc
    if not args.no_charts:
        _plot([str(final)], args.charts or final / "charts", args)
    return rc


def cmd_parse(args):
    ds = load.load(args.paths, explicit=True)
    load.print_notes(ds)
    rows = ds.rows
    if not rows:
        raise FormatError(f"{', '.join(args.paths)}: no profile rows found")
    if args.brief:
        print(f"{'source':10} {'chapter':24} {'category':8} {'calls':>7} {'total ms':>12}  name")
        for r in rows:
            print(f"{r.source:10} {r.chapter[:24]:24} {r.category:8} {r.calls:7d} {r.total_ns / 1e6:12.4f}  {r.name}")
        return 0
    if args.out:
        with open(args.out, "w", newline="") as f:
            table.write_csv(rows, f)
    else:
        table.write_csv(rows, sys.stdout)
    return 0


def cmd_compare(args):
    ds = load.load(args.paths)
    load.print_notes(ds)
    results = analysis.kernel_agreement(ds, args.source)
    if not results:
        raise FormatError(f"{', '.join(args.paths)}: no chapter traces (run the chapters with --profile-csv)")
    lines = ["chapter\tvariant\ttimed_runs\tevents_ms\t" + args.source + "_ms\tdifference_pct\t"
             "kernel_records\tdifference_us_per_record\tagree\tmeasured"]
    bad = 0
    excluded = 0
    for chapter, variant, runs, events, measured, how, records in results:
        diff = 100.0 * (measured - events) / events if events else float("inf")
        per_record = 1000.0 * (measured - events) / records if records else 0.0
        ok = measured > 0 and abs(diff) <= 100.0 * args.tolerance
        if f"{chapter}/{variant}" in (args.exclude or []):
            verdict = "excluded"  # listed, not judged (see --exclude)
            excluded += 1
        else:
            verdict = "yes" if ok else "NO"
            bad += not ok
        lines.append(f"{chapter}\t{variant}\t{runs}\t{events:.4f}\t{measured:.4f}\t{diff:+.1f}\t"
                     f"{records:g}\t{per_record:+.2f}\t{verdict}\t{how}")
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.tsv:
        pathlib.Path(args.tsv).write_text(text)
    print(f"kernel time per timed run, {args.source} against the chapters' device events: "
          f"{len(results) - bad - excluded} of {len(results) - excluded} within {100 * args.tolerance:.0f} %"
          + (f" ({excluded} excluded)" if excluded else ""))
    return 0 if bad == 0 else 1


def _add_chart_options(p):
    p.add_argument("--run", dest="run_name", help="the run to chart when the folders hold several")
    p.add_argument("--source", dest="use_source", choices=("builtin", "cupti", "rocprofv3", "rocprof", "nsys", "ncu"),
                   help="the source to chart when a run holds several")
    p.add_argument("--timeline-chapter", help="chapter for the timeline (default: the one using most streams)")
    p.add_argument("--device", help="device name for the labels (default: from the files)")
    p.add_argument("--date", help="date for the labels (default: from run_info.json)")


def build_parser():
    ap = argparse.ArgumentParser(prog="python -m profiling", description=__import__("profiling").__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)

    p = sub.add_parser("run", help="run every built chapter under a source, store the results, draw the charts")
    p.add_argument("--source", required=True, choices=("builtin", "cupti", "rocprofv3", "nsys"))
    p.add_argument("--build", required=True, help="the build tree (holds chapters/chNN_*)")
    p.add_argument("--out", default="profiles", help="results go to OUT/<device>/<source>/ (default: profiles)")
    p.add_argument("--charts", help="folder for the charts (default: the run folder's charts/)")
    p.add_argument("--no-charts", action="store_true")
    p.add_argument("--chapters", help="comma-separated chapter names or prefixes (default: all)")
    for f, t in (("batch", int), ("dim", int), ("seqlen", int), ("width", int), ("dtype", str), ("iters", int),
                 ("warmup", int), ("seed", int)):
        p.add_argument(f"--{f}", type=t, help="passed to every chapter")
    p.add_argument("--timeline-chapter", help="chapter for the timeline chart")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("plot", help="draw the charts from existing files, and write variant_runs.tsv beside them "
                                    "(bytes, copy floor and share of the copy ceiling of every run in the summaries)")
    p.add_argument("paths", nargs="+", help="folders (searched recursively) or files")
    p.add_argument("--out", help="folder for the PNG files (default: charts/ inside the first folder)")
    _add_chart_options(p)
    p.set_defaults(func=cmd_plot)

    p = sub.add_parser("book", help="draw the chart of the whole book (book.png) from the tour's book.tsv",
                       description=book.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("book_tsv", metavar="BOOK_TSV", help="the tour's table (e.g. results/gpu-check/book.tsv)")
    p.add_argument("--out", metavar="PNG", help="the chart's file (default: book.png beside BOOK_TSV)")
    p.add_argument("--date", help="date for the label (default: the table's date column, else run_info.json "
                                  "beside it, else 'date not recorded')")
    p.add_argument("--device", help="device name for the label (default: the table's device column)")
    p.set_defaults(func=cmd_book)

    p = sub.add_parser("parse", help="print the normalised table of the given files")
    p.add_argument("paths", nargs="+")
    p.add_argument("--out", help="write CSV here instead of standard output")
    p.add_argument("--brief", action="store_true", help="a readable summary instead of CSV")
    p.set_defaults(func=cmd_parse)

    p = sub.add_parser("compare", help="a profiler's kernel time against the chapters' own device events")
    p.add_argument("paths", nargs="+", help="run folders with both the chapters' traces and the profiler's")
    p.add_argument("--source", default="cupti", choices=("cupti", "rocprofv3"))
    p.add_argument("--tolerance", type=float, default=0.10, help="largest relative difference (default 0.10)")
    p.add_argument("--tsv", help="also write the table here")
    p.add_argument("--exclude", action="append", metavar="CHAPTER/VARIANT",
                   help="list but do not judge this variant, e.g. one whose kernels overlap on several streams, "
                        "where a kernel's event span includes waiting for the others (repeatable)")
    p.set_defaults(func=cmd_compare)

    # sass_lines needs only the standard library, so this command runs without the charts'
    # packages (matplotlib, numpy).
    p = sub.add_parser("sass-lines", help="an Nsight Compute source page summed by how often each "
                                          "SASS line ran, by opcode and by stall reason",
                       description=sass_lines.__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    sass_lines.add_arguments(p)
    p.set_defaults(func=sass_lines.run)
    return ap


def main(argv=None):
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except FormatError as e:
        print(f"profiling: error: {e}", file=sys.stderr)
        return 2
