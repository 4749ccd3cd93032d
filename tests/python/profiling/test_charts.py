"""The numbers behind each chart, against values computed by hand from the fixtures, and the PNG
files themselves.

builtin_run/ch01_host_img2col: timed runs 1 and 2 (0 and 3 verify). Each run: a host step (3000 ns in
run 1, 5000 ns in run 2), an allocation of 1000 ns, a copy to the device of 2000 ns, two kernels of
2000 ns, a copy back of 1500 ns and a free of 500 ns. Per run: host 4000, alloc 1000, h2d 2000,
kernel 4000, d2h 1500, free 500 ns = 13000 ns.
builtin_run/ch02_gpu_preprocess: headline variant "batched", one timed run: host 1000, alloc 500,
h2d 1000, kernels 1000 + 2000, d2h 1000, free 500 ns = 7000 ns; the "looped" variant is not used.
cupti_run: the same chapter 01 layout, traced by CUPTI: kernels 1900 ns each on stream 7, copies of
1600 ns (to the device) and 1200 ns (back), cudaMalloc 900 ns, cudaFree 400 ns; the host step is the
NVTX range with no runtime call in it (4000 ns per run); a copy and two kernels outside the timed runs
must not count.
"""
import pytest

from profiling import analysis, load
from profiling.table import FormatError


def view_of(path, **kw):
    return analysis.select(load.load([str(path)]), **kw)


@pytest.fixture
def builtin(fixtures):
    v = view_of(fixtures / "builtin_run")
    return v, analysis.chapter_profiles(v)


@pytest.fixture
def cupti(fixtures):
    v = view_of(fixtures / "cupti_run")
    return v, analysis.chapter_profiles(v)


def test_view_labels(builtin, cupti):
    v, _ = builtin
    assert (v.source, v.device, v.date, v.shape) == ("builtin", "Test GPU", "2026-01-02 03:04 UTC",
                                                     "B=2 D=500 L=1000 W=4 fp32")
    assert cupti[0].source == "cupti"  # from run_info.json, though the run also holds the chapters' files


def test_windows_of_timed_runs(fixtures):
    rows = load.load([str(fixtures / "builtin_run" / "ch01_host_img2col")]).rows
    trace = [r for r in rows if r.kind == "trace"]
    t0 = 1_000_000_000_000
    assert analysis.timed_windows(trace) == {1: (t0 + 100_000, t0 + 200_000), 2: (t0 + 200_000, t0 + 300_000)}


def test_category_bars_builtin(builtin):
    _, profiles = builtin
    labels, ms, share = analysis.category_bars(profiles)
    assert labels == ["01 host_img2col", "02 gpu_preprocess"]
    expect_ms = {"alloc": [0.001, 0.0005], "h2d": [0.002, 0.001], "host": [0.004, 0.001], "kernel": [0.004, 0.003],
                 "d2h": [0.0015, 0.001], "free": [0.0005, 0.0005]}
    for c, v in expect_ms.items():
        assert ms[c] == pytest.approx(v), c
    assert share["host"] == pytest.approx([100 * 4 / 13, 100 / 7])
    assert share["kernel"] == pytest.approx([100 * 4 / 13, 300 / 7])
    for i in range(2):
        assert sum(share[c][i] for c in share) == pytest.approx(100)
    assert [p.runs for p in profiles] == [2, 1] and {p.basis for p in profiles} == {"timed runs"}


def test_category_bars_from_statistics_alone(fixtures, tmp_path):
    """Without the trace, the stats file is divided by the number of runs (run_info's iters)."""
    import shutil
    shutil.copytree(fixtures / "builtin_run", tmp_path / "run")
    (tmp_path / "run" / "ch01_host_img2col" / "ch01_host_img2col_trace.csv").unlink()
    shutil.rmtree(tmp_path / "run" / "ch02_gpu_preprocess")
    v = view_of(tmp_path / "run")
    p = analysis.chapter_profiles(v)[0]
    assert p.runs == 2 and p.categories["host"] == pytest.approx(0.004) and p.categories["kernel"] == pytest.approx(0.004)
    assert p.timeline == []


def test_category_bars_cupti(cupti):
    _, (p,) = cupti
    assert p.basis == "timed runs" and p.runs == 2
    assert p.categories == pytest.approx({"alloc": 0.0009, "h2d": 0.0016, "host": 0.004, "kernel": 0.0038,
                                          "d2h": 0.0012, "free": 0.0004})


