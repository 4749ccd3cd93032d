"""The charts (PNG, matplotlib's Agg backend): the whole book's (the tour's book.tsv) and the five of
a profiling run. Each says what it shows in its title, gives units on its axes, and names the device,
the date, the source and the shape in its footer."""
import io
import math
import pathlib

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)
import matplotlib.ticker  # noqa: E402
import matplotlib.transforms  # noqa: E402
import numpy as np  # noqa: E402

from profiling import analysis, book  # noqa: E402
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
    _footer_parts(fig, [view.device, view.date, "source: " + SOURCE_LABELS.get(view.source, view.source), view.shape],
                  extra)


def _footer_parts(fig, parts, extra=""):
    text = "  ·  ".join(parts)
    if extra:
        text += "\n" + extra
    fig.supxlabel(text, fontsize=8, color="#444444")


def _label(p):
    """A chapter's tick label, naming the variant its kernels come from when it is not the headline."""
    return p.label + (f"\n({p.kernel_variant} variant)" if p.kernel_variant else "")


def _variant_notes(profiles, what="drawn", why="so their event pairs include waiting"):
    """Which chapters are drawn from a stand-in variant, or add overlapping stages, and why."""
    notes = []
    for p in profiles:
        if p.kernel_variant:
            notes.append(f"{p.label}: {what} from its {p.kernel_variant} variant (the {p.variant} variant's kernels "
                         f"and copies overlap on several streams, {why})")
        elif p.overlapping:
            notes.append(f"{p.label}: its kernels and copies overlap on several streams; these figures add "
                         f"overlapping stages")
    return notes


def _wrap(text, width=150):
    import textwrap
    return "\n".join(textwrap.fill(line, width) for line in text.split("\n"))


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


def _times(v):
    """A speed-up as a label: 1.19, 40.3, 123, 1,640 (no powers of ten)."""
    return f"{v:.3g}" if v < 1000 else f"{v:,.0f}"


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
    shown = [p for p in profiles if p.categories]
    ticks = [_label(p) for p in shown]
    x = np.arange(len(labels))
    # More chapters, a wider figure: each group's total sits above it and must not run into the next.
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12 + 1.2 * max(0, len(labels) - 7), 5.6), layout="constrained")
    # Left: each category's own bar on a log scale, so that a chapter of microseconds stays as legible
    # as one of tens of milliseconds (stacked bars on a log axis would distort the segments); the
    # outline around each group is the whole run.
    present = [c for c in CATEGORIES if any(v > 0 for v in ms[c])]
    slot = 0.84
    w = slot / max(len(present), 1)
    totals = np.array([sum(ms[c][i] for c in CATEGORIES) for i in range(len(labels))])
    positive = [v for c in present for v in ms[c] if v > 0] + [t for t in totals if t > 0]
    lo, hi = min(positive) / 2.5, max(positive) * 4
    ax1.bar(x, np.where(totals > 0, totals, np.nan), slot + 0.08, bottom=lo, color="#f2f2f2", edgecolor="#777777",
            lw=0.8, label="the whole run (sum)", zorder=0)
    for j, c in enumerate(present):
        v = np.array([m if m > 0 else np.nan for m in ms[c]])
        ax1.bar(x - slot / 2 + w * (j + 0.5), v - lo, w, bottom=lo, color=COLORS[c], zorder=1)
    for i, total in enumerate(totals):
        if total > 0:
            ax1.text(x[i], total * 1.12, _ms(total), ha="center", va="bottom", fontsize=8)
    ax1.set_yscale("log")
    ax1.set_ylim(lo, hi)
    _plain_log(ax1.yaxis)
    ax1.set_ylabel(f"time {_per(profiles)} (ms, log scale)")
    ax1.set_title(f"Time {_per(profiles)} in each category (log scale)")
    ax2.set_title("Share of each category")
    bottom2 = np.zeros(len(labels))
    for c in CATEGORIES:
        s = np.array(share[c])
        ax2.bar(x, s, 0.6, bottom=bottom2, color=COLORS[c], label=CATEGORY_LABELS[c])
        for i in range(len(labels)):
            if s[i] >= 6:
                ax2.text(x[i], bottom2[i] + s[i] / 2, f"{s[i]:.0f}%", ha="center", va="center", fontsize=8)
        bottom2 += s
    ax2.set_ylim(0, 100)
    ax2.set_ylabel("share of the run (%)")
    rot = 30 if len(labels) > 4 else 0
    for ax in (ax1, ax2):
        ax.set_xticks(x, ticks, rotation=rot, ha="right" if rot else "center", fontsize=9)
        _bar_limits(ax, len(labels))
        ax.grid(axis="y", alpha=0.3)
    handles, names = ax2.get_legend_handles_labels()
    h1, n1 = ax1.get_legend_handles_labels()
    ax2.legend(handles[::-1] + h1, names[::-1] + n1, **OUTSIDE)
    fig.suptitle("Where the time goes: allocations, copies, host steps and kernels per chapter", fontsize=12)
    notes = [n for n in [_basis_note(profiles)] + _variant_notes(
        profiles, why="so their stages add up to more than the run and their shares would not be shares of it") if n]
    _footer(fig, view, _wrap("\n".join(n for n in ["; ".join(notes), _not_in_run_note(view, profiles)] if n), 170))
    return _save(fig, path)


