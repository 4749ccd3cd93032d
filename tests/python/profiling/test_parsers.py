"""Every format profiling/ reads, from the fixtures in tests/python/fixtures (hand-written to the
documented formats), and the errors for malformed files."""
import pytest

from profiling import formats, load
from profiling.table import Context, FormatError, api_category, copy_direction, short_kernel_name, strip_api_version


def rows_of(path, **match):
    ds = load.load([str(path)])
    return [r for r in ds.rows if all(getattr(r, k) == v for k, v in match.items())]


def one(rows, **match):
    found = [r for r in rows if all(getattr(r, k) == v for k, v in match.items())]
    assert len(found) == 1, (match, found)
    return found[0]


# ---- naming rules -------------------------------------------------------------------------------

def test_naming_rules():
    assert strip_api_version("cudaMemcpy_v3020") == "cudaMemcpy"
    assert strip_api_version("cudaLaunchKernel_v7000") == "cudaLaunchKernel"
    assert strip_api_version("hipMalloc") == "hipMalloc"
    assert [api_category(n) for n in ("cudaMalloc_v3020", "hipMallocAsync", "cudaHostAlloc", "hipHostMalloc",
                                      "cuMemAlloc_v2", "cudaFree", "hipFreeAsync", "cudaFreeHost", "hipHostFree",
                                      "cudaMemcpy", "hipLaunchKernel")] == \
        ["alloc"] * 5 + ["free"] * 4 + ["api"] * 2
    assert [copy_direction(n) for n in ("MEMORY_COPY_HOST_TO_DEVICE", "[CUDA memcpy Host-to-Device]",
                                        "[CUDA memcpy HtoD]", "CopyHostToDevice", "MEMORY_COPY_DEVICE_TO_HOST",
                                        "[CUDA memcpy DtoH]", "[CUDA memcpy Device-to-Device]", "[CUDA memset]",
                                        "MEMORY_COPY_NONE")] == \
        ["h2d"] * 4 + ["d2h"] * 2 + ["d2d", "memset", "copy"]
    assert short_kernel_name("void conv1d::ch01::naive_gemm<float>(float const*, float const*, float*, long)") \
        == "naive_gemm"
    assert short_kernel_name("naive_gemm(float const*, float*) [clone .kd]") == "naive_gemm"
    assert short_kernel_name("conv1d::(anonymous namespace)::stream_gate_wait(unsigned int volatile*, "
                             "unsigned int, unsigned long long)") == "stream_gate_wait"
    assert short_kernel_name("void conv1d::(anonymous namespace)::k<int, (anonymous namespace)::T>(int)") == "k"
    assert short_kernel_name("[CUDA memset]") == "[CUDA memset]"  # our tracer's memsets, nsys's label
    assert short_kernel_name("void wmma_gemm<__half, (int)16>(__half const*)") == "wmma_gemm"
    assert short_kernel_name("__amd_rocclr_fillBufferAligned.kd") == "__amd_rocclr_fillBufferAligned.kd"
    assert short_kernel_name("naive_gemm") == "naive_gemm"


# ---- the chapters' own files --------------------------------------------------------------------

def test_builtin_stats_and_trace(fixtures):
    rows = rows_of(fixtures / "builtin_run", chapter="ch01_host_img2col")
    stats = [r for r in rows if r.kind == "stats"]
    trace = [r for r in rows if r.kind == "trace"]
    assert {r.source for r in rows} == {"builtin"}
    host = one(stats, name="transpose x to [B,L,D]")
    assert (host.category, host.calls, host.total_ns, host.min_ns, host.max_ns) == ("host", 2, 8000, 3000, 5000)
    assert one(stats, category="kernel").calls == 4
    assert len(trace) == 4 * 7 and {r.iteration for r in trace} == {0, 1, 2, 3}
    k = [r for r in trace if r.category == "kernel" and r.iteration == 1]
    assert [(r.start_ns, r.end_ns, r.stream) for r in k] == [
        (1_000_000_106_000, 1_000_000_108_000, "stream 0"), (1_000_000_108_000, 1_000_000_110_000, "stream 0")]
    assert one(trace, category="alloc", iteration=1).stream == "host"


