"""Chapter 08 in the charts, the project's own side files, and the table of every variant's run.

- The roofline draws chapter 08's headline kernel of each layout (cf_*, cl_*). When the charted run
  does not hold the chapter, its points come from a benchmark's kernel table of the same device, and
  the legend and footer name the file and the shape.
- The ladder takes such a chapter only at the charted run's B, D, L and W; otherwise its footer says
  that the chapter was measured only at other shapes, instead of mixing shapes silently.
- The project's own tables that are no profile (chapter 07's pipeline table, the stream gate table,
  the reference's timing, the Nsight Compute and register tables, ...) are known files, not "ignored".
- `plot` writes variant_runs.tsv beside the charts: bytes moved, copy floor and share of the copy
  ceiling of every run, which docs/what-we-learned.md quotes.
"""
import pathlib
import shutil

import pytest

from conftest import drawn_text
from profiling import analysis, cli, formats, load

ROOT = pathlib.Path(__file__).resolve().parents[3]
COMMITTED = ROOT / "results" / "gpu-check"
# The chart logic is tested on a frozen copy of an earlier check's result folder (fixtures/README.md),
# not on results/gpu-check, which each new check replaces; the committed folder itself is tested for
# loading without notes and for its variant_runs.tsv being current.
FROZEN = ROOT / "tests" / "python" / "fixtures" / "gpu_check_2026_11"

SUMMARY = "chapter\tname\tvariant\tend_to_end_ms\tkernels_ms\tverified\tdevice\tshape\n"
KERNELS = "chapter\tname\tvariant\tkernel\tms\ttflops\tgbs\tceiling_pct\tcopy_ceiling_gbs\tdevice\tshape\n"


@pytest.fixture(scope="module")
def committed():
    view = analysis.select(load.load([str(FROZEN)]))
    return view, analysis.chapter_profiles(view)


# ---- chapter 08 from its benchmark (the frozen results: their profiling run predates it) ----------

def test_chapter_08_is_borrowed_from_its_benchmark(committed):
    view, profiles = committed
    assert "ch08_direct_forward" not in {p.chapter for p in profiles}
    borrowed = analysis.borrowed_profiles(view, profiles)
    assert [b.chapter for b in borrowed] == ["ch08_direct_forward", "ch09_direct_backward"]
    p = borrowed[0]
    assert p.chapter == "ch08_direct_forward" and p.borrowed == "bench_08.tsv" and not p.comparable
    # The headline variant of each layout, from the kernel table beside bench_08.tsv, its first shape.
    assert [(m.variant, m.kernel) for m in p.mains] == [("cf_chunked", "conv_fwd_cf_chunked"),
                                                       ("cl_tiled", "conv_fwd_cl_tiled")]
    assert {m.shape for m in p.mains} == {"B=8 D=4096 L=4096 W=4 bf16"}
    assert all(m.file.endswith("bench_08_kernels.tsv") for m in p.mains)


def test_roofline_draws_both_layouts_of_chapter_08(committed, monkeypatch, tmp_path):
    view, profiles = committed
    borrowed = analysis.borrowed_profiles(view, profiles)
    points = [pt for pt in analysis.roofline_points(borrowed) if pt[1].startswith("conv_fwd")]
    assert [pt[1] for pt in points] == ["conv_fwd_cf_chunked", "conv_fwd_cl_tiled"]
    for pt in points:  # 2 flop per byte in bf16: W = 4 multiply-adds per 4 bytes (x read, out written)
        assert pt[2] == pytest.approx(2.0, rel=0.01)
        assert pt[3] == pytest.approx(pt.summary.tflops)
        # Below the bandwidth line by the share of the copy ceiling that run measured.
        assert pt[3] / (pt[2] * pt.summary.copy_ceiling_gbs / 1e3) == pytest.approx(pt.summary.ceiling_pct / 100,
                                                                                   abs=0.002)
    t = drawn_text(monkeypatch, lambda charts: charts.chart_roofline(view, profiles, tmp_path / "r.png"))
    assert "08 cf_chunked" in t and "08 cl_tiled" in t
    assert "conv_fwd_cf_chunked (cf_chunked), bf16, counts 1× the conv's flops, 66.6 % of the copy ceiling" in t
    assert "at B=8 D=4096 L=4096 W=4, from bench_08_kernels.tsv (not in this run)" in t
    assert "08 direct_forward: not in this run; from bench_08_kernels.tsv at B=8 D=4096 L=4096 W=4 bf16" in t
    assert "another shape than the other points" in t
    assert "B=4 D=256 L=2048 W=4" in t  # the run's own shape stays in the footer