def chart_top_kernels(view, profiles, path, n=5):
    items = analysis.top_kernels(profiles, n)
    if not items:
        raise FormatError("top kernels chart: no kernel records")
    by_label = {p.label: p for p in profiles}
    chapters = list(dict.fromkeys(lab for lab, _, _ in items))
    cmap = plt.get_cmap("tab10" if len(chapters) <= 10 else "tab20")
    color = {c: cmap(i % cmap.N) for i, c in enumerate(chapters)}
    fig, ax = plt.subplots(figsize=(10, 1.9 + 0.32 * len(items)), layout="constrained")
    y = np.arange(len(items))[::-1]
    vals = [v for _, _, v in items]
    names = [k if len(k) <= 42 else k[:40] + "…" for _, k, _ in items]
    ax.barh(y, vals, 0.7, color=[color[lab] for lab, _, _ in items])
    for yi, (lab, k, v) in zip(y, items):
        calls = by_label[lab].kernel_calls.get(k, 1.0)
        text = _ms(v) + (f"  ({calls:g} launches of {_ms(v / calls)})" if calls > 1.01 else "")
        ax.text(v * 1.05, yi, text, va="center", fontsize=8)
    ax.set_yticks(y, names, fontsize=9)
    ax.set_xscale("log")
    _plain_log(ax.xaxis)
    lo, hi = min(vals), max(vals)
    ax.set_xlim(lo / 3, hi * 30)
    for k in range(1, len(items)):  # a rule between chapters
        if items[k][0] != items[k - 1][0]:
            ax.axhline(y[k] + 0.5, color="#999999", lw=0.6)
    ax.set_xlabel(f"kernel time {_per(profiles)}, all launches (ms, log scale)")
    ax.grid(axis="x", alpha=0.3, which="both")
    handles = [plt.Rectangle((0, 0), 1, 1, color=color[c]) for c in chapters]
    ax.legend(handles, [_label(by_label[c]) for c in chapters], title="chapter", **OUTSIDE)
    fig.suptitle(f"The {n} slowest kernels of each chapter", fontsize=12)
    notes = [n for n in [_basis_note(profiles)] + _variant_notes(profiles, "kernels") if n]
    _footer(fig, view, _wrap("\n".join(n for n in ["; ".join(notes), _not_in_run_note(view, profiles)] if n), 170))
    return _save(fig, path)


def _absent_notes(view, borrowed):
    """The ladder's footer lines for chapters the charted run does not hold: where one drawn from
    another file comes from, or why one is not drawn (measured only at other shapes)."""
    notes = []
    for p in borrowed:
        shapes, files = analysis.measured_shapes(view, p.chapter)
        if p.comparable:
            notes.append(f"{p.label}: not in this run; its figures come from {p.borrowed} (another run of the same "
                         f"device at the same B, D, L and W: {p.main.shape if p.main else 'its shape'})")
        else:
            notes.append(f"{p.label}: not drawn: this run does not hold it, and the result files measured it only at "
                         f"other shapes ({'; '.join(shapes)} in {', '.join(files)}), which are not compared with "
                         f"this one")
    return notes


