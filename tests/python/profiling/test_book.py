"""The chart of the whole book (book.png), from the tour's book.tsv (chapters/tour.cpp).

fixtures/book/book.tsv: five forward rows (chapter 10's not verified), three backward rows and one
decoding step, at the tour's headline shapes, device "Test GPU"; the speed-ups as the tour computes
them (device time of the first chapter of the same work over the row's).
fixtures/malformed/missing_column_book.tsv: the same table without its ceiling_pct column.
"""
import shutil

import pytest

from profiling import analysis, book, cli, formats, load
from profiling.catalog import CHART_FILES, CHARTS
from conftest import drawn_text
from profiling.table import FormatError

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def book_tsv(fixtures):
    return fixtures / "book" / "book.tsv"


def test_the_book_is_read(book_tsv):
    b = book.read_book(book_tsv)
    assert [r.work for r in b.rows] == ["forward"] * 5 + ["backward"] * 3 + ["decode"]
    r = b.rows[3]
    assert (r.label, r.shape, r.device_ms, r.ceiling_pct, r.speedup, r.over, r.e2e_ms, r.verified, r.device) == (
        "08 direct_forward · cf_staged", "B=8 D=4096 L=4096 W=4 fp16", 0.2, 89.5, 4650.0, "01", 0.25, True,
        "Test GPU")
    assert [r.label for r in b.rows if not r.verified] == ["10 packed_sequences · cf_packed"]
    assert b.date == ""  # no date column, no run_info.json beside it
    assert book.read_book(book_tsv, date="2026-12-24 10:00 UTC").date == "2026-12-24 10:00 UTC"


def test_no_speed_up_and_a_date_column(tmp_path, book_tsv):
    lines = book_tsv.read_text().splitlines()
    lines[0] += "\tdate"
    cells = lines[1].split("\t")
    cells[7:9] = ["-", "-"]
    lines[1] = "\t".join(cells)
    lines[1:] = [line + "\t2026-12-01 08:00 UTC" for line in lines[1:]]
    (tmp_path / "book.tsv").write_text("\n".join(lines) + "\n")
    b = book.read_book(tmp_path / "book.tsv")
    assert (b.rows[0].speedup, b.rows[0].over, b.date) == (None, "", "2026-12-01 08:00 UTC")


def test_detected_as_the_book_not_as_a_summary(book_tsv):
    """book.tsv has a summary's chapter, variant and end_to_end_ms columns: it must not be read as one."""
    assert formats.detect(book_tsv, book_tsv.read_text()).fmt == "book"
    ds = load.load([str(book_tsv.parent)])
    assert ds.summaries == [] and ds.notes == [] and [len(b.rows) for b in ds.books] == [9]


@pytest.mark.parametrize("bad, message", [
    (lambda t: t.replace("\tceiling_pct", "", 1), "no column 'ceiling_pct'"),
    (lambda t: t.replace("forward\t03", "sideways\t03", 1), ":3: column 'work' holds 'sideways'"),
    (lambda t: t.replace("\t12.5000\t", "\tfast\t", 1), ":3: column 'device_ms' holds 'fast', expected a number"),
    (lambda t: t.replace("\tno\tTest GPU", "\tmaybe\tTest GPU", 1), "column 'verified' holds 'maybe'"),
])
def test_malformed_book_names_the_file_and_what_is_wrong(tmp_path, book_tsv, bad, message):
    path = tmp_path / "book.tsv"
    path.write_text(bad(book_tsv.read_text()))
    with pytest.raises(FormatError) as e:
        book.read_book(path)
    assert str(path) in str(e.value) and message in str(e.value)


def test_malformed_fixture_fails_the_plot_with_its_name(fixtures, tmp_path, capsys):
    run = tmp_path / "run"
    shutil.copytree(fixtures / "builtin_run", run)
    shutil.copy(fixtures / "malformed" / "missing_column_book.tsv", run / "book.tsv")
    assert cli.main(["plot", str(run), "--out", str(tmp_path / "charts")]) == 2
    err = capsys.readouterr().err
    assert f"{run / 'book.tsv'}: no column 'ceiling_pct'" in err and "header: work, chapter" in err


def test_the_chart_is_drawn(book_tsv, tmp_path):
    from profiling import charts
    b = book.read_book(book_tsv)
    path = charts.chart_book(b.rows, tmp_path / "book.png", date="2026-12-24 10:00 UTC")
    data = path.read_bytes()
    assert data[:8] == PNG and 10_000 < len(data) < 200_000, len(data)


def test_what_the_chart_says(book_tsv, monkeypatch, tmp_path):
    b = book.read_book(book_tsv)
    t = drawn_text(monkeypatch, lambda charts: charts.chart_book(b.rows, tmp_path / "b.png", "2026-12-24 10:00 UTC"))
    assert "The whole book: each chapter's headline kernel at one shape per kind of work" in t
    assert "01 host_img2col · naive" in t and "11 decode_update · linear_graph" in t
    assert "0.200 ms  ·  89.5 % of the copy ceiling  ·  4,650×" in t
    assert "0.350 ms  ·  76.7 % of the copy ceiling  ·  the baseline" in t
    assert "2.2 µs  ·  33.3 % of the copy ceiling" in t  # a decoding step in µs
    assert "930 ms  ·  0.019 % of the copy ceiling  ·  the baseline" in t  # below 1 %: two digits
    assert "NOT VERIFIED" in t and "NOT VERIFIED (hatched): forward 10 packed_sequences · cf_packed" in t
    assert "Test GPU  ·  2026-12-24 10:00 UTC  ·  source: the tour's book.tsv" in t
    assert "speed-up: device time over the first chapter's of the same work" in t