def test_ladder_does_not_mix_shapes_and_says_so(committed, monkeypatch, tmp_path):
    view, profiles = committed
    t = drawn_text(monkeypatch, lambda charts: charts.chart_ladder(view, profiles, tmp_path / "l.png"))
    assert "08 direct_forward: not drawn" in t and "B=8 D=4096 L=4096 W=4" in t and "bench_08.tsv" in t
    ticks = t.split(" | ")
    assert not any(x.startswith("08 direct_forward") for x in ticks)


def test_categories_and_top_kernels_say_chapter_08_is_not_in_the_run(committed, monkeypatch, tmp_path):
    view, profiles = committed
    for draw in (lambda c: c.chart_categories(view, profiles, tmp_path / "c.png"),
                 lambda c: c.chart_top_kernels(view, profiles, tmp_path / "t.png")):
        assert "not in this run, so not drawn: 08 direct_forward" in drawn_text(monkeypatch, draw)


def _bench(folder, rows, kernels):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "bench_08.tsv").write_text(SUMMARY + "".join("\t".join(r) + "\n" for r in rows))
    (folder / "bench_08_kernels.tsv").write_text(KERNELS + "".join("\t".join(r) + "\n" for r in kernels))


def test_ladder_takes_a_borrowed_chapter_at_the_same_shape(fixtures, tmp_path, monkeypatch):
    shutil.copytree(fixtures / "builtin_run", tmp_path / "run")
    other, same = "B=8 D=64 L=64 W=4 bf16", "B=2 D=500 L=1000 W=4 bf16"  # the run: B=2 D=500 L=1000 W=4 fp32
    _bench(tmp_path / "bench",
           [("08", "direct_forward", "cf_vector", "0.0100", "0.0010", "yes", "Test GPU", other),
            ("08", "direct_forward", "cf_vector", "0.0090", "0.0008", "yes", "Test GPU", same),
            ("08", "direct_forward", "cl_tiled", "0.0095", "0.0009", "yes", "Test GPU", same)],
           [("08", "direct_forward", "cf_vector", "conv_fwd_cf_vector", "0.0010", "1.0", "500.0", "12.0", "4000.0",
             "Test GPU", other),
            ("08", "direct_forward", "cf_vector", "conv_fwd_cf_vector", "0.0008", "1.0", "500.0", "12.5", "4000.0",
             "Test GPU", same),
            ("08", "direct_forward", "cl_tiled", "conv_fwd_cl_tiled", "0.0009", "0.9", "450.0", "11.0", "4000.0",
             "Test GPU", same)])
    view = analysis.select(load.load([str(tmp_path)]))
    assert view.run.endswith("run")
    profiles = analysis.chapter_profiles(view)
    (p,) = analysis.borrowed_profiles(view, profiles)
    assert p.comparable and (p.e2e_ms, p.device_ms) == (0.009, 0.0008)
    assert [m.kernel for m in p.mains] == ["conv_fwd_cf_vector", "conv_fwd_cl_tiled"]
    assert {m.shape for m in p.mains} == {same}
    # x and out: 2 * 2*500*1000 bf16 values = 4e6 bytes at 4000 GB/s = 1 us
    assert p.floor_ms == pytest.approx(0.001)
    t = drawn_text(monkeypatch, lambda charts: charts.chart_ladder(view, profiles, tmp_path / "l.png"))
    assert "08 direct_forward (bench_08.tsv)" in t and "×2.22" in t  # 0.020 ms / 0.009 ms
    assert "its figures come from bench_08.tsv" in t and "not drawn" not in t


