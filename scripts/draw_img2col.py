#!/usr/bin/env python3
"""Draws docs/img/img2col.png: the GEMM formulation of docs/operator.md at a toy size.

x[D, L] (channel-first) is transposed to time-first, padded with W-1 rows of zeros in front
(xp[L+W-1, D]) and unfolded into A[L, W·D], whose row t holds the W time steps t-(W-1) .. t side by
side: A[t, k·D + c] = xp[t + k, c] = x[c, t - (W-1) + k]. The weights become the block-diagonal
Bw[W·D, D]: W blocks of D x D, each non-zero only on its diagonal, Bw[k·D + c, c] = weight[c, k].
Row t = 3 of A, the inputs it holds and column c = 1 of Bw are outlined: C[3, 1] = out[1, 3] is their
product, and only the W outlined non-zeros of the column contribute.

Usage: python3 scripts/draw_img2col.py [--out docs/img/img2col.png] [--D 4 --L 6 --W 3]
Needs matplotlib (requirements.txt); the figure is deterministic.
"""
import argparse
import io
import pathlib

import matplotlib

matplotlib.use("Agg")
import matplotlib.patches as patches  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
CHANNEL_COLORS = ("#9ecae1", "#fdae6b", "#a1d99b", "#d4b9da", "#fdd0a2", "#c7e9c0", "#dadaeb", "#fcbba1")
ZERO = "#eeeeee"
FRAME = "#d62728"
CELL = 0.42  # inches per cell


def letter(c):
    return "abcdefgh"[c]


def grid(ax, x0, y0, rows, cols, cell, label, color, fontsize=8):
    """Draws a rows x cols matrix with its top-left corner at (x0, y0) (y grows downwards)."""
    for r in range(rows):
        for c in range(cols):
            ax.add_patch(patches.Rectangle((x0 + c, y0 + r), 1, 1, facecolor=color(r, c), edgecolor="white", lw=1.2))
            text = label(r, c)
            if text:
                ax.text(x0 + c + 0.5, y0 + r + 0.5, text, ha="center", va="center", fontsize=fontsize, color=cell(r, c))
    ax.add_patch(patches.Rectangle((x0, y0), cols, rows, fill=False, edgecolor="#555555", lw=1.0))


def frame(ax, x0, y0, w, h):
    ax.add_patch(patches.Rectangle((x0, y0), w, h, fill=False, edgecolor=FRAME, lw=2.2))


def arrow(ax, x0, x1, y, text):
    ax.annotate("", (x1, y), (x0, y), arrowprops=dict(arrowstyle="-|>", color="#333333", lw=1.4))
    ax.text((x0 + x1) / 2, y - 0.35, text, ha="center", va="bottom", fontsize=8.5, color="#333333")