def test_the_measuring_frames_own_work_is_left_out(fixtures, tmp_path):
    """The chapters' frame puts GPU work of its own into the timed runs: the L2 flush (a memset
    enqueued outside every phase range) and the StreamGate kernels that hold a stream while a launch
    is enqueued. Neither is the chapter's: the CUPTI categories and top kernels stay as they were."""
    import shutil
    run = tmp_path / "run"
    shutil.copytree(fixtures / "cupti_run", run)
    d = run / "ch01_host_img2col"
    with open(d / "ch01_host_img2col_cuda_api_trace.csv", "a") as f:
        f.write('"CUDA_RUNTIME_API","cudaMemsetAsync",4242,4242,900,5000099000,5000099100\n')
        f.write('"CUDA_RUNTIME_API","cudaLaunchKernel",4242,4242,901,5000005900,5000005950\n')
    with open(d / "ch01_host_img2col_kernel_trace.csv", "a") as f:
        f.write('"KERNEL_DISPATCH","CUDA 0",1,7,4242,9,2,"[CUDA memset]",900,5000099500,5000099900'
                ',0,0,0,0,0,0,0,0,0,0,0\n')
        f.write('"KERNEL_DISPATCH","CUDA 0",1,7,4242,10,3,"conv1d::(anonymous namespace)::stream_gate_wait('
                'unsigned int volatile*, unsigned int, unsigned long long)",901,5000005960,5000006090'
                ',0,0,0,0,0,1,1,1,1,1,1\n')
    (p,) = analysis.chapter_profiles(view_of(run))
    assert p.categories["kernel"] == pytest.approx(0.0038)
    assert analysis.top_kernels([p]) == [("01 host_img2col", "naive_gemm", pytest.approx(0.0038))]
    # The filter itself drops the work of runtime calls made outside every phase range: the two added
    # here, and the fixture's copy-ceiling copy (1) and warm-up kernels (26, 27), which it launched
    # outside the ranges too. Everything else is kept.
    rows = [r for r in load.load([str(run)]).rows if r.source == "cupti"]
    kept = analysis._chapter_work(rows)
    dropped = [r for r in rows if not any(r is k for k in kept)]
    assert sorted(r.metrics["correlation"] for r in dropped) == ["1", "26", "27", "900", "901"]
    assert {r.category for r in dropped} == {"kernel", "d2d"}


def test_external_statistics_are_per_pipeline_run(fixtures):
    """rocprofv3 statistics with no common clock: whole-process totals, no host time."""
    v = view_of(fixtures / "rocprofv3_6.4")
    (p,) = analysis.chapter_profiles(v)
    assert p.basis == "whole process" and p.runs == 1
    assert p.categories["kernel"] == pytest.approx(0.005)  # the two kernel traces: 1000 + 4000 ns
    assert p.categories["h2d"] == pytest.approx(0.003) and p.categories["alloc"] == pytest.approx(0.003)
    assert p.categories["host"] is None


def test_top_kernels(builtin, cupti):
    assert analysis.top_kernels(builtin[1]) == [
        ("01 host_img2col", "naive_gemm", pytest.approx(0.004)), ("02 gpu_preprocess", "naive_gemm", pytest.approx(0.002)),
        ("02 gpu_preprocess", "img2col_kernel", pytest.approx(0.001))]
    assert analysis.top_kernels(builtin[1], n=1)[1][1] == "naive_gemm"
    assert analysis.top_kernels(cupti[1]) == [("01 host_img2col", "naive_gemm", pytest.approx(0.0038))]


def test_ladder(builtin):
    labels, e2e, dev, floors, speedup = analysis.ladder(builtin[1])
    assert labels == ["01 host_img2col", "02 gpu_preprocess"]
    assert e2e == [0.02, 0.01] and dev == [0.004, 0.003]
    # x + out = 2 * 2*500*1000 fp32 values = 8e6 bytes at 4000 GB/s = 2 us
    assert floors == pytest.approx([0.002, 0.002])
    assert speedup == pytest.approx([1.0, 2.0])


def test_ladder_gives_the_backward_chapter_no_speed_up():
    from types import SimpleNamespace as P
    ps = [P(label="01 host_img2col", e2e_ms=10.0, device_ms=1.0, floor_ms=None),
          P(label="06 channel_last_backward", e2e_ms=0.1, device_ms=0.05, floor_ms=None),
          P(label="07 stream_pipeline", e2e_ms=0.5, device_ms=0.4, floor_ms=None)]
    assert analysis.ladder(ps)[4] == [1.0, None, 20.0]


def test_shape_label():
    assert analysis.shape_label([]) == "shape not recorded"
    assert analysis.shape_label(["B=1 D=2 L=3 W=4 fp32"] * 2) == "B=1 D=2 L=3 W=4 fp32"
    assert analysis.shape_label(["B=1 D=2 L=3 W=4 fp32", "B=1 D=2 L=3 W=4 fp16"]) == \
        "B=1 D=2 L=3 W=4, fp16 or fp32 (each chapter's own)"
    assert analysis.shape_label(["B=1 D=2 L=3 W=4 fp32", "B=9 D=2 L=3 W=4 fp32"]) == "each chapter's default shape"