def test_a_device_elsewhere_is_not_borrowed(fixtures, tmp_path):
    shutil.copytree(fixtures / "builtin_run", tmp_path / "run")
    shape = "B=2 D=500 L=1000 W=4 bf16"
    _bench(tmp_path / "bench", [("08", "direct_forward", "cf_vector", "0.01", "0.001", "yes", "Other GPU", shape)],
           [("08", "direct_forward", "cf_vector", "k", "0.001", "1.0", "500.0", "12.0", "4000.0", "Other GPU", shape)])
    view = analysis.select(load.load([str(tmp_path)]))
    assert analysis.borrowed_profiles(view, analysis.chapter_profiles(view)) == []


# ---- chapter 08 in the charted run itself (the next GPU check's profiling run) -------------------

def _trace(path, kernel, it_ns):
    rows = ['"Category","Name","Iteration","Stream_Id","Start_Timestamp","End_Timestamp"']
    for it in range(4):
        t = 10**9 + it * 10**6
        rows.append(f'"kernel","{kernel}",{it},0,{t},{t + it_ns}')
    path.write_text("\n".join(rows) + "\n")


def test_chapter_08_in_the_run_is_drawn_in_every_chart(fixtures, tmp_path, monkeypatch):
    run = tmp_path / "run"
    shutil.copytree(fixtures / "builtin_run", run)
    shape = "B=2 D=500 L=1000 W=4 bf16"
    variants = (("cf_chunked", "conv_fwd_cf_chunked", 900), ("cf_vector", "conv_fwd_cf_vector", 800),
                ("cl_tiled", "conv_fwd_cl_tiled", 1000), ("cl_naive", "conv_fwd_naive", 3000))
    with open(run / "summary.tsv", "a") as f:
        for v, _, ns in variants:
            f.write(f"08\tdirect_forward\t{v}\t{ns / 1e6 + 0.0005:.4f}\t{ns / 1e6:.4f}\tyes\tTest GPU\t{shape}\n")
    with open(run / "summary_kernels.tsv", "a") as f:
        for v, k, ns in variants:
            f.write(f"08\tdirect_forward\t{v}\t{k}\t{ns / 1e6:.4f}\t{4e-3 / (ns / 1e6) / 1e3:.4f}\t"
                    f"{4e-3 / (ns / 1e6):.1f}\t{100 * 4e-3 / (ns / 1e6) / 4000:.1f}\t4000.0\tTest GPU\t{shape}\n")
    (run / "ch08_direct_forward").mkdir()
    for v, k, ns in variants:
        _trace(run / "ch08_direct_forward" / f"ch08_direct_forward_{v}_trace.csv", k, ns)
    view = analysis.select(load.load([str(run)]))
    profiles = analysis.chapter_profiles(view)
    p = next(p for p in profiles if p.chapter == "ch08_direct_forward")
    assert p.variant == "cf_chunked" and [m.variant for m in p.mains] == ["cf_chunked", "cl_tiled"]
    assert p.kernels == {"conv_fwd_cf_chunked": pytest.approx(0.0009)}
    assert analysis.borrowed_profiles(view, profiles) == []
    assert ("08 direct_forward", "conv_fwd_cf_chunked", pytest.approx(0.0009)) in analysis.top_kernels(profiles)
    assert "08 direct_forward" in analysis.category_bars(profiles)[0]
    assert "08 direct_forward" in analysis.ladder(profiles)[0]
    assert [pt[1] for pt in analysis.roofline_points(profiles) if pt[0] == "08 direct_forward"] == \
        ["conv_fwd_cf_chunked", "conv_fwd_cl_tiled"]
    t = drawn_text(monkeypatch, lambda charts: charts.chart_roofline(view, profiles, tmp_path / "r.png"))
    assert "08 cf_chunked" in t and "08 cl_tiled" in t and "not in this run" not in t
    assert "one point per layout" in t


# ---- the project's own side files ---------------------------------------------------------------