def test_builtin_variants_from_the_summary(fixtures):
    rows = rows_of(fixtures / "builtin_run", chapter="ch02_gpu_preprocess")
    assert {r.variant for r in rows} == {"batched", "looped"}
    assert one(rows, variant="looped", name="naive_gemm", iteration=1).total_ns == 5000


def test_summary_tables(fixtures):
    ds = load.load([str(fixtures / "builtin_run")])
    assert [(s.chapter, s.variant, s.e2e_ms, s.kernels_ms, s.verified) for s in ds.summaries] == [
        ("ch01_host_img2col", "naive", 0.02, 0.004, True), ("ch02_gpu_preprocess", "batched", 0.01, 0.003, True),
        ("ch02_gpu_preprocess", "looped", 0.012, 0.0035, True)]
    k = ds.kernels[0]
    assert (k.kernel, k.tflops, k.gbs, k.copy_ceiling_gbs, k.shape) == \
        ("naive_gemm", 2.0, 100.0, 4000.0, "B=2 D=500 L=1000 W=4 fp32")
    assert ds.runs[str(fixtures / "builtin_run")]["device"] == "Test GPU"


def test_committed_reference_results(root):
    """The GPU machine's files in results/gpu-check parse (whichever chapters are there)."""
    ds = load.load([str(root / "results" / "gpu-check")])
    assert ds.summaries and ds.kernels
    chapters = {s.chapter for s in ds.summaries}
    assert "ch01_host_img2col" in chapters
    stats = [r for r in ds.rows if r.kind == "stats" and r.chapter == "ch01_host_img2col"]
    assert stats and {r.category for r in stats} <= {"host", "alloc", "h2d", "kernel", "d2h", "free"}


# ---- rocprofv3, rocprof ---------------------------------------------------------------------------

def test_rocprofv3_6_2_pid_layout(fixtures):
    rows = rows_of(fixtures / "rocprofv3_6.2")
    assert {r.source for r in rows} == {"rocprofv3"} and {r.chapter for r in rows} == {"rocprofv3_6.2/31337"}
    kernels = [r for r in rows if r.category == "kernel"]
    assert [k.start_ns for k in kernels] == [1732000000000000100, 1732000000000003000, 1732000000000006000]
    assert [k.total_ns for k in kernels] == [2000, 2500, 250]
    assert kernels[0].stream == "queue 1" and kernels[0].metrics["agent"] == "1"
    stats = [r for r in rows if r.kind == "stats"]  # _hip_stats.csv, ROCm 6.2's name
    assert [(r.name, r.category, r.calls, r.total_ns) for r in stats] == [
        ("hipMemcpy", "api", 4, 8e6), ("hipMalloc", "alloc", 3, 2.4e6), ("hipFree", "free", 3, 9e5),
        ("hipLaunchKernel", "api", 2, 1e5)]
    copies = [r for r in rows if r.category in ("h2d", "d2h")]
    assert [(r.category, r.total_ns, r.stream) for r in copies] == [("h2d", 2000, "copy engine"),
                                                                    ("d2h", 1500, "copy engine")]


def test_rocprofv3_6_4_host_pid_layout_and_scientific_notation(fixtures):
    rows = rows_of(fixtures / "rocprofv3_6.4")
    assert {r.chapter for r in rows} == {"ch02_gpu_preprocess"}  # from the folder above host/pid
    ks = [r for r in rows if r.kind == "stats" and r.category == "kernel"]
    gemm = one(ks, name="void naive_gemm<float>(float const*, float const*, float*, long, long, long)")
    assert (gemm.calls, gemm.total_ns, gemm.avg_ns, gemm.min_ns, gemm.max_ns) == (2, 8000, 4000, 3500, 4500)
    trace = [r for r in rows if r.kind == "trace"]
    assert [r.total_ns for r in trace] == [1000, 4000]
    copies = {r.name: (r.category, r.calls, r.total_ns) for r in rows if r.name.startswith("MEMORY_COPY")}
    assert copies == {"MEMORY_COPY_HOST_TO_DEVICE": ("h2d", 2, 3000), "MEMORY_COPY_DEVICE_TO_HOST": ("d2h", 1, 1500)}


