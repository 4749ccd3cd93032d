"""The command line end to end: `run` over a fake build tree (chapters that are small scripts writing
the chapters' file formats, so no GPU is needed), `plot`, `parse`, `compare`, and the errors."""
import json
import os
import stat
import subprocess
import sys
import textwrap

import pytest

from profiling import cli

FAKE_CHAPTER = textwrap.dedent('''\
    #!{python}
    # A stand-in for a chapter executable: writes --profile-csv and --summary like common/runner.cu.
    import os, sys
    args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
    number, name = "{number}", "{name}"
    if int(args.get("--seqlen", "2048")) > {max_seqlen}:  # (like chapter 11: --seqlen is T, 1..8)
        print(f"ch{{number}}_{{name}}: --seqlen is T here, 1..{max_seqlen} (got {{args['--seqlen']}})", file=sys.stderr)
        sys.exit(2)
    if os.environ.get("CONV1D_PARSE_ONLY", "0") != "0":
        print(f"ch{{number}}_{{name}}: arguments accepted")
        sys.exit(0)
    if os.environ.get("FAKE_NO_GPU"):
        sys.exit(77)
    prefix, summary = args["--profile-csv"], args["--summary"]
    iters = int(args.get("--iters", "3"))
    scale = {scale}
    with open(prefix + "_trace.csv", "w") as f:
        f.write('"Category","Name","Iteration","Stream_Id","Start_Timestamp","End_Timestamp"\\n')
        for it in range(iters + 2):
            t = 10**9 + it * 10**6
            f.write(f'"host","transpose",{{it}},0,{{t}},{{t + 300 * scale}}\\n')
            f.write(f'"h2d","copy x",{{it}},0,{{t + 300 * scale}},{{t + 500 * scale}}\\n')
            f.write(f'"kernel","gemm",{{it}},0,{{t + 500 * scale}},{{t + 900 * scale}}\\n')
            f.write(f'"d2h","copy out",{{it}},0,{{t + 900 * scale}},{{t + 1000 * scale}}\\n')
    with open(prefix + "_stats.csv", "w") as f:
        f.write('"Name","Calls","TotalDurationNs","AverageNs","Percentage","MinNs","MaxNs","StdDev","Category"\\n')
        f.write(f'"gemm",{{iters}},{{400 * scale * iters}},{{400 * scale}},40.0,{{400 * scale}},{{400 * scale}},0.0,"kernel"\\n')
    shape = f"B={{args.get('--batch', '4')}} D=512 L=2048 W=4 fp32"
    new = not os.path.exists(summary)
    with open(summary, "a") as f:
        if new:
            f.write("chapter\\tname\\tvariant\\tend_to_end_ms\\tkernels_ms\\tverified\\tdevice\\tshape\\n")
        f.write(f"{{number}}\\t{{name}}\\tbase\\t{{scale * 0.001:.4f}}\\t{{scale * 0.0004:.4f}}\\tyes\\tFake GPU 9000\\t{{shape}}\\n")
    kpath = summary[:-4] + "_kernels.tsv"
    new = not os.path.exists(kpath)
    with open(kpath, "a") as f:
        if new:
            f.write("chapter\\tname\\tvariant\\tkernel\\tms\\ttflops\\tgbs\\tceiling_pct\\tcopy_ceiling_gbs\\tdevice\\tshape\\n")
        f.write(f"{{number}}\\t{{name}}\\tbase\\tgemm\\t{{scale * 0.0004:.4f}}\\t{{1.0 / scale:.4f}}\\t{{50.0 / scale:.1f}}\\t1.0\\t3000.0\\tFake GPU 9000\\t{{shape}}\\n")
    print("VERIFIED")
''')


def make_build(tmp_path, chapters=(("01", "first", 10), ("02", "second", 2))):
    """Fake chapters (number, name, scale[, the longest --seqlen they take])."""
    build = tmp_path / "build"
    for number, name, scale, *rest in chapters:
        d = build / "chapters" / f"{number}_{name}"
        d.mkdir(parents=True)
        exe = d / f"ch{number}_{name}"
        exe.write_text(FAKE_CHAPTER.format(python=sys.executable, number=number, name=name, scale=scale,
                                           max_seqlen=rest[0] if rest else 1 << 30))
        exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
        (d / "main.cu.o").write_text("not a chapter")
    return build


