"""`python -m profiling run`: every built chapter at one shape under one source, the results stored
in a folder named after the device, and the charts drawn from them.

    <out>/<device>/<source>/run_info.json          what ran, where, when
    <out>/<device>/<source>/summary.tsv            the chapters' --summary (and summary_kernels.tsv)
    <out>/<device>/<source>/chNN_name/             the chapter's --profile-csv files, its log, and the
                                                   source's own files (CUPTI / rocprofv3 / nsys CSV)
    <out>/<device>/<source>/charts/*.png           unless --charts names another folder
"""
import datetime
import json
import os
import pathlib
import platform
import re
import shutil
import subprocess
import sys

from profiling.table import FormatError

SHAPE_FLAGS = ("batch", "dim", "seqlen", "width", "dtype", "iters", "warmup", "seed")
NO_GPU = 77


def _portable_path(arg):
    """An argument as the run record keeps it: absolute paths relative to the working directory,
    or, outside it, only their last two parts (no machine's folders in committed results)."""
    if not os.path.isabs(arg):
        return arg
    rel = os.path.relpath(arg)
    if not rel.startswith(".."):
        return rel
    parts = pathlib.Path(arg).parts
    return os.path.join("...", *parts[-2:])


def find_chapters(build):
    """The chapter executables of a build tree, in chapter order."""
    root = pathlib.Path(build) / "chapters"
    if not root.is_dir():
        raise FormatError(f"{build}: not a build tree of this project (no chapters/ folder; configure and "
                          f"build first: cmake --workflow --preset default)")
    exes = sorted(p for p in root.rglob("ch[0-9][0-9]_*")
                  if p.is_file() and os.access(p, os.X_OK) and re.match(r"^ch\d\d_[A-Za-z0-9_]+$", p.name))
    if not exes:
        raise FormatError(f"{root}: no chapter executables (chNN_name); build the project first")
    return exes


def tracer_files(build):
    """(tracer library, libcupti) from the file CMake writes next to the tracer."""
    info = pathlib.Path(build) / "profiling" / "cupti_tracer" / "cupti_tracer.json"
    if not info.is_file():
        raise FormatError(f"{info}: missing; the CUPTI tracer is built on the CUDA backend only, when CMake "
                          f"finds CUPTI (see the configure log)")
    data = json.loads(info.read_text())
    lib = pathlib.Path(data["tracer"])
    if not lib.is_file():
        raise FormatError(f"{lib}: the CUPTI tracer has not been built (cmake --build {build})")
    return str(lib), data.get("cupti", "")


def device_slug(device):
    return re.sub(r"[^A-Za-z0-9.-]+", "_", device).strip("_") or "unknown_device"


def _shape_args(args):
    out = []
    for f in SHAPE_FLAGS:
        v = getattr(args, f, None)
        if v is not None:
            out += [f"--{f}", str(v)]
    return out


def _rocprofv3_command(chdir, name):
    cmd = ["rocprofv3", "--kernel-trace", "--memory-copy-trace", "--hip-runtime-trace", "--marker-trace", "--stats",
           "-d", str(chdir), "-o", name]
    helptext = subprocess.run(["rocprofv3", "--help"], capture_output=True, text=True).stdout
    if "--output-format" in helptext:  # ROCm 7 writes a database unless told otherwise
        cmd += ["--output-format", "csv"]
    return cmd + ["--"]


def _nsys_stats(chdir, name, log):
    """nsys stats into CSV, with the report names of 2023 on, else the older ones."""
    rep = chdir / f"{name}.nsys-rep"
    for reports in (("cuda_gpu_kern_sum", "cuda_api_sum", "cuda_gpu_mem_time_sum", "nvtx_sum"),
                    ("gpukernsum", "cudaapisum", "gpumemtimesum", "nvtxsum")):
        cmd = ["nsys", "stats", "--format", "csv", "--force-export=true", "--output", str(chdir / name)]
        for r in reports:
            cmd += ["--report", r]
        r = subprocess.run(cmd + [str(rep)], stdout=log, stderr=subprocess.STDOUT)
        if r.returncode == 0:
            return 0
    return r.returncode


def _refuses(exe, shape_args):
    """Why EXE refuses these shape flags (its one-line message, exit 2 under CONV1D_PARSE_ONLY=1,
    common/runner.h), or "" when it takes them."""
    r = subprocess.run([str(exe)] + shape_args, capture_output=True, text=True,
                       env=dict(os.environ, CONV1D_PARSE_ONLY="1"), timeout=60)
    if r.returncode != 2:
        return ""
    lines = (r.stderr or r.stdout).strip().splitlines()
    return lines[-1].split(": ", 1)[-1] if lines else "exit 2"