def test_rocprofv3_7_0_streams_agents_markers(fixtures):
    ds = load.load([str(fixtures / "rocprofv3_7.0")])
    rows = ds.rows
    k = one(rows, kind="trace", category="kernel", name="void wmma_gemm<__half>(__half const*, __half const*, float*, "
                                                          "int, int, int)")
    assert (k.stream, k.metrics["agent"], k.total_ns) == ("stream 0", "Agent 4", 3000)
    assert one(rows, kind="trace", category="d2h").stream == "stream 1"
    assert {r.category for r in rows if r.kind == "trace" and r.stream == "runtime API"} == {"alloc", "api", "free"}
    marker = one(rows, category="marker", name="transpose x to [B,L,D]")
    assert (marker.total_ns, marker.thread) == (9000, "777")
    assert {r.name for r in rows if r.category == "domain"} == {"KERNEL_DISPATCH", "MEMORY_COPY"}
    assert list(ds.agents.values()) == [["AMD Instinct MI300X"]]


def test_rocpd_converted_guid_column(fixtures):
    rows = rows_of(fixtures / "rocpd_converted")
    k = one(rows, category="kernel")
    # Timestamps written in scientific notation are read exactly.
    assert (k.start_ns, k.end_ns, k.total_ns) == (1732000000200000000, 1732000000200003000, 3000)
    assert one(rows, category="h2d").total_ns == 5000


def test_rocprof_v1_stats(fixtures):
    rows = rows_of(fixtures / "rocprof_v1")
    assert {r.source for r in rows} == {"rocprof"}
    got = sorted((r.category, r.name[:10], r.calls, r.total_ns, r.avg_ns) for r in rows)
    assert got == sorted([
        ("kernel", "naive_gemm", 40, 36149312, 903732), ("kernel", "__amd_rocc", 4, 1822220, 455555),
        ("api", "hipMemcpy", 20, 52e6, 2.6e6), ("alloc", "hipMalloc", 30, 12e6, 4e5), ("free", "hipFree", 10, 7e6, 7e5),
        ("h2d", "CopyHostTo", 20, 43e6, 2.15e6), ("d2h", "CopyDevice", 10, 48.5e6, 4.85e6)])


# ---- Nsight Systems, Nsight Compute --------------------------------------------------------------

def test_nsys_current_reports(fixtures):
    rows = rows_of(fixtures / "nsys_2024")
    assert {r.source for r in rows} == {"nsys"} and {r.chapter for r in rows} == {"ch01_host_img2col"}
    gemm = one(rows, category="kernel", calls=40)
    assert (gemm.total_ns, gemm.avg_ns, gemm.min_ns, gemm.max_ns) == (36149312, 903732.8, 864256, 1026304)
    by_cat = {}
    for r in rows:
        by_cat.setdefault(r.category, []).append((r.name, r.calls, r.total_ns))
    assert by_cat["h2d"] == [("[CUDA memcpy Host-to-Device]", 20, 43e6)]
    assert by_cat["d2h"] == [("[CUDA memcpy Device-to-Host]", 10, 48.5e6)]
    assert by_cat["d2d"] == [("[CUDA memcpy Device-to-Device]", 12, 3e6)]
    assert by_cat["memset"] == [("[CUDA memset]", 12, 1.2e5)]
    assert by_cat["alloc"] == [("cudaMalloc", 30, 12e6)] and by_cat["free"] == [("cudaFree", 10, 7e6)]
    assert [n for n, _, _ in by_cat["marker"]] == ["img2col into A", "transpose C to [B,D,L]"]


def test_nsys_pre_2023_reports(fixtures):
    rows = rows_of(fixtures / "nsys_2021")
    got = sorted((r.category, r.calls, r.total_ns, r.avg_ns, r.min_ns, r.max_ns) for r in rows)
    assert got == sorted([("kernel", 40, 36149312, 903732.8, 864256, 1026304),
                          ("api", 20, 52e6, 2.6e6, 2.1e6, 3.3e6), ("alloc", 30, 13e6, 433333.3, 3e4, 10.5e6),
                          ("d2h", 10, 48.5e6, 4.85e6, 4.6e6, 5.4e6), ("h2d", 20, 43e6, 2.15e6, 2.5e5, 4.1e6)])