def _not_in_run_note(view, profiles):
    """For the charts drawn from the run's own records (categories, top kernels): the chapters that
    other result files measured but this run does not hold."""
    absent = analysis.borrowed_profiles(view, profiles)
    if not absent:
        return ""
    return "not in this run, so not drawn: " + "; ".join(
        f"{p.label} (measured without phase records in {', '.join(analysis.measured_shapes(view, p.chapter)[1])})"
        for p in absent)


def chart_ladder(view, profiles, path):
    borrowed = analysis.borrowed_profiles(view, profiles)
    profiles = sorted(list(profiles) + [p for p in borrowed if p.comparable], key=lambda p: p.chapter)
    labels, e2e, dev, floors, speedup = analysis.ladder(profiles)
    if not labels:
        raise FormatError("speed-up ladder: no chapter has end-to-end or device times")
    ps = [p for p in profiles if p.e2e_ms is not None or p.device_ms is not None]
    labels = [p.label + (f"\n({p.borrowed})" if p.borrowed else "") for p in ps]
    dev_speedup = analysis.device_speedups(profiles)
    slow = analysis.host_step_outliers(profiles)
    x = np.arange(len(labels))
    has_e2e = any(v for v in e2e)  # profiler files alone carry no end-to-end time
    w = 0.38 if has_e2e else 0.5
    # More chapters, a wider plot: the speed-ups above the bars must not run into each other.
    fig, ax = plt.subplots(figsize=(11 + 0.9 * max(0, len(labels) - 7), 6.2), layout="constrained")
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
    kinds = sorted({p.floor_tensors for p in ps if p.floor_ms})
    floor_label = "copy floor: each tensor moved once\nat the copy ceiling (" + \
        "; ".join({2: "forward: x + out", 3: "backward: x + dout + dx"}.get(k, f"{k} tensors") for k in kinds) + ")"
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
    # The speed-ups sit just above the plot, where they cannot collide with the bars' labels: end to
    # end (bold), device time below it (grey). † marks a chapter whose shared host steps run slow in
    # its process (an anomaly, not its change); ‡ the next chapter, whose × includes their recovery.
    above = matplotlib.transforms.blended_transform_factory(ax.transData, ax.transAxes)
    marks, after = {}, False
    for p in ps:
        if p.label in slow:
            marks[p.label], after = "†", True
        elif after and p.e2e_ms and not analysis.is_backward(p.chapter):
            marks[p.label], after = "‡", False
    for xi, p, s, ds in zip(x, ps, speedup, dev_speedup):
        if s:
            ax.text(xi, 1.05, f"×{_times(s)}{marks.get(p.label, '')}", transform=above, ha="center", va="bottom",
                    fontsize=9, fontweight="bold")
        if ds and has_e2e:
            ax.text(xi, 1.012, f"device ×{_times(ds)}", transform=above, ha="center", va="bottom", fontsize=7.5,
                    color="#2a7a2a")
    ax.set_xticks(x, labels, rotation=30 if len(labels) > 4 else 0, ha="right" if len(labels) > 4 else "center")
    ax.set_ylabel(f"time {_per(profiles)} (ms, log scale)")
    ax.grid(axis="y", alpha=0.3, which="major")
    _bar_limits(ax, len(labels))
    ax.legend(**OUTSIDE)
    fig.suptitle("Speed-up ladder: end-to-end and device time per chapter\n"
                 f"(×: end-to-end speed-up over {ps[0].label}; device ×: the same for device time)" if has_e2e else
                 "Device time per chapter (no end-to-end times: these files hold no chapter summary)", fontsize=12)
    notes = ["medians of the timed runs" if view.source == "builtin" else _basis_note(profiles)]
    notes += _variant_notes([p for p in ps if p.kernel_variant or p.overlapping], "device time")
    flagged = [p for p in ps if p.label in slow]
    if flagged:
        steps = list(dict.fromkeys(n for p in flagged for n in slow[p.label][1]))
        notes.append("† " + ", ".join(p.label.split(" ")[0] for p in flagged) + ": the host steps they share with other "
                     f"chapters ({', '.join(steps)}) take " +
                     ", ".join(f"{slow[p.label][0]:.3g}×" for p in flagged) + " as long as in the fastest chapter: "
                     "a slowdown of those processes (see docs/results.md), not of the chapters' changes")
        nxt = [p for p in ps if marks.get(p.label) == "‡"]
        for p in nxt:
            k = ps.index(p)
            notes.append(f"‡ {p.label.split(' ')[0]}: its end-to-end × includes those steps' return to normal speed, and "
                         "with it the earlier chapters' gains they hid: it is not its own change's doing"
                         + (f" (device × {dev_speedup[k]:.3g})" if dev_speedup[k] else ""))
    notes += _absent_notes(view, borrowed)
    _footer(fig, view, _wrap("\n".join(n for n in notes if n), 170))
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