SIDE_FILES = {
    # name: (header line, what the note-free detection must say)
    "bench_07_pipeline.tsv": ("variant\thost_memory\tstreams\tchunks\twall_ms\tstages_ms\toverlap\tdevice\tshape",
                              "pipeline table"),
    "summary_pipeline.tsv": ("variant\thost_memory\tstreams\tchunks\twall_ms\tstages_ms\toverlap\tdevice\tshape",
                             "pipeline table"),
    "cupti_vs_events.tsv": ("chapter\tvariant\ttimed_runs\tevents_ms\tcupti_ms\tdifference_pct", "compare"),
    "stream_gate.tsv": ("chapter\tvariant\tkernel\tkernel_ms_gate_on\tkernel_ms_gate_off\te2e_ms_gate_on\t"
                        "e2e_ms_gate_off", "stream gate"),
    "reference_2e31.tsv": ("batch\tdim\tseqlen\twidth\telements\tlayout\tthreads\tinputs_s\tforward_s\tbackward_s\t"
                           "backward_run", "fp64 reference"),
    "ch08_ncu.tsv": ("kernel\targs\tlaunches\tgpu__time_duration.sum[ns]", "Nsight Compute"),
    "ch08_resources.tsv": ("kernel\targs\tregisters\tstack\tlocal", "registers"),
    "variant_runs.tsv": ("\t".join(analysis.VARIANT_RUN_COLUMNS), "every run"),
    "parsed.csv": (",".join(("source", "run", "chapter", "category", "name", "calls", "total_ns", "avg_ns")),
                   "normalised table"),
}


@pytest.mark.parametrize("name", sorted(SIDE_FILES))
def test_side_files_are_known(tmp_path, name):
    header, what = SIDE_FILES[name]
    path = tmp_path / name
    path.write_text(header + "\n")
    d = formats.detect(path, path.read_text())
    assert d.fmt == "unused" and what in d.what


def test_no_note_for_the_projects_own_files_but_one_for_an_unknown(tmp_path):
    for name, (header, _) in SIDE_FILES.items():
        (tmp_path / name).write_text(header + "\n")
    # The large run's files are chapter summaries: read, not noted.
    (tmp_path / "large_2e31.tsv").write_text(SUMMARY + "05\twmma_gemm\tsparse\t9.0\t1.0\tyes\tG\tB=1 D=4096 "
                                             "L=524289 W=4 fp16\n")
    (tmp_path / "mystery.tsv").write_text("when\twhat\nmonday\tcompile\n")
    ds = load.load([str(tmp_path)])
    assert len(ds.notes) == 1 and "mystery.tsv: ignored" in ds.notes[0]
    assert [s.variant for s in ds.summaries] == ["sparse"]


def test_the_committed_results_load_without_notes():
    """What the tour prints on a machine without a GPU: every committed file is a known one."""
    ds = load.load([str(COMMITTED)])
    assert ds.notes == []


def test_a_named_side_file_says_what_it_is(tmp_path, capsys):
    path = tmp_path / "stream_gate.tsv"
    path.write_text(SIDE_FILES["stream_gate.tsv"][0] + "\n")
    assert cli.main(["parse", str(path)]) == 2  # nothing to parse, and it says why
    assert "the stream gate on and off" in capsys.readouterr().err


# ---- every variant's run: bytes, copy floor, share of the copy ceiling ---------------------------

@pytest.fixture(scope="module")
def runs():
    ds = load.load([str(FROZEN)])
    return analysis.variant_runs(ds.summaries, ds.kernels, base=FROZEN)


def one(runs, **where):
    rows = [r for r in runs if all(r[k] == v for k, v in where.items())]
    assert len(rows) == 1, (where, len(rows))
    return rows[0]


