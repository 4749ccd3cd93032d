"""The five charts (PNG, matplotlib's Agg backend). Each says what it shows in its title, gives units
on its axes, and names the device, the date, the source and the shape in its footer."""
import io
import math
import pathlib

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)
import matplotlib.ticker  # noqa: E402
import matplotlib.transforms  # noqa: E402
import numpy as np  # noqa: E402

from profiling import analysis  # noqa: E402
from profiling.catalog import CHART_FILES  # noqa: E402
from profiling.table import CATEGORIES, FormatError  # noqa: E402

COLORS = {"alloc": "#9467bd", "h2d": "#1f77b4", "host": "#ff7f0e", "kernel": "#2ca02c", "d2h": "#17becf",
          "free": "#c5b0d5", "d2d": "#8c564b", "copy": "#8c564b", "memset": "#7f7f7f", "api": "#bcbd22",
          "marker": "#d9d9d9"}
CATEGORY_LABELS = {"alloc": "allocations", "h2d": "host-to-device copies", "host": "host steps",
                   "kernel": "kernels", "d2h": "device-to-host copies", "free": "frees"}
SOURCE_LABELS = {"builtin": "the chapters' own phase records (device events, host clock)",
                 "cupti": "our CUPTI tracer", "rocprofv3": "rocprofv3", "rocprof": "rocprof (v1)",
                 "nsys": "Nsight Systems (nsys stats)", "ncu": "Nsight Compute"}
DPI = 100
# Legends sit right of the plot; savefig's tight bounding box makes room for them.
OUTSIDE = dict(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=9, frameon=False)


def _footer(fig, view, extra=""):
    parts = [view.device, view.date, "source: " + SOURCE_LABELS.get(view.source, view.source), view.shape]
    text = "  ·  ".join(parts)
    if extra:
        text += "\n" + extra
    fig.supxlabel(text, fontsize=8, color="#444444")


def _save(fig, path):
    """PNG at DPI; reduced to a 128-colour palette (a third of the size, no visible change for flat
    charts) through Pillow, which matplotlib itself requires."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, bbox_inches="tight", pad_inches=0.15)
    plt.close(fig)
    try:
        from PIL import Image
        Image.open(buf).convert("RGB").quantize(colors=128).save(path, format="PNG", optimize=True)
    except ImportError:
        pathlib.Path(path).write_bytes(buf.getvalue())
    return path


def _ms(v):
    """A time in ms as a label: 66 ms, 3.6 ms, 0.904 ms, 37.5 µs."""
    if v >= 100:
        return f"{v:.0f} ms"
    if v >= 1:
        return f"{v:.1f} ms"
    if v >= 0.1:
        return f"{v:.3f} ms"
    return f"{v * 1e3:.3g} µs"


def _plain_log(axis):
    """Log-axis tick labels as plain numbers (0.01, 1, 100) instead of powers of ten."""
    axis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(matplotlib.ticker.NullFormatter())  # short ranges would label minor ticks too


def _bar_limits(ax, n):
    """Few bars stay narrow: the axis spans at least four bar slots."""
    pad = max(0.0, (4 - n) / 2)
    ax.set_xlim(-0.5 - pad, n - 0.5 + pad)


def _per(profiles):
    """'per run', unless some chapter's figures cover its whole process (the footer says which)."""
    return "per run" if all(p.basis != "whole process" for p in profiles) else "per run or per process"


def _basis_note(profiles):
    bases = sorted({p.basis for p in profiles if p.basis})
    notes = []
    if bases != ["timed runs"]:
        notes.append("time basis: " + ", ".join(f"{p.label}: {p.basis}" for p in profiles if p.basis != "timed runs"))
    missing = sorted({c for p in profiles for c, v in p.categories.items() if v is None})
    if missing:
        notes.append("not recorded by this source: " + ", ".join(CATEGORY_LABELS[c] for c in missing))
    return "; ".join(notes)