def draw(D, L, W, out):
    P = W - 1  # left padding
    t_hi, c_hi = min(3, L - 1), min(1, D - 1)  # the outlined output C[t_hi, c_hi]

    def xname(c, t):
        return f"{letter(c)}{t}"

    # Layout, in cell units: x [D, L] | xp [L+P, D] | A [L, W·D] | × | Bw [W·D, D]
    gap = 3.2
    x_x, x_xp = 0.0, L + gap
    x_a = x_xp + D + gap
    x_bw = x_a + W * D + 2.2
    width = x_bw + D + 0.8
    top = 1.6  # room for the titles
    height = top + max(W * D, L + P) + 4.6  # the formulas under the matrices, then the key
    fig, ax = plt.subplots(figsize=(width * CELL, height * CELL))
    ax.set_xlim(-1.4, width)
    ax.set_ylim(height, -0.4)
    ax.set_axis_off()

    ink = lambda r, c: "#222222"  # noqa: E731
    # x[D, L], channel-first: row c is channel c along time.
    y_x = top + 1.5
    grid(ax, x_x, y_x, D, L, ink, lambda r, c: xname(r, c), lambda r, c: CHANNEL_COLORS[r % 8])
    for c in range(D):
        ax.text(x_x - 0.25, y_x + c + 0.5, f"c={c}", ha="right", va="center", fontsize=7.5)
    for t in range(L):
        ax.text(x_x + t + 0.5, y_x - 0.2, f"t={t}", ha="center", va="bottom", fontsize=7)
    ax.text(x_x + L / 2, top - 0.6, f"x [D, L] = [{D}, {L}]\nchannel-first", ha="center", va="bottom", fontsize=10,
            fontweight="bold")
    frame(ax, x_x + t_hi - P, y_x, W, D)  # the inputs output t_hi needs

    # xp[L+P, D]: time-first, P rows of zeros in front.
    def xp_label(r, c):
        return "0" if r < P else xname(c, r - P)
    grid(ax, x_xp, top, L + P, D, lambda r, c: "#888888" if r < P else "#222222", xp_label,
         lambda r, c: ZERO if r < P else CHANNEL_COLORS[c % 8])
    for r in range(L + P):
        ax.text(x_xp - 0.2, top + r + 0.5, f"{r - P}", ha="right", va="center", fontsize=7, color="#555555")
    ax.text(x_xp - 0.2, top - 0.05, "x's t", ha="right", va="bottom", fontsize=7, color="#555555")
    frame(ax, x_xp, top + t_hi, D, W)  # rows t_hi - P .. t_hi of x: what row t_hi of A unfolds
    ax.text(x_xp + D / 2, top - 0.6, f"xp [L+W−1, D] = [{L + P}, {D}]\ntime-first, {P} zero rows", ha="center",
            va="bottom", fontsize=10, fontweight="bold")
    arrow(ax, x_x + L + 0.3, x_xp - 0.9, y_x + D / 2, "transpose,\npad")

    # A[L, W·D]: row t = xp rows t .. t+P side by side.
    def a_label(r, c):
        k, ch = divmod(c, D)
        return xp_label(r + k, ch)

    def a_color(r, c):
        k, ch = divmod(c, D)
        return ZERO if r + k < P else CHANNEL_COLORS[ch % 8]
    y_a = top + 0.0
    grid(ax, x_a, y_a, L, W * D, lambda r, c: "#888888" if r + c // D < P else "#222222", a_label, a_color)
    for k in range(W):
        shift = f"t−{P - k}" if k < P else "t"
        ax.text(x_a + k * D + D / 2, y_a + L + 0.25, f"k={k}: x[·, {shift}]", ha="center", va="top", fontsize=7.5)
        if k:
            ax.plot([x_a + k * D] * 2, [y_a - 0.15, y_a + L + 0.15], color="#333333", lw=1.6)
    for t in range(L):
        ax.text(x_a - 0.2, y_a + t + 0.5, f"t={t}", ha="right", va="center", fontsize=7)
    ax.text(x_a + W * D / 2, top - 0.6, f"A [L, W·D] = [{L}, {W * D}]\nrow t: the W inputs output t needs",
            ha="center", va="bottom", fontsize=10, fontweight="bold")
    arrow(ax, x_xp + D + 0.3, x_a - 0.9, top + (L + P) / 2, "img2col")
    frame(ax, x_a, y_a + t_hi, W * D, 1)
    ax.text(x_a + W * D / 2, y_a + L + 1.1,
            f"A[t, k·D + c] = xp[t + k, c] = x[c, t − {P} + k]", ha="center", va="top", fontsize=8.5)

    # Bw[W·D, D]: W diagonal blocks, Bw[k·D + c, c] = weight[c, k].
    def bw_label(r, c):
        k, ch = divmod(r, D)
        return f"w{letter(c)}{k}" if ch == c else ""

    def bw_color(r, c):
        k, ch = divmod(r, D)
        return CHANNEL_COLORS[c % 8] if ch == c else "#fafafa"
    grid(ax, x_bw, top, W * D, D, ink, bw_label, bw_color, fontsize=7.5)
    for k in range(1, W):
        ax.plot([x_bw - 0.15, x_bw + D + 0.15], [top + k * D] * 2, color="#333333", lw=1.6)
    for k in range(W):
        ax.text(x_bw + D + 0.2, top + k * D + D / 2, f"k={k}", ha="left", va="center", fontsize=7.5)
    for c in range(D):
        ax.text(x_bw + c + 0.5, top + W * D + 0.25, f"c={c}", ha="center", va="top", fontsize=7)
    ax.text(x_bw + D / 2, top - 0.6, f"Bw [W·D, D] = [{W * D}, {D}]\nblock-diagonal", ha="center", va="bottom",
            fontsize=10, fontweight="bold")
    ax.text((x_a + W * D + x_bw) / 2, top + L / 2, "×", ha="center", va="center", fontsize=20)
    frame(ax, x_bw + c_hi, top, 1, W * D)
    ax.text(x_bw + D / 2, top + W * D + 1.1, "Bw[k·D + c, c] = weight[c, k],\n0 elsewhere", ha="center", va="top",
            fontsize=8.5)

    foot = (f"D = {D} channels (a–{letter(D - 1)}), L = {L} time steps, width W = {W}: cell {letter(c_hi)}{t_hi} is "
            f"x[{c_hi}, {t_hi}], w{letter(c_hi)}2 is weight[{c_hi}, 2]; grey cells are the causal padding's zeros.\n"
            f"C = A × Bw is [L, D] = [{L}, {D}], time-first. Outlined: C[{t_hi}, {c_hi}] = out[{c_hi}, {t_hi}] is row "
            f"{t_hi} of A times column {c_hi} of Bw; only the W = {W} non-zeros of the column count,\n"
            f"the other W·D − W = {W * D - W} products multiply by zero (the GEMM does D times the convolution's "
            f"multiply-adds).")
    ax.text(-1.2, height - 0.2, foot, ha="left", va="bottom", fontsize=8.5, color="#333333")

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight", pad_inches=0.1)
    plt.close(fig)
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        from PIL import Image  # matplotlib depends on Pillow: a palette PNG is a fraction of the size
        Image.open(buf).convert("RGB").quantize(colors=64).save(out, format="PNG", optimize=True)
    except ImportError:
        out.write_bytes(buf.getvalue())
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "docs" / "img" / "img2col.png"))
    ap.add_argument("--D", type=int, default=4)
    ap.add_argument("--L", type=int, default=6)
    ap.add_argument("--W", type=int, default=3)
    a = ap.parse_args()
    if not (1 <= a.D <= 8 and 2 <= a.W <= 4 and a.W <= a.L <= 12):
        ap.error("an illustration: 1 <= D <= 8, 2 <= W <= 4, W <= L <= 12")
    print(draw(a.D, a.L, a.W, pathlib.Path(a.out)))


if __name__ == "__main__":
    main()
