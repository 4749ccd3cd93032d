"""The charts must not mislead: roofs from this repository's own
measurements, the backward chapter's copy floor, a host-step slowdown not credited to the next
chapter, overlapping streams not counted as kernel time, small chapters legible, and the stage
timeline drawn at the shape its chapter page discusses, chunks and kernels labelled.

Most tests read a frozen copy of an earlier GPU check's result folder (fixtures/gpu_check_2026_11,
an H200's) the way the tour reads results/gpu-check without a GPU; the rest build small runs in a
temporary folder."""
import math
import pathlib
import shutil
from types import SimpleNamespace as P

import pytest

from profiling import analysis, load
from profiling.formats import KernelSummary, Summary, Stage


@pytest.fixture(scope="module")
def committed():
    import pathlib
    root = pathlib.Path(__file__).resolve().parents[3]
    view = analysis.select(load.load([str(root / "tests" / "python" / "fixtures" / "gpu_check_2026_11")]))
    return view, {p.chapter[:4]: p for p in analysis.chapter_profiles(view)}


def drawn_figures(monkeypatch):
    """The figures the charts would save, kept open for inspection."""
    from profiling import charts
    figs = []
    monkeypatch.setattr(charts, "_save", lambda fig, path: figs.append(fig) or path)
    return charts, figs


def texts(fig):
    out = [t.get_text() for ax in fig.axes for t in ax.texts]
    out += [fig._suptitle.get_text() if fig._suptitle else "", fig._supxlabel.get_text() if fig._supxlabel else ""]
    for ax in fig.axes:
        out.append(ax.get_title(loc="left"))
        out.append(ax.get_title())
        out += [t.get_text() for t in ax.get_xticklabels() + ax.get_yticklabels()]
        leg = ax.get_legend()
        if leg:
            out += [t.get_text() for t in leg.get_texts()]
    return " | ".join(out).replace("\n", " ")  # wrapped footers read as one line


# ---- roofline -----------------------------------------------------------------------------------

def test_roofs_are_never_below_a_measurement(committed):
    """The old fp16 roof (660 TFLOP/s) lay below the repository's own cuBLAS figure (863.6)."""
    view, profiles = committed
    roofs = analysis.compute_roofs(view, list(profiles.values()))
    fp16 = next(r for r in roofs if r.dtype == "fp16")
    assert fp16.measured and fp16.tflops == pytest.approx(863.6138) and fp16.file.endswith("bench_05_kernels.tsv")
    assert "bench_05_kernels.tsv" in fp16.label and "B=8 D=1024 L=4096" in fp16.label
    for r in roofs:
        faster = [k for k in view.all_kernels if analysis.shape_dtype(k.shape) == r.dtype and k.tflops > r.tflops * 1.0001]
        assert not faster, (r, faster[:1])
    # No library GEMM measured fp32 here: the fp32 roof is the datasheet's, and says so.
    fp32 = next(r for r in roofs if r.dtype == "fp32")
    assert not fp32.measured and "datasheet" in fp32.label and "not measured" in fp32.label


def test_roofs_for_an_unknown_device_come_only_from_measurements():
    k = dict(variant="v", ms=1.0, gbs=1.0, ceiling_pct=1.0, copy_ceiling_gbs=100.0, device="Other GPU")
    gemm = KernelSummary("ch05_x", kernel="cublas_gemm", tflops=300.0, shape="B=1 D=8 L=8 W=4 fp16", file="/r/b.tsv", **k)
    slow = KernelSummary("ch05_x", kernel="cublas_gemm", tflops=100.0, shape="B=1 D=8 L=8 W=4 fp16", **k)
    mine = KernelSummary("ch01_y", kernel="naive_gemm", tflops=5.0, shape="B=1 D=8 L=8 W=4 fp32", **k)
    view = P(device="Other GPU", all_kernels=[gemm, slow, mine], kernels=[mine])
    roofs = analysis.compute_roofs(view, [P(main=mine)])
    assert [(r.dtype, r.tflops, r.measured) for r in roofs] == [("fp16", 300.0, True)]  # a naive kernel is no roof
    view.device = "NVIDIA H200"
    roofs = analysis.compute_roofs(view, [P(main=mine)])
    assert [(r.dtype, r.tflops, r.measured) for r in roofs] == [("fp32", 67.0, False), ("fp16", 300.0, True)]