KERNEL_SHADES = ("#2ca02c", "#98df8a", "#bcbd22", "#17a589", "#6b8e23", "#b5cf6b", "#637939", "#8ca252")
OTHER_NAMES = {"api": "runtime API calls", "marker": "NVTX phase ranges", "d2d": "device-to-device copies"}


def _kernel_colors(records):
    """One shade of green per kernel name, in order of first appearance, so that kernels are told
    apart by colour and named in the legend."""
    names = list(dict.fromkeys(r[4] for r in records if r[3] == "kernel"))
    return {n: KERNEL_SHADES[i % len(KERNEL_SHADES)] for i, n in enumerate(names)}


def _draw_lanes(ax, records, end, kcolor, chunk_labels, width_px=800):
    """records: (lane, start, duration, category, name, chunk or None). Copies carry their chunk
    inside the bar; a chunk's run of kernels carries it just above. Names go inside bars that fit
    (width_px: about the plot's width in pixels; a character at 6.5 points takes about 4)."""
    def fits(dur, text):
        return dur / end * width_px >= 4.0 * (len(text) + 1)
    lanes = sorted({r[0] for r in records}, key=_lane_order)
    for k, lane in enumerate(lanes):
        yk = len(lanes) - 1 - k
        mine = sorted((r for r in records if r[0] == lane), key=lambda r: r[1])
        for ln, s, dur, cat, name, chunk in mine:
            face = kcolor.get(name, COLORS["kernel"]) if cat == "kernel" else COLORS.get(cat, "#999999")
            ax.broken_barh([(s, max(dur, end * 0.002))], (yk - 0.32, 0.64), facecolors=face, edgecolor="white",
                           linewidth=0.3)
            if chunk_labels and chunk and cat in ("h2d", "d2h"):
                text = chunk  # the colour says the direction
                if fits(dur, text):
                    ax.text(s + dur / 2, yk, text, ha="center", va="center", fontsize=6.5, clip_on=True)
            elif not chunk_labels and fits(dur, name) and lane != "runtime API":
                ax.text(s + dur / 2, yk, name, ha="center", va="center", fontsize=6.5, clip_on=True)
        if chunk_labels:  # each chunk's kernels: its number once, above them
            groups = {}
            for ln, s, dur, cat, name, chunk in mine:
                if cat == "kernel" and chunk:
                    a, b = groups.get(chunk, (s, s + dur))
                    groups[chunk] = (min(a, s), max(b, s + dur))
            for chunk, (a, b) in groups.items():
                ax.text((a + b) / 2, yk + 0.34, chunk, ha="center", va="bottom", fontsize=6.5)
    ax.set_yticks(range(len(lanes)), lanes[::-1], fontsize=9)
    ax.set_ylim(-0.6, len(lanes) - 0.25)
    ax.grid(axis="x", alpha=0.3)
    return lanes


def _timeline_legend(ax, records, kcolor, extra=()):
    cats = list(dict.fromkeys(r[3] for r in records))
    handles, names = [], []
    for c in ("alloc", "h2d", "host", "d2h", "free", "d2d", "copy", "memset", "api", "marker"):
        if c in cats:
            handles.append(plt.Rectangle((0, 0), 1, 1, color=COLORS[c]))
            names.append(CATEGORY_LABELS.get(c, OTHER_NAMES.get(c, c)))
    for n, col in kcolor.items():
        handles.append(plt.Rectangle((0, 0), 1, 1, color=col))
        names.append(f"kernel {n}")
    for h, n in extra:
        handles.append(h)
        names.append(n)
    ax.legend(handles, names, **OUTSIDE)