def test_nsys_skipped_report_is_reported_not_silent(fixtures):
    ds = load.load([str(fixtures / "nsys_skipped")])
    assert [r.name for r in ds.rows] == ["copy_kernel"]
    assert any("SKIPPED: report.sqlite does not contain GPU memory data." in n for n in ds.notes)


def test_ncu_raw(fixtures):
    rows = rows_of(fixtures / "ncu")
    assert len(rows) == 2 and {r.source for r in rows} == {"ncu"} and rows[0].chapter == "ch01_host_img2col"
    a, b = rows
    assert a.total_ns == pytest.approx(1234560)  # "1,234.56" usecond
    assert b.total_ns == pytest.approx(1300000)
    assert a.metrics["dram__bytes_read.sum"] == pytest.approx(2.1e6)   # Mbyte
    assert a.metrics["dram__bytes_write.sum"] == pytest.approx(524290)  # Kbyte
    assert a.metrics["launch__grid_size"] == 2048 and a.metrics["device__attribute_max_threads_per_block"] == 1024
    assert a.stream == "stream 7"
    assert "device__attribute_confidential_computing_mode" not in a.metrics  # a word, not a number


# ---- malformed input: an error that names the file and what was expected --------------------------

MALFORMED = {
    "bad_number_kernel_stats.csv": "bad_number_kernel_stats.csv:2: column 'Calls' holds 'ten', expected a number",
    "missing_end_kernel_trace.csv": "named like a rocprofv3 kernel trace, but its first line is not the expected header "
                                    "(expected columns Kernel_Name, Start_Timestamp, End_Timestamp",
    "truncated_trace.csv": "truncated_trace.csv:3: column 'End_Timestamp' holds '', expected a number",
    "unknown_columns.csv": "not a profile file profiling/ reads",
    "bad_category_stats.csv": "bad_category_stats.csv:2: Category 'gpu', expected host, alloc, h2d, kernel, d2h or free",
    "bad_iteration_trace.csv": "column 'Iteration' holds 'first', expected a number",
    "ncu_details.csv": "this is ncu's --page details layout",
    "no_units_raw_ncu.csv": "expected ncu's units row",
    "nsys_no_header_cuda_gpu_kern_sum.csv": "named like an nsys kernel report, but no header line",
    "unquoted_comma_kernel_trace.csv": "unquoted_comma_kernel_trace.csv:2: 9 cells where the header has 8",
    "empty_kernel_stats.csv": "named like rocprof statistics, but its first line is not the expected header",
    "missing_column_book.tsv": "missing_column_book.tsv: no column 'ceiling_pct' (a book table",
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_file_names_itself_and_the_expectation(fixtures, name):
    path = fixtures / "malformed" / name
    with pytest.raises(FormatError) as e:
        load.load([str(path)], explicit=True)
    assert str(path) in str(e.value) and MALFORMED[name] in str(e.value)


def test_every_malformed_fixture_is_tested(fixtures):
    assert sorted(p.name for p in (fixtures / "malformed").iterdir()) == sorted(MALFORMED)


def test_unknown_files_in_a_folder_are_noted(fixtures, tmp_path):
    (tmp_path / "notes.csv").write_text("when,what\nmonday,compile\n")
    (tmp_path / "run.log").write_text("not a table\n")
    ds = load.load([str(tmp_path)])
    assert ds.rows == [] and len(ds.notes) == 1 and "notes.csv: ignored" in ds.notes[0]


def test_rocprof_stats_without_a_telling_name(tmp_path):
    p = tmp_path / "mystery.csv"
    p.write_text('"Name","Calls","TotalDurationNs","AverageNs","Percentage"\n"k",1,10,10,100\n')
    with pytest.raises(FormatError, match="file name does not say of what"):
        formats.parse_file(p, Context("rocprofv3"))


def test_missing_path():
    with pytest.raises(FormatError, match="no such file or folder"):
        load.load(["/nonexistent/profile"])
