"""scripts/docs_sync.py's `charts` regions: the committed charts as images with their captions,
linked relative to the page, in the catalog's order; a missing folder is an error."""
import importlib.util

import pytest

from profiling.catalog import CHARTS


@pytest.fixture
def docs_sync(root, tmp_path, monkeypatch):
    spec = importlib.util.spec_from_file_location("docs_sync_under_test", root / "scripts" / "docs_sync.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    monkeypatch.setattr(mod, "ROOT", tmp_path)
    return mod


def test_charts_region(docs_sync, tmp_path):
    charts = tmp_path / "results" / "gpu-check" / "charts"
    charts.mkdir(parents=True)
    for name in ("roofline.png", "categories.png"):
        (charts / name).write_bytes(b"\x89PNG")
    page = tmp_path / "docs" / "results.md"
    page.parent.mkdir()
    text = "intro\n<!-- results: charts results/gpu-check/charts -->\nstale\n<!-- /results -->\n"
    out = docs_sync.render(text, page)
    titles = {name: (title, caption) for name, title, caption in CHARTS}
    assert out == ("intro\n<!-- results: charts results/gpu-check/charts -->\n"
                   f"![{titles['categories.png'][0]}](../results/gpu-check/charts/categories.png)\n\n"
                   f"*{titles['categories.png'][1]}*\n\n"
                   f"![{titles['roofline.png'][0]}](../results/gpu-check/charts/roofline.png)\n\n"
                   f"*{titles['roofline.png'][1]}*\n<!-- /results -->\n")
    assert docs_sync.render(out, page) == out  # stable


def test_charts_region_errors(docs_sync, tmp_path):
    page = tmp_path / "README.md"
    with pytest.raises(docs_sync.DocError, match="result folder not found"):
        docs_sync.render("<!-- results: charts results/none -->\n<!-- /results -->", page)
    (tmp_path / "empty").mkdir()
    with pytest.raises(docs_sync.DocError, match="none of the charts"):
        docs_sync.render("<!-- results: charts empty -->\n<!-- /results -->", page)


def test_ratio_across_files_and_columns(docs_sync, tmp_path):
    """`ratio` divides a cell by a cell of another row, of another file (over_path) and another
    column (over_col) when asked: a speed-up between two result files."""
    (tmp_path / "a.tsv").write_text("variant\tms\nfast\t0.25\n")
    (tmp_path / "b.tsv").write_text("variant\tkernels_ms\nslow\t1.0\n")
    text = ("<!-- value: ratio b.tsv where=variant:slow col=kernels_ms over=variant:fast over_path=a.tsv "
            "over_col=ms fmt=.2f -->?<!-- /value -->")
    assert docs_sync.render(text, tmp_path / "README.md").endswith("-->4.00<!-- /value -->")
    same_file = "<!-- value: ratio a.tsv where=variant:fast col=ms over=variant:fast -->?<!-- /value -->"
    assert "-->1.0<!--" in docs_sync.render(same_file, tmp_path / "README.md")


def test_where_values_with_spaces_and_commas(docs_sync, tmp_path):
    """A `where` value writes a space as "+" and a comma as "%2C" (commas separate conditions)."""
    (tmp_path / "s.csv").write_text('"Name","AverageNs"\n"transpose x to [B,L,D]",2000000\n"other",1\n')
    text = "<!-- value: tsv s.csv where=Name:transpose+x+to+[B%2CL%2CD] col=AverageNs scale=1e-6 -->?<!-- /value -->"
    assert "-->2.0<!--" in docs_sync.render(text, tmp_path / "README.md")


def test_value_marker_it_cannot_read_is_an_error(docs_sync, tmp_path):
    """A value marker whose arguments hold a '>' is not taken by the pattern: it must fail, not be
    left as it was."""
    table = tmp_path / "results" / "t.tsv"
    table.parent.mkdir(parents=True)
    table.write_text("args\tms\nA<B>\t1.5\n")
    good = "x <!-- value: tsv results/t.tsv where=ms:1.5 col=ms fmt=.2f -->?<!-- /value -->\n"
    assert docs_sync.render(good) == "x <!-- value: tsv results/t.tsv where=ms:1.5 col=ms fmt=.2f -->1.50<!-- /value -->\n"
    with pytest.raises(docs_sync.DocError, match="line 2: a marker that cannot be read"):
        docs_sync.render("intro\nx <!-- value: tsv results/t.tsv where=args:A<B> col=ms -->?<!-- /value -->\n")


def test_diff_region(docs_sync, tmp_path):
    """A diff region shows what region B adds to region A, as a unified diff, and stays stable."""
    (tmp_path / "a.cuh").write_text("// [docs:old]\nint f(int x) {\n  return x;\n}\n// [/docs:old]\n")
    (tmp_path / "b.cuh").write_text("// [docs:new]\nint f(int x) {\n  return x + 1;\n}\n// [/docs:new]\n")
    page = tmp_path / "page.md"
    out = docs_sync.render("<!-- diff: a.cuh#old b.cuh#new -->\n<!-- /diff -->\n", page)
    assert "```diff\n--- a.cuh (old)\n+++ b.cuh (new)\n" in out
    assert "-  return x;\n+  return x + 1;\n" in out
    assert docs_sync.render(out, page) == out
    (tmp_path / "c.cuh").write_text("// [docs:same]\nint f(int x) {\n  return x;\n}\n// [/docs:same]\n")
    with pytest.raises(docs_sync.DocError, match="identical"):
        docs_sync.render("<!-- diff: a.cuh#old c.cuh#same -->\n<!-- /diff -->\n", page)
    with pytest.raises(docs_sync.DocError, match="cannot be read"):
        docs_sync.render("<!-- diff: a.cuh#old -->\n<!-- /diff -->\n", page)


def test_nested_markers_not_shown(docs_sync, tmp_path):
    """A region's excerpt leaves out the marker lines of regions nested inside it."""
    (tmp_path / "k.cuh").write_text("// [docs:outer]\nint a;\n  // [docs:inner]\nint b;\n  // [/docs:inner]\n"
                                    "// [/docs:outer]\n")
    page = tmp_path / "page.md"
    out = docs_sync.render("<!-- include: k.cuh#outer -->\n<!-- /include -->\n", page)
    assert "```cuda\nint a;\nint b;\n```\n" in out
    out = docs_sync.render("<!-- include: k.cuh#inner -->\n<!-- /include -->\n", page)
    assert "```cuda\nint b;\n```\n" in out