def _chart_stage_timeline(view, tl, path):
    """A chapter's own stage timeline (--timeline FILE): one panel per variant on a common time axis,
    copies labelled with their chunk, each chunk's kernels numbered above them."""
    all_records = [r for _, recs in tl.panels for r in recs]
    kcolor = _kernel_colors(all_records)
    end = max(s + d for _, s, d, *_ in all_records)
    heights = [len({r[0] for r in recs}) + 0.9 for _, recs in tl.panels]
    fig, axes = plt.subplots(len(tl.panels), 1, figsize=(12, 1.9 + 0.55 * sum(heights)), sharex=True,
                             layout="constrained", gridspec_kw=dict(height_ratios=heights), squeeze=False)
    for ax, (variant, recs) in zip(axes[:, 0], tl.panels):
        _draw_lanes(ax, recs, end, kcolor, chunk_labels=True, width_px=820)
        span = max(s + d for _, s, d, *_ in recs) - min(s for _, s, *_ in recs)
        ax.set_title(f"{variant}: {_ms(span)} from the first stage to the last", fontsize=10, loc="left")
    axes[-1, 0].set_xlim(0, end * 1.01)
    axes[-1, 0].set_xlabel("time since the run's first stage (ms, device times)")
    extra = [(plt.Line2D([], [], ls="none", marker="$4$", color="black", ms=7), "chunk number: inside a copy,\n"
              "and above that chunk's kernels")]
    _timeline_legend(axes[0, 0], all_records, kcolor, extra)
    fig.suptitle(f"Timeline of {tl.label} per stream: the last timed run of each variant", fontsize=12)
    name = tl.file.rsplit("/", 1)[-1]
    _footer_parts(fig, [tl.device, tl.date, f"source: {name} (the chapter's own stage timeline, device events)",
                        tl.shape], _wrap(tl.matched))
    return _save(fig, path)


def chart_timeline(view, profiles, path, wanted=None):
    tl = analysis.stage_timeline(view, profiles, wanted) if view.source == "builtin" else None
    if tl is not None:
        return _chart_stage_timeline(view, tl, path)
    p = analysis.timeline_chapter(profiles, wanted)
    if p is None:
        raise FormatError("timeline: no chapter has trace records (statistics alone carry no timestamps)")
    records = [(lane, s, d, cat, name, None) for lane, s, d, cat, name in p.timeline]
    lanes = {r[0] for r in records}
    fig, ax = plt.subplots(figsize=(11, 1.9 + 0.55 * len(lanes)), layout="constrained")
    end = max(s + dur for _, s, dur, *_ in records)
    kcolor = _kernel_colors(records)
    _draw_lanes(ax, records, end, kcolor, chunk_labels=False, width_px=720)
    ax.set_xlim(0, end * 1.01)
    ax.set_xlabel("time since the start of the run (ms)")
    _timeline_legend(ax, records, kcolor)
    fig.suptitle(f"Timeline of {p.label} per stream: {p.timeline_span}", fontsize=12)
    _footer(fig, view)
    return _save(fig, path)


# What each kernel's flop count is, where the number alone would mislead (the roofline's footer).
FLOP_NOTES = {
    "naive_gemm": "a dense GEMM over the expanded weights Bw [W·D, D] (D× the convolution's flops)",
    "wmma_gemm_sparse": "the tensor-core work it does: each 16×16 diagonal block of Bw multiplied densely "
                        "(16× the convolution's flops, of which 1/16 is needed)",
}


def _point_name(pt):
    """A point's short label: the chapter's number, and the variant where a chapter has one point per
    layout ("08 cf_chunked")."""
    number = pt[0].split(" ")[0]
    p = pt.profile
    return f"{number} {pt.summary.variant}" if p is not None and len(p.mains) > 1 else number