def run_chapters(args):
    build = pathlib.Path(args.build).resolve()
    exes = find_chapters(build)
    if args.chapters:
        wanted = args.chapters.split(",")
        exes = [e for e in exes if any(e.name == w or e.name.startswith(w) for w in wanted)]
        if not exes:
            raise FormatError(f"--chapters {args.chapters}: none of the built chapters match")
    source = args.source
    if source in ("rocprofv3", "nsys") and shutil.which(source) is None:
        raise FormatError(f"--source {source}: `{source}` is not on PATH")
    env = dict(os.environ)
    if source == "cupti":
        tracer, cupti = tracer_files(build)
        env["CUDA_INJECTION64_PATH"] = tracer
        if cupti:
            env.setdefault("NVTX_INJECTION64_PATH", cupti)  # NVTX ranges reach CUPTI through libcupti

    out = pathlib.Path(args.out).resolve()
    incoming = out / f".incoming-{source}"
    shutil.rmtree(incoming, ignore_errors=True)
    incoming.mkdir(parents=True)
    summary = incoming / "summary.tsv"
    failed, no_gpu, ran, skipped = [], [], [], []
    for exe in exes:
        name = exe.name
        # Every built chapter, unless it refuses the shape (chapter 11's --seqlen is the new tokens of
        # one decoding step, 1..8): such a chapter is left out with its own reason. A chapter named
        # with --chapters is run whatever it says, so a refusal there is a failure.
        if not args.chapters:
            why = _refuses(exe, _shape_args(args))
            if why:
                skipped.append(f"{name}: {why}")
                print(f"profiling: {source}: {name} left out, it refuses this shape: {why}", flush=True)
                continue
        chdir = incoming / name
        chdir.mkdir()
        cmd = [str(exe)] + _shape_args(args) + ["--profile-csv", str(chdir / name), "--summary", str(summary)]
        if source == "rocprofv3":
            cmd = _rocprofv3_command(chdir, name) + cmd
        elif source == "nsys":
            cmd = ["nsys", "profile", "--trace=cuda,nvtx", "--force-overwrite=true", "-o", str(chdir / name)] + cmd
        env["CONV1D_TRACE_DIR"], env["CONV1D_TRACE_PREFIX"] = str(chdir), name
        print(f"profiling: {source}: {name} ...", flush=True)
        with open(chdir / f"{name}.log", "w") as log:
            rc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, env=env).returncode
            if rc == 0 and source == "nsys":
                rc = _nsys_stats(chdir, name, log)
        if rc == NO_GPU:
            no_gpu.append(name)
        elif rc != 0:
            failed.append(f"{name} (exit {rc}, see {chdir / name}.log)")
        else:
            ran.append(name)
    if not ran:
        shutil.rmtree(incoming, ignore_errors=True)
        if no_gpu and not failed:
            print(f"profiling: no GPU found, nothing was profiled ({', '.join(no_gpu)} exited with 77)")
            return NO_GPU, None
        if skipped and not failed:
            raise FormatError("every chapter refuses this shape: " + "; ".join(skipped))
        raise FormatError("every chapter failed: " + "; ".join(failed))

    from profiling import analysis
    from profiling.formats import parse_summary
    rows = parse_summary(summary, summary.read_text(), "")
    device = rows[0].device if rows else "unknown device"
    variants = {}
    for r in rows:
        variants.setdefault(r.chapter, set()).add(r.variant)
    iters = args.iters if args.iters is not None else None
    warmup = args.warmup if args.warmup is not None else None
    shapes = sorted({r.shape for r in rows})
    info = {
        "source": source, "device": device,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "shape_label": analysis.shape_label(shapes),
        "shape_flags": " ".join(_shape_args(args)), "iters": iters, "warmup": warmup,
        # Profilers see every run of the process: verification before and after, warm-up, timed runs.
        "pipeline_runs": ({ch: len(v) * (iters + warmup + 2) for ch, v in variants.items()}
                          if iters is not None and warmup is not None else {}),
        "chapters": ran, "failed": failed, "no_gpu": no_gpu, "skipped": skipped, "host": platform.node(),
        "command": " ".join([os.path.basename(sys.executable), "-m", "profiling"] +
                            [_portable_path(a) for a in sys.argv[1:]]),
    }
    (incoming / "run_info.json").write_text(json.dumps(info, indent=2) + "\n")
    final = out / device_slug(device) / source
    shutil.rmtree(final, ignore_errors=True)
    final.parent.mkdir(parents=True, exist_ok=True)
    incoming.rename(final)
    print(f"profiling: results in {final}")
    for f in failed:
        print(f"profiling: FAILED: {f.replace(str(incoming), str(final))}")
    return (1 if failed else 0), final