def test_roofline_says_which_flops_the_sparse_point_counts(committed, monkeypatch, tmp_path):
    view, profiles = committed
    m = profiles["ch05"].main
    assert m.kernel == "wmma_gemm_sparse"
    # Its model counts the tensor-core work: 16x16 diagonal blocks, 16 times the convolution's flops.
    assert analysis.flop_multiple(m) == pytest.approx(16, rel=0.01)
    assert analysis.flop_multiple(profiles["ch01"].main) == pytest.approx(256, rel=0.01)  # D = 256
    charts, figs = drawn_figures(monkeypatch)
    charts.chart_roofline(view, list(profiles.values()), tmp_path / "r.png")
    t = texts(figs[0])
    assert "660" not in t and "863.6" in t and "datasheet" in t
    assert "wmma_gemm_sparse, fp16, counts 16× the conv's flops" in t
    assert "tensor-core work it does" in t


# ---- ladder ---------------------------------------------------------------------------------------

def test_backward_floor_counts_three_tensors(committed):
    _, profiles = committed
    p = profiles["ch06"]
    elements, size = analysis.parse_shape(p.main.shape)
    assert p.floor_tensors == 3
    assert p.floor_ms == pytest.approx(3 * elements * size / (p.ceiling_gbs * 1e9) * 1e3)
    assert profiles["ch05"].floor_tensors == 2
    assert analysis.copy_floor_ms("B=1 D=10 L=10 W=2 bf16", 1000, tensors=3) == pytest.approx(600 / 1e12 * 1e3)


def test_slow_shared_host_steps_are_found(committed):
    """Chapters 02 and 03 run the same host transposes about twice as slowly as 01, 04 and 05."""
    _, profiles = committed
    slow = analysis.host_step_outliers(list(profiles.values()))
    assert sorted(slow) == ["02 gpu_preprocess", "03 batch_fusion"]
    for ratio, steps in slow.values():
        assert 1.8 < ratio < 2.5
        assert set(steps) == {"transpose C to [B,D,L]", "transpose x to [B,L,D]"}


def test_host_step_outliers_by_hand():
    ps = [P(label="01 a", host_steps={"t": 4.0, "own": 9.0}, e2e_ms=20.0, categories={}),
          P(label="02 b", host_steps={"t": 9.0}, e2e_ms=15.0, categories={}),
          P(label="03 c", host_steps={"t": 4.4}, e2e_ms=9.0, categories={}),
          P(label="04 d", host_steps={"t": 40.0}, e2e_ms=1000.0, categories={})]  # slow, but 3.6 % of its run
    assert analysis.host_step_outliers(ps) == {"02 b": (pytest.approx(2.25), ["t"])}


def test_ladder_does_not_credit_the_epilogue(committed, monkeypatch, tmp_path):
    view, profiles = committed
    charts, figs = drawn_figures(monkeypatch)
    charts.chart_ladder(view, list(profiles.values()), tmp_path / "l.png")
    t = texts(figs[0])
    assert "×1.19†" in t and "×1.18†" in t and "×2.14‡" in t  # end to end, marked
    assert "device ×1.09" in t  # chapter 04's device time against chapter 01's
    assert "transpose C to [B,D,L]" in t and "not its own change's doing" in t
    assert "x + dout + dx" in t


# ---- overlapping streams: top kernels, categories, device time -----------------------------------

def test_overlapping_streams_are_drawn_from_the_serial_variant(committed):
    view, profiles = committed
    p = profiles["ch07"]
    assert (p.variant, p.kernel_variant) == ("pipelined", "serial")
    serial = next(s for s in view.summaries if s.chapter == p.chapter and s.variant == "serial")
    assert p.device_ms == serial.kernels_ms and p.e2e_ms == next(
        s.e2e_ms for s in view.summaries if s.chapter == p.chapter and s.variant == "pipelined")
    assert p.main.variant == "serial"
    # The serial run's sparse GEMM: 8 launches of one chunk each, not the 87.6 us of the event pairs
    # on four concurrent streams; its categories add up to less than its run.
    assert p.kernels["wmma_gemm_sparse"] == pytest.approx(0.0513, abs=0.002)
    assert p.kernel_calls["wmma_gemm_sparse"] == 8
    assert sum(p.categories.values()) < serial.e2e_ms
    assert p.timeline and {lane for lane, *_ in p.timeline} >= {"stream 0", "stream 3"}  # the timeline stays pipelined
    for key in ("ch01", "ch05", "ch06"):
        assert not profiles[key].kernel_variant and not profiles[key].overlapping