def chart_categories(view, profiles, path):
    labels, ms, share = analysis.category_bars(profiles)
    if not labels:
        raise FormatError("categories chart: no chapter has phase or profiler records")
    x = np.arange(len(labels))
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 5.2), layout="constrained")
    bottom1, bottom2 = np.zeros(len(labels)), np.zeros(len(labels))
    for c in CATEGORIES:
        v, s = np.array(ms[c]), np.array(share[c])
        ax1.bar(x, v, 0.6, bottom=bottom1, color=COLORS[c], label=CATEGORY_LABELS[c])
        ax2.bar(x, s, 0.6, bottom=bottom2, color=COLORS[c])
        for i in range(len(labels)):
            if s[i] >= 6:
                ax2.text(x[i], bottom2[i] + s[i] / 2, f"{s[i]:.0f}%", ha="center", va="center", fontsize=8)
        bottom1 += v
        bottom2 += s
    for i, total in enumerate(bottom1):
        ax1.text(x[i], total, _ms(total), ha="center", va="bottom", fontsize=8)
    ax1.set_ylim(0, max(bottom1.max(), 1e-9) * 1.12)
    ax1.set_ylabel(f"time {_per(profiles)} (ms)")
    ax1.set_title(f"Time {_per(profiles)} by category")
    ax2.set_ylim(0, 100)
    ax2.set_ylabel("share of the run (%)")
    ax2.set_title("Share of each category")
    rot = 30 if len(labels) > 4 else 0
    for ax in (ax1, ax2):
        ax.set_xticks(x, labels, rotation=rot, ha="right" if rot else "center", fontsize=9)
        _bar_limits(ax, len(labels))
        ax.grid(axis="y", alpha=0.3)
    handles, names = ax1.get_legend_handles_labels()
    ax2.legend(handles[::-1], names[::-1], **OUTSIDE)
    fig.suptitle("Where the time goes: allocations, copies, host steps and kernels per chapter", fontsize=12)
    _footer(fig, view, _basis_note(profiles))
    return _save(fig, path)


def chart_top_kernels(view, profiles, path, n=5):
    items = analysis.top_kernels(profiles, n)
    if not items:
        raise FormatError("top kernels chart: no kernel records")
    chapters = list(dict.fromkeys(lab for lab, _, _ in items))
    cmap = plt.get_cmap("tab10")
    color = {c: cmap(i % 10) for i, c in enumerate(chapters)}
    fig, ax = plt.subplots(figsize=(10, 1.6 + 0.32 * len(items)), layout="constrained")
    y = np.arange(len(items))[::-1]
    vals = [v for _, _, v in items]
    names = [k if len(k) <= 42 else k[:40] + "…" for _, k, _ in items]
    ax.barh(y, vals, 0.7, color=[color[lab] for lab, _, _ in items])
    for yi, v in zip(y, vals):
        ax.text(v * 1.05, yi, _ms(v), va="center", fontsize=8)
    ax.set_yticks(y, names, fontsize=9)
    ax.set_xscale("log")
    _plain_log(ax.xaxis)
    lo, hi = min(vals), max(vals)
    ax.set_xlim(lo / 3, hi * 6)
    for k in range(1, len(items)):  # a rule between chapters
        if items[k][0] != items[k - 1][0]:
            ax.axhline(y[k] + 0.5, color="#999999", lw=0.6)
    ax.set_xlabel(f"kernel time {_per(profiles)} (ms, log scale)")
    ax.grid(axis="x", alpha=0.3, which="both")
    handles = [plt.Rectangle((0, 0), 1, 1, color=color[c]) for c in chapters]
    ax.legend(handles, chapters, title="chapter", **OUTSIDE)
    fig.suptitle(f"The {n} slowest kernels of each chapter", fontsize=12)
    _footer(fig, view, _basis_note(profiles))
    return _save(fig, path)