def test_run_builtin_stores_by_device_and_draws(tmp_path, capsys):
    build = make_build(tmp_path)
    out = tmp_path / "profiles"
    rc = cli.main(["run", "--source", "builtin", "--build", str(build), "--out", str(out), "--batch", "2",
                   "--iters", "3", "--warmup", "1"])
    assert rc == 0, capsys.readouterr()
    run = out / "Fake_GPU_9000" / "builtin"
    info = json.loads((run / "run_info.json").read_text())
    assert info["device"] == "Fake GPU 9000" and info["source"] == "builtin"
    assert info["chapters"] == ["ch01_first", "ch02_second"]
    assert info["pipeline_runs"] == {"ch01_first": 6, "ch02_second": 6}  # 1 variant x (3 + 1 + 2)
    assert info["shape_label"] == "B=2 D=512 L=2048 W=4 fp32" and "--batch 2" in info["shape_flags"]
    assert (run / "ch01_first" / "ch01_first_trace.csv").is_file() and (run / "ch01_first" / "ch01_first.log").is_file()
    charts = sorted(p.name for p in (run / "charts").iterdir())
    # The five charts, and the table of every variant's run beside them (bytes, copy floor, share).
    assert charts == sorted(["categories.png", "top_kernels.png", "ladder.png", "timeline.png", "roofline.png",
                             "variant_runs.tsv"])
    assert not (out / ".incoming-builtin").exists()
    # A second run replaces the first.
    assert cli.main(["run", "--source", "builtin", "--build", str(build), "--out", str(out), "--no-charts",
                     "--chapters", "ch02"]) == 0
    assert json.loads((run / "run_info.json").read_text())["chapters"] == ["ch02_second"]


def test_run_numbers_per_timed_run(tmp_path):
    build = make_build(tmp_path, (("01", "first", 10),))
    out = tmp_path / "p"
    assert cli.main(["run", "--source", "builtin", "--build", str(build), "--out", str(out), "--iters", "3",
                     "--no-charts"]) == 0
    from profiling import analysis, load
    v = analysis.select(load.load([str(out)]))
    (p,) = analysis.chapter_profiles(v)
    assert p.runs == 3  # iterations 1..3 of 0..4
    assert p.categories == pytest.approx({"alloc": 0, "h2d": 0.002, "host": 0.003, "kernel": 0.004, "d2h": 0.001,
                                          "free": 0})


def test_run_leaves_out_a_chapter_that_refuses_the_shape(tmp_path, capsys):
    # Every built chapter runs at the shape given, but one whose command line refuses it (chapter 11:
    # --seqlen is the new tokens of a decoding step) is left out with its reason; named with
    # --chapters, its refusal is a failure.
    build = make_build(tmp_path, (("01", "first", 10), ("11", "decode", 1, 8)))
    out = tmp_path / "p"
    assert cli.main(["run", "--source", "builtin", "--build", str(build), "--out", str(out), "--seqlen", "2048",
                     "--no-charts"]) == 0
    printed = capsys.readouterr().out
    assert "ch11_decode left out, it refuses this shape: --seqlen is T here, 1..8 (got 2048)" in printed
    info = json.loads((out / "Fake_GPU_9000" / "builtin" / "run_info.json").read_text())
    assert info["chapters"] == ["ch01_first"]
    assert info["skipped"] == ["ch11_decode: --seqlen is T here, 1..8 (got 2048)"]
    # At a shape it takes, it runs like the others.
    assert cli.main(["run", "--source", "builtin", "--build", str(build), "--out", str(out), "--seqlen", "4",
                     "--no-charts"]) == 0
    assert json.loads((out / "Fake_GPU_9000" / "builtin" / "run_info.json").read_text())["chapters"] == \
        ["ch01_first", "ch11_decode"]
    # Asked for by name, it runs and its refusal fails the run.
    assert cli.main(["run", "--source", "builtin", "--build", str(build), "--out", str(out), "--seqlen", "2048",
                     "--no-charts", "--chapters", "ch01,ch11"]) == 1
    assert "FAILED: ch11_decode (exit 2" in capsys.readouterr().out
    # Only it, at a shape it refuses: nothing ran, and the error says why.
    only = make_build(tmp_path / "only", (("11", "decode", 1, 8),))
    assert cli.main(["run", "--source", "builtin", "--build", str(only), "--out", str(out), "--seqlen", "2048"]) == 2
    assert "every chapter refuses this shape: ch11_decode: --seqlen is T here" in capsys.readouterr().err