def _trace(path, rows):
    path.write_text('"Category","Name","Iteration","Stream_Id","Start_Timestamp","End_Timestamp"\n' +
                    "".join(f'"{c}","{n}",{it},{s},{a},{b}\n' for c, n, it, s, a, b in rows))


def test_stand_in_variant_by_hand(tmp_path):
    d = tmp_path / "ch09_streams"
    d.mkdir()
    (tmp_path / "summary.tsv").write_text(
        "chapter\tname\tvariant\tend_to_end_ms\tkernels_ms\tverified\tdevice\tshape\n"
        "09\tstreams\tpipelined\t0.010\t0.012\tyes\tG\tB=1 D=2 L=3 W=4 fp16\n"
        "09\tstreams\tserial\t0.016\t0.008\tyes\tG\tB=1 D=2 L=3 W=4 fp16\n")
    over, one = [], []
    for it in range(4):
        t = 1_000_000 * (it + 1)
        # pipelined: two kernels of 6 us on two streams, overlapping (each event pair 6 us, work 4 us)
        over += [("kernel", "k", it, 0, t, t + 6000), ("kernel", "k", it, 1, t + 2000, t + 8000)]
        one += [("kernel", "k", it, 0, t, t + 4000), ("kernel", "k", it, 0, t + 4000, t + 8000)]
    _trace(d / "ch09_streams_pipelined_trace.csv", over)
    _trace(d / "ch09_streams_serial_trace.csv", one)
    view = analysis.select(load.load([str(tmp_path)]))
    (p,) = analysis.chapter_profiles(view)
    assert analysis.overlapping([r for r in view.rows if r.variant == "pipelined"])
    assert not analysis.overlapping([r for r in view.rows if r.variant == "serial"])
    assert p.kernel_variant == "serial" and p.kernels == {"k": pytest.approx(0.008)} and p.kernel_calls == {"k": 2}
    assert p.device_ms == 0.008 and p.e2e_ms == 0.010
    # Without a serial variant the chapter keeps its own figures, marked as overlapping.
    (d / "ch09_streams_serial_trace.csv").unlink()
    (p,) = analysis.chapter_profiles(analysis.select(load.load([str(tmp_path)])))
    assert p.kernel_variant == "" and p.overlapping and p.kernels == {"k": pytest.approx(0.012)}


def test_top_kernels_name_the_variant_and_the_launches(committed, monkeypatch, tmp_path):
    view, profiles = committed
    charts, figs = drawn_figures(monkeypatch)
    charts.chart_top_kernels(view, list(profiles.values()), tmp_path / "t.png")
    t = texts(figs[0])
    assert "87.6" not in t and "(serial variant)" in t and "8 launches of" in t
    assert "event pairs include waiting" in t


def test_categories_on_a_log_scale(committed, monkeypatch, tmp_path):
    """Chapter 06's 15 us must be legible next to chapter 01's 24 ms."""
    view, profiles = committed
    charts, figs = drawn_figures(monkeypatch)
    charts.chart_categories(view, list(profiles.values()), tmp_path / "c.png")
    left = figs[0].axes[0]
    assert left.get_yscale() == "log"
    lo, hi = left.get_ylim()
    assert lo < profiles["ch06"].categories["kernel"] and hi > profiles["ch01"].categories["host"]
    t = texts(figs[0])
    assert "(serial variant)" in t and "stages add up to more than the run" in t


def test_categories_handle_any_chapter_number(tmp_path, fixtures, monkeypatch):
    """Chapters are found by their files, not by a list: a chapter 08 (or 12) is drawn like the others."""
    run = tmp_path / "run"
    shutil.copytree(fixtures / "builtin_run", run)
    shutil.copytree(run / "ch01_host_img2col", run / "ch12_future")
    for f in (run / "ch12_future").iterdir():
        f.rename(f.with_name(f.name.replace("ch01_host_img2col", "ch12_future")))
    view = analysis.select(load.load([str(run)]))
    profiles = analysis.chapter_profiles(view)
    assert [p.label for p in profiles][-1] == "12 future"
    charts, figs = drawn_figures(monkeypatch)
    charts.chart_categories(view, profiles, tmp_path / "c.png")
    assert "12 future" in [t.get_text() for t in figs[0].axes[0].get_xticklabels()]