def test_panel_titles_name_work_and_shape(book_tsv, monkeypatch, tmp_path):
    from profiling import charts
    figs = []
    monkeypatch.setattr(charts, "_save", lambda fig, path: figs.append(fig) or path)
    charts.chart_book(book.read_book(book_tsv).rows, tmp_path / "b.png")
    titles = [ax.get_title(loc="left") for ax in figs[0].axes]
    assert titles == ["Forward: B=8 D=4096 L=4096 W=4 fp16", "Backward: B=8 D=4096 L=4096 W=4 bf16",
                      "Decoding step: B=64 D=4096 L=1 W=4 bf16 silu, times per step"]
    assert [ax.get_xlabel() for ax in figs[0].axes][2] == "device time per step (µs, log scale)"


def test_only_the_works_present_get_a_panel(book_tsv, monkeypatch, tmp_path):
    from profiling import charts
    figs = []
    monkeypatch.setattr(charts, "_save", lambda fig, path: figs.append(fig) or path)
    rows = [r for r in book.read_book(book_tsv).rows if r.work == "backward"]
    charts.chart_book(rows, tmp_path / "b.png")
    assert [ax.get_title(loc="left").split(":")[0] for ax in figs[0].axes] == ["Backward"]
    with pytest.raises(FormatError, match="no rows"):
        charts.chart_book([], tmp_path / "b.png")


def test_the_book_comes_first_in_the_catalog():
    assert CHART_FILES[0] == "book.png" and CHARTS[0][1] == "The whole book"


def test_plot_draws_the_book_when_the_folder_has_one(fixtures, book_tsv, tmp_path, capsys):
    run = tmp_path / "run"
    shutil.copytree(fixtures / "builtin_run", run)
    shutil.copy(book_tsv, run / "book.tsv")
    out = tmp_path / "charts"
    assert cli.main(["plot", str(run), "--out", str(out), "--date", "2026-12-24 10:00 UTC"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[1].strip() == str(out / "book.png")  # first, in the catalog's order
    assert sorted(p.name for p in out.glob("*.png")) == sorted(CHART_FILES)
    assert (out / "book.png").read_bytes()[:8] == PNG and (out / "book.png").stat().st_size > 10_000


def test_plot_without_a_book_draws_the_others(fixtures, tmp_path, capsys):
    """The tour's own runs in CI have no GPU, hence no book.tsv: the other charts, and no error."""
    out = tmp_path / "charts"
    (out).mkdir()
    (out / "book.png").write_bytes(b"stale")
    assert cli.main(["plot", str(fixtures / "builtin_run"), "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert sorted(p.name for p in out.glob("*.png")) == sorted(n for n in CHART_FILES if n != "book.png")
    assert "skipped book.png: no book.tsv" in captured.out and "error" not in captured.err


def test_draw_all_takes_the_charted_runs_book_and_its_date(fixtures, book_tsv, tmp_path):
    from profiling import charts
    run = tmp_path / "run"
    shutil.copytree(fixtures / "builtin_run", run)
    shutil.copy(book_tsv, run / "book.tsv")
    (tmp_path / "other").mkdir()
    shutil.copy(book_tsv, tmp_path / "other" / "book.tsv")
    view = analysis.select(load.load([str(tmp_path)]))
    assert view.run == str(run.resolve())
    chosen, others = book.pick(view.books, view.run)
    assert chosen.file == str((run / "book.tsv").resolve()) and len(others) == 1
    assert chosen.date == "2026-01-02 03:04 UTC"  # from the run's run_info.json
    said = []
    drawn = charts.draw_all(view, analysis.chapter_profiles(view), tmp_path / "charts", log=said.append)
    assert drawn[0].name == "book.png"
    assert any("book.png from" in s and "not drawn" in s for s in said)


def test_book_command(book_tsv, tmp_path, capsys):
    out = tmp_path / "sub" / "b.png"
    assert cli.main(["book", str(book_tsv), "--out", str(out), "--date", "2026-12-24"]) == 0
    assert capsys.readouterr().out.strip() == str(out) and out.read_bytes()[:8] == PNG
    shutil.copy(book_tsv, tmp_path / "book.tsv")
    assert cli.main(["book", str(tmp_path / "book.tsv")]) == 0  # default: book.png beside it
    assert (tmp_path / "book.png").is_file()
    assert cli.main(["book", str(tmp_path / "missing.tsv")]) == 2
    assert "missing.tsv: no such file" in capsys.readouterr().err


def test_book_command_help(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["book", "--help"])
    assert e.value.code == 0
    text = capsys.readouterr().out
    assert "BOOK_TSV" in text and "--out PNG" in text and "book.tsv" in text
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    assert "book" in capsys.readouterr().out