def test_run_without_gpu(tmp_path, monkeypatch, capsys):
    build = make_build(tmp_path)
    monkeypatch.setenv("FAKE_NO_GPU", "1")
    assert cli.main(["run", "--source", "builtin", "--build", str(build), "--out", str(tmp_path / "o")]) == 77
    assert "no GPU found" in capsys.readouterr().out


def test_run_errors(tmp_path, capsys):
    assert cli.main(["run", "--source", "builtin", "--build", str(tmp_path), "--out", str(tmp_path / "o")]) == 2
    assert "not a build tree" in capsys.readouterr().err
    build = make_build(tmp_path)
    assert cli.main(["run", "--source", "cupti", "--build", str(build), "--out", str(tmp_path / "o")]) == 2
    assert "cupti_tracer.json: missing" in capsys.readouterr().err


def test_plot_committed_reference(root, tmp_path, capsys):
    """What the tour draws on a machine without a GPU."""
    assert cli.main(["plot", str(root / "results" / "gpu-check"), "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "categories.png" in out and "ladder.png" in out
    assert (tmp_path / "categories.png").is_file()


def test_plot_errors(tmp_path, capsys):
    assert cli.main(["plot", str(tmp_path / "missing")]) == 2
    assert "no such file or folder" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert cli.main(["plot", str(tmp_path / "empty")]) == 2
    assert "no profile data found" in capsys.readouterr().err


def test_parse_prints_the_table(fixtures, capsys):
    assert cli.main(["parse", str(fixtures / "ncu" / "ch01_host_img2col" / "raw.csv")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("source,run,chapter,category,name,calls,total_ns")
    assert len(lines) == 3 and "gpu__time_duration.sum=1.23456e+06" in lines[1]
    assert cli.main(["parse", "--brief", str(fixtures / "rocprof_v1")]) == 0
    assert "CopyHostToDevice" in capsys.readouterr().out


def test_parse_malformed_exit_code(fixtures, capsys):
    assert cli.main(["parse", str(fixtures / "malformed" / "bad_number_kernel_stats.csv")]) == 2
    assert "expected a number" in capsys.readouterr().err


def test_compare(fixtures, tmp_path, capsys):
    tsv = tmp_path / "agree.tsv"
    assert cli.main(["compare", str(fixtures / "cupti_run"), "--tsv", str(tsv)]) == 0
    out = capsys.readouterr().out
    # 0.2 us less per run over 2 kernel records: -0.10 us per record
    assert "ch01_host_img2col\t\t2\t0.0040\t0.0038\t-5.0\t2\t-0.10\tyes\twork enqueued" in out
    assert "1 of 1 within 10 %" in out
    assert tsv.read_text().startswith("chapter\tvariant\ttimed_runs\tevents_ms\tcupti_ms")
    assert cli.main(["compare", str(fixtures / "cupti_run"), "--tolerance", "0.01"]) == 1


def test_module_entry_point(root, fixtures):
    env = dict(os.environ, PYTHONPATH=str(root))
    r = subprocess.run([sys.executable, "-m", "profiling", "parse", "--brief", str(fixtures / "nsys_2021")],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0 and "[CUDA memcpy HtoD]" in r.stdout


def test_reference_folder_after_a_gpu_check(root, tmp_path):
    """results/gpu-check as the GPU check leaves it: the chapters' default-shape files at the top and
    the dated profiling run below; the charts come from the dated run."""
    import shutil
    from profiling import analysis, load
    ref = tmp_path / "gpu-check"
    shutil.copytree(root / "results" / "gpu-check", ref)
    build = make_build(tmp_path, (("01", "first", 10),))
    assert cli.main(["run", "--source", "builtin", "--build", str(build), "--out", str(ref / "profile"),
                     "--charts", str(ref / "charts")]) == 0
    v = analysis.select(load.load([str(ref)]))
    assert v.run == str(ref / "profile" / "Fake_GPU_9000" / "builtin") and v.date != "date not recorded"
