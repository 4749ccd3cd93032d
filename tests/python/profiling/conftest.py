"""Shared fixtures of the profiling tests: the repository on sys.path, the fixture folders."""
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "python" / "fixtures"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


@pytest.fixture
def fixtures():
    return FIXTURES


@pytest.fixture
def root():
    return ROOT


def drawn_text(monkeypatch, draw):
    """Every text of the figure a chart function draws (draw(charts) calls it; the figure is caught
    instead of saved): axes texts, titles, tick labels and legends, joined by " | "."""
    from profiling import charts
    figs = []
    monkeypatch.setattr(charts, "_save", lambda fig, path: figs.append(fig) or path)
    draw(charts)
    fig = figs[-1]
    out = [t.get_text() for ax in fig.axes for t in ax.texts]
    out += [fig._suptitle.get_text() if fig._suptitle else "", fig._supxlabel.get_text() if fig._supxlabel else ""]
    for ax in fig.axes:
        out += [t.get_text() for t in ax.get_xticklabels() + ax.get_yticklabels()]
        if ax.get_legend():
            out += [t.get_text() for t in ax.get_legend().get_texts()]
    return " | ".join(out).replace("\n", " ")