def test_copy_floor_shapes():
    assert analysis.copy_floor_ms("B=4 D=512 L=2048 W=4 fp32", 4136.9) == pytest.approx(2 * 4 * 512 * 2048 * 4 / 4136.9e9 * 1e3)
    assert analysis.copy_floor_ms("B=1 D=10 L=10 W=2 bf16 bias silu", 1000) == pytest.approx(400 / 1e12 * 1e3)
    assert analysis.copy_floor_ms("no shape", 1000) is None


def test_timeline(builtin, cupti):
    p = analysis.timeline_chapter(builtin[1])
    assert p.chapter == "ch02_gpu_preprocess"  # uses two streams
    lanes = {}
    for lane, start, dur, cat, name in p.timeline:
        lanes.setdefault(lane, []).append((round(start, 6), round(dur, 6), cat))
    assert lanes == {"host": [(0.0, 0.001, "host"), (0.001, 0.0005, "alloc"), (0.0065, 0.0005, "free")],
                     "stream 0": [(0.0015, 0.001, "h2d"), (0.0055, 0.001, "d2h")],
                     "stream 1": [(0.0025, 0.001, "kernel"), (0.0035, 0.002, "kernel")]}
    assert analysis.timeline_chapter(builtin[1], "ch01").chapter == "ch01_host_img2col"
    with pytest.raises(FormatError, match="--timeline-chapter ch09"):
        analysis.timeline_chapter(builtin[1], "ch09")
    c = analysis.timeline_chapter(cupti[1])
    kinds = {lane for lane, *_ in c.timeline}
    assert kinds == {"NVTX ranges", "runtime API", "stream 7"}
    assert sorted(round(d, 6) for lane, s, d, cat, n in c.timeline if cat == "kernel") == [0.0019, 0.0019]


def test_roofline(builtin, cupti):
    pts = analysis.roofline_points(builtin[1])
    assert pts == [("01 host_img2col", "naive_gemm", pytest.approx(20.0), pytest.approx(2.0)),
                   ("02 gpu_preprocess", "naive_gemm", pytest.approx(20.0), pytest.approx(4.0))]
    assert analysis.bandwidth_ceiling(builtin[1]) == 4000.0
    # CUPTI's time for the main kernel (3.8 us per run) replaces the events' (4 us): 2 * 4 / 3.8 TFLOP/s
    (pt,) = analysis.roofline_points(cupti[1])
    assert pt[3] == pytest.approx(2.0 * 0.004 / 0.0038)


def test_kernel_agreement(fixtures, tmp_path):
    ds = load.load([str(fixtures / "cupti_run")])
    (row,) = analysis.kernel_agreement(ds, "cupti")
    assert row == ("ch01_host_img2col", "", 2, pytest.approx(0.004), pytest.approx(0.0038),
                   "work enqueued by each kernel record", 2)
    # Without NVTX ranges: the kernels that start inside the timed runs (the warm-up's do not count).
    import shutil
    shutil.copytree(fixtures / "cupti_run", tmp_path / "run")
    (tmp_path / "run" / "ch01_host_img2col" / "ch01_host_img2col_marker_api_trace.csv").unlink()
    (row,) = analysis.kernel_agreement(load.load([str(tmp_path / "run")]), "cupti")
    assert row[3:] == (pytest.approx(0.004), pytest.approx(0.0038), "kernels in the timed runs", 2)