def chart_ladder(view, profiles, path):
    labels, e2e, dev, floors, speedup = analysis.ladder(profiles)
    if not labels:
        raise FormatError("speed-up ladder: no chapter has end-to-end or device times")
    x = np.arange(len(labels))
    has_e2e = any(v for v in e2e)  # profiler files alone carry no end-to-end time
    w = 0.38 if has_e2e else 0.5
    fig, ax = plt.subplots(figsize=(11, 5.8), layout="constrained")
    e = np.array([v if v else np.nan for v in e2e], dtype=float)
    d = np.array([v if v else np.nan for v in dev], dtype=float)
    bars = [(x + w / 2 if has_e2e else x, d, "#2ca02c", "device time (kernels)")]
    if has_e2e:
        bars.insert(0, (x - w / 2, e, "#4c72b0", "end to end\n(one pipeline run)"))
    for xs, values, color, label in bars:
        ax.bar(xs, values, w, color=color, label=label)
        for xi, v in zip(xs, values):
            if not math.isnan(v):
                ax.text(xi, v * 1.08, _ms(v), ha="center", va="bottom", fontsize=8, rotation=90)
    distinct = sorted({round(f, 12) for f in floors if f})
    floor_label = "copy floor: x + out\nat the copy ceiling"
    if len(distinct) == 1:
        floor_label += f", {_ms(distinct[0])}"
    for xi, f in zip(x, floors):
        if f:
            ax.hlines(f, xi - 0.45, xi + 0.45, colors="#d62728", linestyles="--", lw=1.6, label=floor_label)
            floor_label = None
            if len(distinct) > 1:  # shapes differ between chapters: each floor says its value
                ax.text(xi, f / 1.4, _ms(f), color="#d62728", fontsize=7, ha="center", va="top",
                        bbox=dict(facecolor="white", edgecolor="none", alpha=0.8, pad=1))
    values = [v for v in list(e) + list(d) + [f for f in floors if f] if v and not math.isnan(v)]
    ax.set_yscale("log")
    ax.set_ylim(min(values) / 4, max(values) * 8)
    _plain_log(ax.yaxis)
    # The speed-up sits just above the plot, where it cannot collide with the bars' labels.
    above = matplotlib.transforms.blended_transform_factory(ax.transData, ax.transAxes)
    for xi, s in zip(x, speedup):
        if s:
            ax.text(xi, 1.015, f"×{s:.3g}", transform=above, ha="center", va="bottom", fontsize=9, fontweight="bold")
    ax.set_xticks(x, labels, rotation=30 if len(labels) > 4 else 0, ha="right" if len(labels) > 4 else "center")
    ax.set_ylabel(f"time {_per(profiles)} (ms, log scale)")
    ax.grid(axis="y", alpha=0.3, which="major")
    _bar_limits(ax, len(labels))
    ax.legend(**OUTSIDE)
    fig.suptitle("Speed-up ladder: end-to-end and device time per chapter "
                 f"(×: end-to-end speed-up over {labels[0]})" if has_e2e else
                 "Device time per chapter (no end-to-end times: these files hold no chapter summary)", fontsize=12)
    _footer(fig, view, "medians of the timed runs" if view.source == "builtin" else _basis_note(profiles))
    return _save(fig, path)


def _lane_order(lane):
    if lane == "host":
        return (0, 0, lane)
    if lane == "NVTX ranges":
        return (1, 0, lane)
    if lane == "runtime API":
        return (2, 0, lane)
    num = "".join(ch for ch in lane if ch.isdigit())
    return (3, int(num) if num else 0, lane)


def chart_timeline(view, profiles, path, wanted=None):
    p = analysis.timeline_chapter(profiles, wanted)
    if p is None:
        raise FormatError("timeline: no chapter has trace records (statistics alone carry no timestamps)")
    lanes = sorted({lane for lane, *_ in p.timeline}, key=_lane_order)
    fig, ax = plt.subplots(figsize=(11, 1.9 + 0.55 * len(lanes)), layout="constrained")
    end = max(s + dur for _, s, dur, _, _ in p.timeline)
    seen = []
    for k, lane in enumerate(lanes):
        yk = len(lanes) - 1 - k
        for ln, s, dur, cat, name in p.timeline:
            if ln != lane:
                continue
            ax.broken_barh([(s, max(dur, end * 0.002))], (yk - 0.38, 0.76), facecolors=COLORS.get(cat, "#999999"),
                           edgecolor="white", linewidth=0.3)
            if cat not in seen:
                seen.append(cat)
            # A name only where it fits (about 0.62 % of the width per character at this size).
            if dur > end * 0.0065 * (len(name) + 2) and lane != "runtime API":
                ax.text(s + dur / 2, yk, name, ha="center", va="center", fontsize=7, clip_on=True)
    ax.set_yticks(range(len(lanes)), lanes[::-1], fontsize=9)
    ax.set_xlim(0, end * 1.01)
    ax.set_ylim(-0.6, len(lanes) - 0.4)
    ax.set_xlabel("time since the start of the run (ms)")
    ax.grid(axis="x", alpha=0.3)
    order = [c for c in ("alloc", "h2d", "host", "kernel", "d2h", "free", "d2d", "copy", "memset", "api", "marker")
             if c in seen]
    handles = [plt.Rectangle((0, 0), 1, 1, color=COLORS[c]) for c in order]
    names = [CATEGORY_LABELS.get(c, {"api": "runtime API calls", "marker": "NVTX phase ranges",
                                     "d2d": "device-to-device copies"}.get(c, c)) for c in order]
    ax.legend(handles, names, **OUTSIDE)
    fig.suptitle(f"Timeline of {p.label} per stream: {p.timeline_span}", fontsize=12)
    _footer(fig, view)
    return _save(fig, path)


