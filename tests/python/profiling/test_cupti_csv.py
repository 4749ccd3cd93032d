"""The CUPTI tracer's files, written by its own CSV writer (profiling/cupti_tracer/rocprof_csv.cpp,
through the rocprof_csv_writer helper: no GPU needed), read back by the parsers; and the tracer library
itself, as far as it can be checked without a GPU."""
import ctypes
import json
import os
import subprocess

import pytest

from profiling import load


@pytest.fixture(scope="module")
def writer():
    exe = os.environ.get("CONV1D_ROCPROF_CSV_WRITER")
    if not exe:
        pytest.skip("CONV1D_ROCPROF_CSV_WRITER is not set (built on the CUDA backend)")
    assert os.path.isfile(exe), exe
    return exe


def write(writer, folder, prefix):
    r = subprocess.run([writer, str(folder), prefix], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_tracer_files_read_as_cupti(writer, tmp_path):
    chapter = tmp_path / "ch01_host_img2col"
    write(writer, chapter, "myhost/4242")  # the tracer's default prefix: rocprofv3's host/pid layout
    names = sorted(p.name for p in (chapter / "myhost").iterdir())
    assert names == sorted(f"4242_{n}.csv" for n in (
        "kernel_trace", "memory_copy_trace", "cuda_api_trace", "marker_api_trace", "kernel_stats",
        "memory_copy_stats", "cuda_api_stats", "marker_api_stats", "domain_stats"))
    ds = load.load([str(tmp_path)])
    assert ds.notes == []
    rows = ds.rows
    assert {r.source for r in rows} == {"cupti"} and {r.chapter for r in rows} == {"ch01_host_img2col"}
    t0 = 1700000000000000000
    kernels = [r for r in rows if r.kind == "trace" and r.category == "kernel"]
    assert [(r.start_ns - t0, r.total_ns, r.stream) for r in kernels] == [
        (1, 1000, "stream 7"), (10001, 1500, "stream 7"), (20001, 2000, "stream 7"), (50000, 100, "stream 7")]
    assert kernels[3].name == 'say "hi", kernel' and kernels[0].metrics["agent"] == "CUDA 0"
    stats = {r.name: r for r in rows if r.kind == "stats" and r.category == "kernel"}
    gemm = stats[kernels[0].name]
    assert (gemm.calls, gemm.total_ns, gemm.avg_ns, gemm.min_ns, gemm.max_ns) == (3, 4500, 1500, 1000, 2000)
    copies = sorted((r.category, r.total_ns) for r in rows if r.kind == "trace" and r.name.startswith("MEMORY_COPY"))
    assert copies == [("d2d", 200), ("d2h", 600), ("h2d", 800)]
    api = [(r.name, r.category) for r in rows if r.kind == "trace" and r.stream == "runtime API"]
    assert api == [("cudaMalloc", "alloc"), ("cudaLaunchKernel", "api"), ("cudaFree", "free")]
    (rng,) = [r for r in rows if r.category == "marker" and r.kind == "trace"]
    assert (rng.name, rng.total_ns, rng.thread) == ("img2col into A", 9000, "43")
    domains = {r.name: r.calls for r in rows if r.category == "domain"}
    assert domains == {"KERNEL_DISPATCH": 4, "MEMORY_COPY": 3, "CUDA_RUNTIME_API": 3, "NVTX": 1}


def test_tracer_prefix_names_the_chapter(writer, tmp_path):
    write(writer, tmp_path, "ch05_wmma_gemm")
    ds = load.load([str(tmp_path)])
    assert {r.chapter for r in ds.rows} == {"ch05_wmma_gemm"}


def test_unwritable_folder_is_an_error(writer, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    r = subprocess.run([writer, str(blocker), "x"], capture_output=True, text=True)
    assert r.returncode == 1 and "rocprof_csv_writer:" in r.stderr


def test_tracer_library_exports_the_injection_entry():
    lib = os.environ.get("CONV1D_CUPTI_TRACER")
    if not lib:
        pytest.skip("CONV1D_CUPTI_TRACER is not set (built on the CUDA backend when CUPTI is found)")
    loaded = ctypes.CDLL(lib)  # also loads the libcupti it was linked with
    assert hasattr(loaded, "InitializeInjection")
    info = json.loads(open(os.path.join(os.path.dirname(lib), "cupti_tracer.json")).read())
    assert info["tracer"] == lib and os.path.isfile(info["cupti"])  # what `run --source cupti` uses