# ---- the stage timeline -----------------------------------------------------------------------------

def test_stage_timeline_at_the_chapter_pages_shape(committed, monkeypatch, tmp_path):
    view, profiles = committed
    tl = analysis.stage_timeline(view, list(profiles.values()))
    assert tl.file.endswith("ch07_timeline.tsv") and tl.chapter == "ch07_stream_pipeline"
    assert tl.shape == "B=16 D=1024 L=4096 W=4 fp16" and tl.device == "NVIDIA H200"
    assert "bench_07.tsv" in tl.matched and tl.date == "date not recorded"
    assert [v for v, _ in tl.panels] == ["pipelined", "serial"]
    pipelined = tl.panels[0][1]
    assert {lane for lane, *_ in pipelined} == {"stream 0", "stream 1", "stream 2", "stream 3"}
    assert {c for *_, c in pipelined if c} == {str(i) for i in range(16)}
    charts, figs = drawn_figures(monkeypatch)
    charts.chart_timeline(view, list(profiles.values()), tmp_path / "t.png")
    fig = figs[0]
    t = texts(fig)
    assert "B=16 D=1024 L=4096 W=4 fp16" in t and "ch07_timeline.tsv" in t and "date not recorded" in t
    assert "kernel wmma_gemm_sparse" in t and "kernel img2col_channel_first" in t  # kernels named
    chunk_texts = [x.get_text() for x in fig.axes[0].texts]
    assert all(str(i) in chunk_texts for i in range(16))  # every chunk labelled
    # --timeline-chapter of a chapter without a stage timeline: its own trace, as before.
    charts.chart_timeline(view, list(profiles.values()), tmp_path / "t.png", "ch01")
    assert "Timeline of 01 host_img2col" in texts(figs[-1])


def test_stage_timeline_shape_needs_an_unambiguous_match(tmp_path):
    stages = [Stage("pipelined", "0", "0", "h2d x chunk", 0.0, 1000.0, "ch07_s", "r", "/r/ch07_timeline.tsv"),
              Stage("serial", "0", "0", "h2d x chunk", 0.0, 2000.0, "ch07_s", "r", "/r/ch07_timeline.tsv")]

    def summary(variant, e2e, shape, file):
        return Summary("ch07_s", variant, e2e, 0.5, True, "G", shape, "r", file)
    rows = [summary("pipelined", 1.02, "B=16 fp16", "/r/bench.tsv"), summary("serial", 2.05, "B=16 fp16", "/r/bench.tsv"),
            summary("pipelined", 1.01, "B=16 fp16 bias silu", "/r/bench.tsv"),  # no serial row: not a match
            summary("pipelined", 0.99, "B=16 fp16", "/r/sweep.tsv"),  # no serial row either
            summary("pipelined", 0.2, "B=4 fp16", "/r/tour.tsv"), summary("serial", 0.4, "B=4 fp16", "/r/tour.tsv")]
    view = P(stages=stages, all_summaries=rows, date="d", run="r", run_dates={})
    tl = analysis.stage_timeline(view, [])
    assert (tl.shape, tl.device, tl.date) == ("B=16 fp16", "G", "d") and "bench.tsv" in tl.matched
    # Two matching shapes: no shape is claimed.
    rows += [summary("pipelined", 1.0, "B=32 fp16", "/r/other.tsv"), summary("serial", 2.0, "B=32 fp16", "/r/other.tsv")]
    tl = analysis.stage_timeline(view, [])
    assert tl.shape == "shape not recorded" and tl.device == "device not recorded"


def test_stage_timeline_is_loaded_for_its_chapter(committed):
    view, _ = committed
    assert view.stages and {s.chapter for s in view.stages} == {"ch07_stream_pipeline"}
    first = view.stages[0]
    assert (first.variant, first.stream, first.chunk, first.stage, first.category) == \
        ("pipelined", "0", "", "h2d weight", "h2d")
    # The file's own first row (the committed file changes with each GPU check).
    header, row = (line.split("\t") for line in pathlib.Path(first.file).read_text().splitlines()[:2])
    assert math.isclose(first.end_us, float(row[header.index("end_us")]))