def chart_roofline(view, profiles, path, peaks=None):
    points = analysis.roofline_points(profiles)
    bw = analysis.bandwidth_ceiling(profiles)
    if not points or not bw:
        raise FormatError("roofline: needs the chapters' kernel summary (FILE_kernels.tsv from --summary)")
    peaks = peaks or [(label, value) for _, value, label in analysis.REFERENCE_PEAKS]
    xs = [p[2] for p in points]
    top = max(v for _, v in peaks)
    ridges = [v * 1e3 / bw for _, v in peaks]  # where the bandwidth line meets each roof
    x_lo, x_hi = min(min(xs), min(ridges)) / 10, max(max(xs), max(ridges)) * 4
    fig, ax = plt.subplots(figsize=(10, 6.2), layout="constrained")
    grid = np.logspace(math.log10(x_lo), math.log10(x_hi), 200)
    ax.plot(grid, grid * bw / 1e3, color="#d62728", lw=1.5,
            label=f"bandwidth ceiling: measured copy, {bw:,.0f} GB/s")
    for k, (label, value) in enumerate(sorted(peaks, key=lambda p: p[1])):
        ridge = value * 1e3 / bw  # where the bandwidth line meets this roof
        ax.plot([ridge, x_hi], [value, value], color="#333333", lw=1.2, ls="-" if k == 0 else "--",
                label=f"compute roof: {label}")
    cmap = plt.get_cmap("tab10")
    markers = "os^Dv<>PXh"
    for i, (label, kernel, ai, tf) in enumerate(points):
        ax.plot(ai, tf, markers[i % len(markers)], ms=8, color=cmap(i % 10), alpha=0.85, label=f"{label}: {kernel}")
    # Chapters whose points (nearly) coincide share one label: "01, 02, 03".
    clusters = []
    for label, _, ai, tf in points:
        for c in clusters:
            if abs(math.log10(ai / c[1])) < 0.08 and abs(math.log10(tf / c[2])) < 0.12:
                c[0].append(label.split(" ")[0])
                break
        else:
            clusters.append([[label.split(" ")[0]], ai, tf])
    span = math.log10(x_hi / x_lo)
    for names, ai, tf in clusters:
        right_half = math.log10(ai / x_lo) > 0.55 * span  # labels point inwards, never off the axes
        ax.annotate(", ".join(names), (ai, tf), textcoords="offset points", xytext=(-9 if right_half else 9, 6),
                    ha="right" if right_half else "left", fontsize=9)
    ys = [p[3] for p in points]
    ax.set_xscale("log")
    ax.set_yscale("log")
    _plain_log(ax.xaxis)
    _plain_log(ax.yaxis)
    ax.set_xlim(x_lo, x_hi)
    ax.set_ylim(min(min(ys), x_lo * bw / 1e3) / 3, top * 4)
    ax.set_xlabel("arithmetic intensity (flop per byte of DRAM traffic, napkin count)")
    ax.set_ylabel("attained TFLOP/s (log scale)")
    ax.grid(alpha=0.3, which="major")
    ax.legend(**dict(OUTSIDE, fontsize=8))
    fig.suptitle("Roofline: each chapter's main kernel against the measured bandwidth and a compute peak",
                 fontsize=12)
    _footer(fig, view, "compute roofs: " + analysis.REFERENCE_PEAKS_SOURCE)
    return _save(fig, path)


def draw_all(view, profiles, out_dir, timeline_chapter=None, log=print):
    """Draws every chart the data allows; returns the paths. A chart without data is reported, not
    drawn empty; no chart at all is an error."""
    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    drawn = []
    draw_one = {"categories.png": lambda p: chart_categories(view, profiles, p),
                "top_kernels.png": lambda p: chart_top_kernels(view, profiles, p),
                "ladder.png": lambda p: chart_ladder(view, profiles, p),
                "timeline.png": lambda p: chart_timeline(view, profiles, p, timeline_chapter),
                "roofline.png": lambda p: chart_roofline(view, profiles, p)}
    for name in CHART_FILES:
        draw = draw_one[name]
        target = out / name
        try:
            drawn.append(draw(target))
        except FormatError as e:
            if timeline_chapter and name == "timeline.png":
                raise
            if target.exists():
                target.unlink()  # never leave an older chart that looks current
            log(f"profiling: skipped {name}: {e}")
    if not drawn:
        raise FormatError(f"no chart could be drawn from {view.run}")
    return drawn