def chart_roofline(view, profiles, path, roofs=None):
    borrowed = analysis.borrowed_profiles(view, profiles)
    everyone = sorted(list(profiles) + borrowed, key=lambda p: p.chapter)
    points = analysis.roofline_points(everyone)
    bw = analysis.bandwidth_ceiling(profiles)
    if not points or not bw:
        raise FormatError("roofline: needs the chapters' kernel summary (FILE_kernels.tsv from --summary)")
    roofs = analysis.compute_roofs(view, everyone) if roofs is None else roofs
    xs = [pt[2] for pt in points]
    ys = [pt[3] for pt in points]
    ridges = [r.tflops * 1e3 / bw for r in roofs]  # where the bandwidth line meets each roof
    x_lo, x_hi = min(xs + ridges) / 10, max(xs + ridges) * 4
    top = max([r.tflops for r in roofs] + ys)
    fig, ax = plt.subplots(figsize=(13.5, 6.6), layout="constrained")
    grid = np.logspace(math.log10(x_lo), math.log10(x_hi), 200)
    ax.plot(grid, grid * bw / 1e3, color="#d62728", lw=1.5,
            label=f"bandwidth ceiling: copy measured in this run,\n{bw:,.0f} GB/s (the chapters' summary_kernels)")
    for r in roofs:
        ridge = r.tflops * 1e3 / bw
        ax.plot([ridge, x_hi], [r.tflops, r.tflops], color="#333333" if r.measured else "#888888", lw=1.2,
                ls="-" if r.measured else ":", label=("measured roof, " if r.measured else "datasheet roof, ") + r.label)
    # Colours and markers repeat at different periods, so no two of up to 20 points look alike.
    cmap = plt.get_cmap("tab10" if len(points) <= 10 else "tab20")
    markers = "os^Dv<>PXh*"
    for i, pt in enumerate(points):
        label, kernel, ai, tf = pt
        p, m = pt.profile, pt.summary
        mult = analysis.flop_multiple(m)
        dtype = analysis.shape_dtype(m.shape) or ""
        what = f"{label}: {kernel}" + (f" ({p.kernel_variant} variant)" if p.kernel_variant else
                                       f" ({m.variant})" if len(p.mains) > 1 else "")
        what += f", {dtype}" + (f", counts {mult:.3g}× the conv's flops" if mult else "")
        what += f", {m.ceiling_pct:.3g} % of the copy ceiling"
        if p.borrowed:
            what += f"\n    at {analysis.dims_label(m.shape)}, from {m.file.rsplit('/', 1)[-1]} (not in this run)"
        ax.plot(ai, tf, markers[i % len(markers)], ms=8, color=cmap(i % cmap.N), alpha=0.85, label=what)
    # Points that (nearly) coincide share one label: "01, 02, 03".
    clusters = []
    for pt in points:
        _, _, ai, tf = pt
        for c in clusters:
            if abs(math.log10(ai / c[1])) < 0.08 and abs(math.log10(tf / c[2])) < 0.12:
                c[0].append(_point_name(pt))
                break
        else:
            clusters.append([[_point_name(pt)], ai, tf])
    def near(o, ai, tf, side):  # another point just to this side of (ai, tf), at about its height
        dx = math.log10(o[1] / ai) * side
        return 0 < dx < 0.4 and abs(math.log10(o[2] / tf)) < 0.25

    for names, ai, tf in clusters:
        # Above the point (labels of points at one intensity never collide); beside it, away from the
        # neighbour, when another point sits just left or right of it at about the same height.
        if any(near(o, ai, tf, +1) for o in clusters):
            ax.annotate(", ".join(names), (ai, tf), textcoords="offset points", xytext=(-8, 0), ha="right",
                        va="center", fontsize=9)
        elif any(near(o, ai, tf, -1) for o in clusters):
            ax.annotate(", ".join(names), (ai, tf), textcoords="offset points", xytext=(8, 0), ha="left",
                        va="center", fontsize=9)
        else:
            ax.annotate(", ".join(names), (ai, tf), textcoords="offset points", xytext=(0, 8), ha="center",
                        fontsize=9)
    ax.set_xscale("log")
    ax.set_yscale("log")
    _plain_log(ax.xaxis)
    _plain_log(ax.yaxis)
    ax.set_xlim(x_lo, x_hi)
    ax.set_ylim(min(min(ys), x_lo * bw / 1e3) / 3, top * 4)
    ax.set_xlabel("arithmetic intensity (flop per byte of DRAM traffic, each kernel's napkin count)")
    ax.set_ylabel("attained TFLOP/s (log scale)")
    ax.grid(alpha=0.3, which="major")
    ax.legend(**dict(OUTSIDE, fontsize=8))
    fig.suptitle("Roofline: each chapter's main kernel under the measured copy bandwidth and compute roofs",
                 fontsize=12)
    notes = ["flops as each kernel's model counts them, shown as a multiple of the convolution's own 2·B·D·L·W"]
    kernels = list(dict.fromkeys(pt[1] for pt in points))
    notes += [f"{key}: {text}" for key, text in FLOP_NOTES.items() if any(k.startswith(key) for k in kernels)]
    if roofs:
        notes.append("roofs: the fastest library GEMM measured per dtype in the loaded result files (what this "
                     "device reached, a lower bound on its peak)"
                     + ("; a datasheet figure where none was measured" if any(not r.measured for r in roofs) else ""))
    notes += _variant_notes([p for p in profiles if p.kernel_variant and p.main], "point")
    layouts = [p for p in everyone if len(p.mains) > 1]
    if layouts:
        notes.append(", ".join(p.label for p in layouts) + ": one point per layout, the headline variant of each "
                     "(variants named cf_* for channel-first, cl_* for channel-last)")
    for p in borrowed:
        if p.main:
            notes.append(f"{p.label}: not in this run; from {p.main.file.rsplit('/', 1)[-1]} at {p.main.shape} "
                         f"(that run's copy ceiling {p.main.copy_ceiling_gbs:,.0f} GB/s), "
                         + ("the same B, D, L and W as this run" if p.comparable else
                            "another shape than the other points: compare its distance below the bandwidth line, "
                            "not its TFLOP/s"))
    _footer(fig, view, _wrap("\n".join(notes), 185))
    return _save(fig, path)