def test_variant_runs_bytes_and_shares(runs):
    # Chapter 05's route at 8x4096x4096 fp16: img2col, weight expansion and the sparse GEMM.
    r = one(runs, file="bench_08_ch05.tsv", variant="sparse")
    assert r["kernels"] == "wmma_gemm_sparse+preprocess_input+expand_weights"
    assert float(r["moved_mb"]) == pytest.approx(3611.6 * 0.3718 + 4022.7 * 0.3336 + 2410.4 * 0.0557, abs=0.1)
    assert float(r["required_mb"]) == pytest.approx(2 * 8 * 4096 * 4096 * 2 / 1e6, abs=0.1)
    assert float(r["moved_over_required"]) == pytest.approx(5.25, abs=0.01)
    assert float(r["flop_multiple"]) == pytest.approx(16, rel=0.01)
    assert float(r["ceiling_pct"]) == pytest.approx(100 * float(r["floor_ms"]) / 0.7616, abs=0.1)
    # A direct kernel moves the required bytes once: its share is its kernel's own.
    d = one(runs, file="bench_08.tsv", variant="cf_chunked", shape="B=8 D=4096 L=4096 W=4 bf16")
    assert float(d["moved_over_required"]) == pytest.approx(1.0, abs=0.01)
    assert float(d["ceiling_pct"]) == pytest.approx(66.6, abs=0.1)
    assert float(d["flop_per_byte"]) == pytest.approx(2.0, abs=0.01)
    # The backward's floor counts three tensors; its "whole backward" row is no extra kernel.
    b = one(runs, file="bench_06.tsv", variant="deterministic", shape="B=8 D=4096 L=4096 W=4 bf16")
    assert "whole" not in b["kernels"] and float(b["required_mb"]) == pytest.approx(3 * 8 * 4096 * 4096 * 2 / 1e6,
                                                                                     abs=0.1)


def test_variant_runs_match_each_run_to_its_own_kernels(runs):
    """bench_05 runs `block` three times at one shape (three tile sizes): each summary row gets the
    kernels of its own run, in order."""
    blocks = [r for r in runs if r["file"] == "bench_05.tsv" and r["variant"] == "block"
              and r["shape"] == "B=8 D=1024 L=4096 W=4 fp16"]
    assert [r["device_ms"] for r in blocks] == ["1.0902", "1.2286", "1.6899"]
    assert [r["copy_ceiling_gbs"] for r in blocks] == ["4139.5", "4133.3", "4127.2"]
    graph = one(runs, file="bench_07.tsv", variant="graph")  # a variant without kernel rows: no bytes claimed
    assert graph["moved_mb"] == "" and graph["device_ms"] == "2.9818"


def test_plot_writes_the_table_and_reads_it_back_as_known(tmp_path, capsys):
    ref = tmp_path / "gpu-check"
    shutil.copytree(COMMITTED, ref)
    assert cli.main(["plot", str(ref), "--out", str(ref / "charts")]) == 0
    table = ref / "charts" / "variant_runs.tsv"
    assert table.is_file() and str(table) in capsys.readouterr().out
    header = table.read_text().splitlines()[0].split("\t")
    assert header == list(analysis.VARIANT_RUN_COLUMNS)
    assert cli.main(["plot", str(ref), "--out", str(ref / "charts")]) == 0  # its own table in the folder
    assert "ignored" not in capsys.readouterr().err


def test_the_committed_table_is_current():
    """docs/what-we-learned.md quotes results/gpu-check/charts/variant_runs.tsv: it must be what `plot`
    makes of the committed result files now (re-draw the charts after adding result files)."""
    ds = load.load([str(COMMITTED)])
    runs = analysis.variant_runs(ds.summaries, ds.kernels, base=COMMITTED)
    committed = (COMMITTED / "charts" / "variant_runs.tsv").read_text().splitlines()
    assert committed[0].split("\t") == list(analysis.VARIANT_RUN_COLUMNS)
    assert [line.split("\t") for line in committed[1:]] == \
        [[str(r[c]) for c in analysis.VARIANT_RUN_COLUMNS] for r in runs]


def test_large_speed_ups_are_written_out():
    """Chapter 08's end-to-end speed-up over chapter 01 runs into the thousands: "×1,643", not
    "×1.64e+03" (the ladder's labels)."""
    from profiling import charts
    assert [charts._times(v) for v in (1.0, 1.194, 40.31, 123.4, 1643.2)] == ["1", "1.19", "40.3", "123", "1,643"]