def test_kernel_agreement_for_a_graph_record(tmp_path):
    """A record that times a whole graph (a copy and two kernels on two streams) is compared with the
    span of the work its cudaGraphLaunch enqueued: from the copy's start to the last kernel's end. A
    kernel launched through the driver API (as cuBLAS does: no runtime call to correlate) is found by
    its start inside the record's range, also when a runtime call in that range enqueued other work
    (cuBLAS's memset before its GEMM): the span runs from the memset's start to the GEMM's end."""
    d = tmp_path / "ch07_stream_pipeline"
    d.mkdir()
    t = 7_000_000
    own = ['"Category","Name","Iteration","Stream_Id","Start_Timestamp","End_Timestamp"']
    marks, api, kern, copy = [], [], [], []
    for it in range(4):
        s = t + 100_000 * it
        own.append(f'"kernel","graph replay",{it},0,{s},{s + 10_000}')
        marks.append(f'"NVTX","graph replay",1,1,0,{s - 5},{s + 40}')
        api.append(f'"CUDA_RUNTIME_API","cudaGraphLaunch",1,1,{50 + it},{s},{s + 30}')
        copy.append(f'"MEMORY_COPY","MEMORY_COPY_HOST_TO_DEVICE",3,"CPU","CUDA 0",{50 + it},{s + 300},{s + 4300}')
        kern.append(f'"KERNEL_DISPATCH","CUDA 0",1,3,0,{it},1,"k1",{50 + it},{s + 4000},{s + 7000}')
        kern.append(f'"KERNEL_DISPATCH","CUDA 0",1,4,0,{it},2,"k2",{50 + it},{s + 5000},{s + 9800}')
        own.append(f'"kernel","cublas gemm",{it},0,{s + 20000},{s + 25000}')
        marks.append(f'"NVTX","cublas gemm",1,1,0,{s + 19990},{s + 20050}')
        kern.append(f'"KERNEL_DISPATCH","CUDA 0",1,3,0,{it},3,"sgemm",{900 + it},{s + 20100},{s + 24600}')
        # ... after a memset it enqueued through the runtime (written as a kernel, like ROCm's fills)
        api.append(f'"CUDA_RUNTIME_API","cudaMemsetAsync",1,1,{700 + it},{s + 20010},{s + 20020}')
        kern.append(f'"KERNEL_DISPATCH","CUDA 0",1,3,0,{it},4,"[CUDA memset]",{700 + it},{s + 20050},{s + 20080}')
    (d / "ch07_stream_pipeline_trace.csv").write_text("\n".join(own) + "\n")
    head = '"Domain","Function","Process_Id","Thread_Id","Correlation_Id","Start_Timestamp","End_Timestamp"\n'
    (d / "p_marker_api_trace.csv").write_text(head + "\n".join(marks) + "\n")
    (d / "p_cuda_api_trace.csv").write_text(head + "\n".join(api) + "\n")
    (d / "p_memory_copy_trace.csv").write_text(
        '"Kind","Direction","Stream_Id","Source_Agent_Id","Destination_Agent_Id","Correlation_Id",'
        '"Start_Timestamp","End_Timestamp"\n' + "\n".join(copy) + "\n")
    (d / "p_kernel_trace.csv").write_text(
        '"Kind","Agent_Id","Queue_Id","Stream_Id","Thread_Id","Dispatch_Id","Kernel_Id","Kernel_Name",'
        '"Correlation_Id","Start_Timestamp","End_Timestamp"\n' + "\n".join(kern) + "\n")
    (row,) = analysis.kernel_agreement(load.load([str(tmp_path)]), "cupti")
    # per run: the graph's 9.5 us (copy start to k2's end) + 4.55 us (memset start to sgemm's end)
    assert row == ("ch07_stream_pipeline", "", 2, pytest.approx(0.015), pytest.approx(0.01405),
                   "work enqueued by each kernel record", 2)


def test_all_charts_written(builtin, tmp_path):
    from profiling import charts
    v, profiles = builtin
    paths = charts.draw_all(v, profiles, tmp_path)
    # All but the book's, which needs the tour's book.tsv (tests/python/profiling/test_book.py).
    assert [p.name for p in paths] == [n for n in charts.CHART_FILES if n != "book.png"]
    for p in paths:
        data = p.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and 3_000 < len(data) < 200_000, (p, len(data))


def test_charts_without_data_are_skipped_with_a_reason(fixtures, tmp_path):
    from profiling import charts
    v = view_of(fixtures / "nsys_2024")
    (tmp_path / "timeline.png").write_bytes(b"stale")
    said = []
    paths = charts.draw_all(v, analysis.chapter_profiles(v), tmp_path, log=said.append)
    assert [p.name for p in paths] == ["categories.png", "top_kernels.png", "ladder.png"]
    assert not (tmp_path / "timeline.png").exists()  # a stale chart is removed, not left looking current
    assert any("timeline" in s and "no chapter has trace records" in s for s in said)
    assert any("roofline" in s and "kernel summary" in s for s in said)


def test_select_errors(fixtures):
    ds = load.load([str(fixtures / "builtin_run")])
    with pytest.raises(FormatError, match="has no nsys data"):
        analysis.select(ds, source="nsys")
    with pytest.raises(FormatError, match="no profile data"):
        analysis.select(load.Dataset())


def test_select_newest_run_or_the_one_asked_for(fixtures):
    ds = load.load([str(fixtures / "builtin_run"), str(fixtures / "cupti_run")])
    assert analysis.select(ds).run.endswith("cupti_run")  # 2026-01-03 is newer than 2026-01-02
    v = analysis.select(ds, run="builtin_run")
    assert (v.source, v.date) == ("builtin", "2026-01-02 03:04 UTC")
    assert analysis.select(ds, run="cupti_run", source="builtin").source == "builtin"
    with pytest.raises(FormatError, match="--run nowhere: no runs match"):
        analysis.select(ds, run="nowhere")