WORK_TITLES = {"forward": "Forward", "backward": "Backward", "decode": "Decoding step"}
BOOK_NOTE = ("device time: the chapter's kernels; share: the operator's bytes over that time, of the copy ceiling "
             "measured in the chapter's own run; speed-up: device time over the first chapter's of the same work")
UNVERIFIED = "#d62728"


def _book_value(v, per_step):
    """A device time at a bar's end: ms for the forward and backward, µs for a decoding step."""
    return f"{v * 1e3:.3g} µs" if per_step else _ms(v)


def chart_book(rows, path, date=None, device=None):
    """The whole book (the tour's book.tsv, profiling/book.py): one panel per kind of work, one bar
    per chapter's headline variant, device time on a log axis, with its share of the copy ceiling and
    its speed-up at the bar's end. A row whose output was not verified is hatched and says so."""
    rows = [r for r in rows if r.work in book.WORKS]
    if not rows:
        raise FormatError("book chart: the book table has no rows")
    works = [w for w in book.WORKS if any(r.work == w for r in rows)]
    groups = {w: [r for r in rows if r.work == w] for w in works}
    heights = [len(groups[w]) + 1.3 for w in works]
    fig, axes = plt.subplots(len(works), 1, figsize=(12, 1.6 + 0.42 * sum(heights)), layout="constrained",
                             gridspec_kw=dict(height_ratios=heights), squeeze=False)
    for ax, w in zip(axes[:, 0], works):
        group = groups[w]
        per_step = w == "decode"
        scale = 1e3 if per_step else 1.0  # the axis in µs for a decoding step
        shapes = list(dict.fromkeys(r.shape for r in group))
        y = np.arange(len(group))[::-1]  # the first chapter on top
        first = group[0].chapter
        texts = {}
        for r in group:
            # (one decimal from 1 % up; below, two significant digits: chapters 01-04's hundredths)
            share = f"{r.ceiling_pct:.1f}" if r.ceiling_pct >= 1 or r.ceiling_pct <= 0 else f"{r.ceiling_pct:.2g}"
            parts = [_book_value(r.device_ms, per_step), f"{share} % of the copy ceiling"]
            if r.speedup is not None:
                if r.over == r.chapter:
                    parts.append("the baseline")
                else:
                    parts.append(f"{_times(r.speedup)}×" + (f" over {r.over}" if r.over and r.over != first else ""))
            texts[id(r)] = "  ·  ".join(parts)
        drawn = [r for r in group if r.device_ms > 0]
        hi_v = max((r.device_ms * scale for r in drawn), default=1.0)
        lo = min(min((r.device_ms * scale for r in drawn), default=0.1) / 3, hi_v / 10)  # a decade at least
        # The right end leaves room for each bar's text: a share f of the plot's width (about 880 pixels,
        # 5.6 pixels a character at 8.5 points) after the bar's end, on a log axis.
        log_hi = math.log10(hi_v) + 0.3
        for r in drawn:
            f = min(0.6, (5.6 * len(texts[id(r)]) + 30) / 880)
            log_hi = max(log_hi, (math.log10(r.device_ms * scale) - f * math.log10(lo)) / (1 - f))
        hi = 10 ** log_hi
        for yi, r in zip(y, group):
            v = r.device_ms * scale
            if v <= 0:
                ax.text(lo * 1.1, yi, "no device time recorded", va="center", fontsize=8, color="#444444")
                continue
            ax.barh(yi, v - lo, 0.62, left=lo, color="#2ca02c" if r.verified else "#f4c7c3",
                    edgecolor="none" if r.verified else UNVERIFIED, hatch=None if r.verified else "///", lw=0.8)
            ax.annotate(texts[id(r)], (v, yi), xytext=(5, 0), textcoords="offset points", va="center", fontsize=8.5)
            if not r.verified:
                ax.annotate("NOT VERIFIED", (v, yi - 0.36), xytext=(5, 0), textcoords="offset points",
                            va="center", fontsize=8, fontweight="bold", color=UNVERIFIED)
        labels = [r.label + (f"\n{r.shape}" if len(shapes) > 1 else "") for r in group]
        ax.set_yticks(y, labels, fontsize=9)
        for tick, r in zip(ax.get_yticklabels(), group):
            if not r.verified:
                tick.set_color(UNVERIFIED)
                tick.set_fontweight("bold")
        ax.set_ylim(-0.7, len(group) - 0.3)
        ax.set_xscale("log")
        ax.set_xlim(lo, hi)
        if log_hi - math.log10(lo) < 2.5:  # a short range: ticks at 1, 2 and 5 of each decade
            ax.xaxis.set_major_locator(matplotlib.ticker.LogLocator(base=10, subs=(1, 2, 5)))
        _plain_log(ax.xaxis)
        ax.grid(axis="x", alpha=0.3, which="both")
        ax.set_xlabel("device time per step (µs, log scale)" if per_step else "device time (ms, log scale)",
                      fontsize=9)
        where = shapes[0] if len(shapes) == 1 else "shapes differ (under each chapter's name)"
        ax.set_title(f"{WORK_TITLES[w]}: {where}" + (", times per step" if per_step else ""), fontsize=10,
                     loc="left")
    fig.suptitle("The whole book: each chapter's headline kernel at one shape per kind of work", fontsize=12)
    devices = list(dict.fromkeys(r.device for r in rows if r.device))
    notes = [BOOK_NOTE]
    bad = [r for r in rows if not r.verified]
    if bad:
        notes.append("NOT VERIFIED (hatched): " + "; ".join(f"{r.work} {r.label}" for r in bad)
                     + ": its output did not match the reference in this run, so its time is no result")
    _footer_parts(fig, [device or " and ".join(devices) or "device not recorded", date or "date not recorded",
                        "source: the tour's book.tsv"], _wrap("\n".join(notes), 170))
    return _save(fig, path)


def _chart_book_of(view, path, log):
    """book.png from the book table among the loaded files (draw_all): skipped when there is none."""
    chosen, others = book.pick(getattr(view, "books", []), view.run)
    if chosen is None:
        raise FormatError(f"no {book.BOOK_FILE} (the tour's table of the whole book) in the input")
    if others:
        log(f"profiling: book.png from {chosen.file}; not drawn: {', '.join(b.file for b in others)}")
    return chart_book(chosen.rows, path, chosen.date)


def draw_all(view, profiles, out_dir, timeline_chapter=None, log=print):
    """Draws every chart the data allows; returns the paths. A chart without data is reported, not
    drawn empty; no chart at all is an error."""
    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    drawn = []
    draw_one = {"book.png": lambda p: _chart_book_of(view, p, log),
                "categories.png": lambda p: chart_categories(view, profiles, p),
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
