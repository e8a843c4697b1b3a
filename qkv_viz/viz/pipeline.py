"""The whole of self-attention in one picture, every matrix with its shape.

    X @ W_q, X @ W_k, X @ W_v -> Q, K (T, d_k), V (T, d_v) -> Q @ K^T: dot products (T, T)
      -> / sqrt(d_k) [-> mask]: scores -> softmax: weights (rows sum to 1) -> weights @ V: output (T, d_v)

Every matrix product is drawn as an "@" node that both factors point into.

``plot_pipeline(T=3, d_model=4, d_k=2, d_v=2, highlight=None)`` draws it with small
seeded example numbers; ``plot_pipeline(X=X, W_q=W_q, W_k=W_k, W_v=W_v, tokens=...)``
draws a given example and writes every number in its cell. Each matrix is a grid of
cells: X, the W's, Q, K, V and the output shaded from their own smallest entry (light)
to their largest (dark), in ``style.QUERY_COLOR`` / ``KEY_COLOR`` / ``VALUE_COLOR``;
dot products and scores on the diverging ``style.SCORES_CMAP`` centred on 0 (one
labelled scale for both), weights on ``style.WEIGHTS_CMAP`` 0..1 (a labelled scale). Chapter 0 introduces it;
later chapters pass ``highlight`` to point at their stage: one of ``STAGES``
("input", "projections", "qkv", "scores", "scale", "mask", "softmax", "output").
"mask" also draws the causal-mask step (``mask=True`` draws it without highlighting).
"""
from __future__ import annotations

import matplotlib.colors as mcolors
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.lines import Line2D
from matplotlib.patches import Circle, FancyArrowPatch, FancyBboxPatch, Rectangle

from qkv_viz.core.attention import causal_mask, masked_softmax
from qkv_viz.core.validate import positive_int
from qkv_viz.viz import style

STAGES = ("input", "projections", "qkv", "scores", "scale", "mask", "softmax", "output")
_ALIASES = {"x": "input", "project": "projections", "projection": "projections", "weights": "softmax",
            "q": "qkv", "k": "qkv", "v": "qkv", "values": "output", "weighted_sum": "output"}
_INK, _DIM, _ARROW = "#222222", 0.28, "#555555"
_HIGHLIGHT_FACE, _HIGHLIGHT_EDGE = "#FFF3C4", "#E69F00"
_FONT = 9.5         # labels and shapes (>= style.MIN_FONT_PT at the displayed size)
_NAME_FONT = 11.0   # the matrices' names


def _example(T, d_model, d_k, d_v, masked, seed=0):
    """Small seeded numbers for every stage. Returns a dict of named arrays."""
    rng = np.random.default_rng(seed)
    x = 1.5 * rng.normal(size=(T, d_model))  # (T, d_model); spread enough that the weights differ
    w_q, w_k = (rng.normal(size=(d_model, d_k)) / np.sqrt(d_model) for _ in range(2))
    w_v = rng.normal(size=(d_model, d_v)) / np.sqrt(d_model)
    q, k, v = x @ w_q, x @ w_k, x @ w_v  # (T, d_model) @ (d_model, d_k|d_v) -> (T, d_k|d_v)
    scores = q @ k.T                     # (T, d_k) @ (d_k, T) -> (T, T)
    scaled = scores / np.sqrt(d_k)
    mask = causal_mask(T) if masked else None
    weights = masked_softmax(scaled, mask)  # (T, T), rows sum to 1
    out = weights @ v                       # (T, T) @ (T, d_v) -> (T, d_v)
    return dict(x=x, w_q=w_q, w_k=w_k, w_v=w_v, q=q, k=k, v=v, scores=scores, scaled=scaled,
                mask=mask, weights=weights, out=out)


def _given_example(X, W_q, W_k, W_v, masked):
    """The named arrays of ``_example`` for a given X (T, d_model) and W's (d_model, d_k|d_v)."""
    from qkv_viz.core.validate import as_array
    x = as_array("X", X, ndim=2)
    w_q, w_k, w_v = (as_array(n, W, ndim=2) for n, W in (("W_q", W_q), ("W_k", W_k), ("W_v", W_v)))
    for n, W in (("W_q", w_q), ("W_k", w_k), ("W_v", w_v)):
        if W.shape[0] != x.shape[1]:
            raise ValueError(f"{n} must have d_model = {x.shape[1]} rows (X has shape {x.shape}), "
                             f"got shape {W.shape}")
    if w_q.shape[1] != w_k.shape[1]:
        raise ValueError(f"W_q and W_k must share d_k: W_q has shape {w_q.shape}, W_k has shape {w_k.shape}")
    q, k, v = x @ w_q, x @ w_k, x @ w_v  # (T, d_model) @ (d_model, d_k|d_v) -> (T, d_k|d_v)
    scores = q @ k.T                     # (T, d_k) @ (d_k, T) -> (T, T)
    scaled = scores / np.sqrt(w_q.shape[1])
    mask = causal_mask(x.shape[0]) if masked else None
    weights = masked_softmax(scaled, mask)
    return dict(x=x, w_q=w_q, w_k=w_k, w_v=w_v, q=q, k=k, v=v, scores=scores, scaled=scaled,
                mask=mask, weights=weights, out=weights @ v)


def _cell_number(x) -> str:
    """A number short enough for a cell: 2, 0.5, .42, -1.3."""
    if np.isclose(x, round(x)):
        return f"{int(round(x))}"
    text = f"{x:.2f}".rstrip("0")
    return text.replace("0.", ".", 1) if abs(x) < 1 else f"{x:.1f}"


def _tint(color, values):
    """Shades of ``color`` for ``values``: light for the smallest, full colour for the largest."""
    lo, hi = float(values.min()), float(values.max())
    t = (values - lo) / (hi - lo) if hi > lo else np.full(values.shape, 0.5)
    base, white = np.array(mcolors.to_rgb(color)), np.ones(3)
    return white + (0.15 + 0.75 * t)[..., None] * (base - white)  # (..., 3)


class _Canvas:
    """An axes in inches (aspect 1) and the artists drawn for each stage."""

    def __init__(self, ax, cell):
        self.ax, self.cell, self.artists = ax, cell, {s: [] for s in STAGES}

    def add(self, stage, artist):
        """Record ``artist`` under ``stage`` (None: part of no stage, never faded)."""
        if stage is not None:
            self.artists[stage].append(artist)
        return artist

    def text(self, stage, x, y, s, size=_FONT, **kw):
        kw.setdefault("ha", "center")
        kw.setdefault("color", _INK)
        return self.add(stage, self.ax.text(x, y, s, fontsize=size, **kw))

    def matrix(self, stage, cx, cy, colors, name, shape, numbers, name_color=_INK, masked=None,
               name_floor=-np.inf, values=None):
        """Cells (rows, cols, 3) centred on (cx, cy); name above (never below ``name_floor``),
        shape in two lines below; ``values`` (rows, cols), if given, written in the cells."""
        rows, cols = colors.shape[:2]
        c = self.cell
        x0, y0 = cx - cols * c / 2, cy - rows * c / 2
        for (i, j), _ in np.ndenumerate(colors[..., 0]):
            cut = masked is not None and not masked[i, j]
            self.add(stage, self.ax.add_patch(Rectangle(
                (x0 + j * c, y0 + (rows - 1 - i) * c), c, c, facecolor="#D9D9D9" if cut else colors[i, j],
                edgecolor="white", lw=1.0, hatch="////" if cut else None)))
            if values is not None and not cut:
                dark = np.dot(colors[i, j], (0.299, 0.587, 0.114)) < 0.5
                self.text(stage, x0 + (j + 0.5) * c, y0 + (rows - 1 - i + 0.5) * c, _cell_number(values[i, j]),
                          size=style.MIN_FONT_PT, va="center", color="white" if dark else _INK, gid="cell-number")
        self.add(stage, self.ax.add_patch(Rectangle((x0, y0), cols * c, rows * c, fill=False,
                                                    edgecolor="#444444", lw=0.8, gid="frame")))
        top, bottom = y0 + rows * c, y0
        if name:
            self.text(stage, cx, max(top + 0.09, name_floor), name, size=_NAME_FONT, va="bottom",
                      color=name_color)
        self.text(stage, cx, bottom - 0.09, shape, va="top")
        self.text(stage, cx, bottom - 0.30, numbers, va="top", color="#555555")
        return (x0, y0, x0 + cols * c, top)

    def arrow(self, stage, start, end, label=None, connection="arc3", label_xy=None, color=_ARROW):
        a = self.add(stage, self.ax.add_patch(FancyArrowPatch(
            start, end, arrowstyle="-|>", mutation_scale=11, lw=1.3, color=color,
            connectionstyle=connection, shrinkA=3, shrinkB=6)))
        if label:
            lx, ly = label_xy or ((start[0] + end[0]) / 2, (start[1] + end[1]) / 2 + 0.08)
            self.text(stage, lx, ly, label, va="bottom", gid="arrow-label")
        return a


def _scale_bar(canvas, stage, cx, y, cmap, ticks, label, steps=32):
    """A small horizontal colour scale under a matrix (a strip of patches, not an image), end labels,
    and what it measures (``label``) written under it."""
    w, h = 0.62, 0.07
    colors = plt.get_cmap(cmap)(np.linspace(0, 1, steps))  # (steps, 4)
    x0 = cx - w / 2
    for i, color in enumerate(colors):
        canvas.add(stage, canvas.ax.add_patch(Rectangle((x0 + i * w / steps, y - h), w / steps * 1.02, h,
                                                        facecolor=color, edgecolor="none", lw=0, gid="scale")))
    canvas.text(stage, cx - w / 2, y - h - 0.04, ticks[0], va="top")
    canvas.text(stage, cx + w / 2, y - h - 0.04, ticks[1], va="top")
    canvas.text(stage, cx, y - h - 0.24, label, va="top", gid="scale-label")


def _check_highlight(highlight):
    if highlight is None:
        return None
    key = _ALIASES.get(str(highlight).lower(), str(highlight).lower())
    if key not in STAGES:
        raise ValueError(f"highlight must be one of {STAGES} (or None), got {highlight!r}")
    return key


def plot_pipeline(T=3, d_model=4, d_k=2, d_v=2, ax=None, highlight=None, mask=False, seed=0,
                  X=None, W_q=None, W_k=None, W_v=None, tokens=None):
    """One end-to-end figure of self-attention, every matrix labelled with its shape.

    ``T`` tokens, model width ``d_model``, query/key width ``d_k``, value width ``d_v``
    (small: the cells are drawn), with seeded example numbers. Or a given example:
    ``X`` (T, d_model) and ``W_q``, ``W_k`` (d_model, d_k), ``W_v`` (d_model, d_v) (all four;
    the sizes then come from them), every number written in its cell, ``tokens`` (T names)
    beside the rows of X. ``highlight``: a stage of ``STAGES`` to emphasise
    (the others fade); "mask" adds the causal mask step (as ``mask=True`` does).
    ``ax``: an axes to draw on (it is cleared of ticks; the picture keeps its aspect).
    Returns a dict stage -> list of the artists drawn for it.
    """
    given = [W is not None for W in (X, W_q, W_k, W_v)]
    if any(given) and not all(given):
        raise ValueError("plot_pipeline draws a given example only with all of X, W_q, W_k and W_v; missing: "
                         + ", ".join(n for n, g in zip(("X", "W_q", "W_k", "W_v"), given) if not g))
    given = all(given)
    key = _check_highlight(highlight)
    masked = bool(mask) or key == "mask"
    if given:
        data = _given_example(X, W_q, W_k, W_v, masked)
        (T, d_model), d_k, d_v = data["x"].shape, data["w_q"].shape[1], data["w_v"].shape[1]
        if tokens is not None and len(tokens) != T:
            raise ValueError(f"tokens has {len(tokens)} names but X has {T} rows")
    T, d_model, d_k, d_v = (positive_int(n, v) for n, v in
                            (("T", T), ("d_model", d_model), ("d_k", d_k), ("d_v", d_v)))
    if max(T, d_model, d_k, d_v) > 8:
        raise ValueError(f"plot_pipeline draws every cell: keep T, d_model, d_k, d_v <= 8, got "
                         f"T={T}, d_model={d_model}, d_k={d_k}, d_v={d_v}")
    if not given:
        data = _example(T, d_model, d_k, d_v, masked, seed)
    data["numbers"], data["tokens"] = given, (None if tokens is None else [str(t) for t in tokens])
    label_w = _label_width(data["tokens"])
    cell = 0.3 if given else _cell_size(T, d_model, d_k, d_v, masked, label_w=label_w)  # given: the loop below fits it
    own = ax is None
    if own:
        _, ax = plt.subplots(figsize=(style.COLUMN_WIDTH, 3.0), dpi=style.DPI)  # resized in _frame
        ax.set_position((0, 0, 1, 1))
    for attempt in range(14):  # labels do not shrink with the cells: measure, redraw smaller if too wide
        if attempt:
            ax.clear()
            cell *= 0.94
        canvas = _Canvas(ax, cell)
        _frame(ax, _draw(canvas, data, T, d_model, d_k, d_v, masked), own)
        fig = ax.figure
        # the notebook shows the tight box + 0.1 in padding each side: keep that inside the column
        if not own or fig.get_tightbbox(fig.canvas.get_renderer()).width <= style.COLUMN_WIDTH - 0.25:
            break
    if key is not None:
        _emphasise(canvas, key)
    return canvas.artists


_GAP, _OP_GAP, _MARGINS = 0.42, 0.76, 0.9  # between matrices; where an arrow carries a label; edges
_AT_R = 0.12  # radius of an "@" node (a matrix product)


def _op_gap(T: int, cell: float) -> float:
    """Room for an arrow and its label; wider when T x T matrices are narrow (their labels are not)."""
    return max(_OP_GAP, 1.05 - T * cell)


def _proj_offsets(d_k, d_v, c):
    """(X's right edge -> the @ column, the @ column -> the centre of Q, K, V), in inches."""
    half_w = max(d_k, d_v) * c / 2          # half the width of the widest W and of Q, K, V
    to_at = 0.2 + 0.45 + half_w             # bus, the W's name on its left, half the W
    to_qkv = max(0.85, half_w + 0.45) + half_w
    return to_at, to_qkv


def _label_width(tokens) -> float:
    """Inches taken by a column of the tokens' names written beside a matrix's rows (0 without names)."""
    return 0.07 * max(map(len, tokens)) + 0.08 if tokens else 0.0


def _row_labels(canvas, stage, box, names, side="left"):
    """The tokens' names beside the rows of the matrix ``box`` (x0, y0, x1, y1): which row is whose."""
    c = canvas.cell
    x, ha = (box[0] - 0.06, "right") if side == "left" else (box[2] + 0.06, "left")
    for i, name in enumerate(names):
        canvas.text(stage, x, box[3] - (i + 0.5) * c, name, size=style.MIN_FONT_PT, ha=ha, va="center",
                    color="#555555", gid="row-label")


def _cell_size(T, d_model, d_k, d_v, masked, largest=0.19, two_rows=False, label_w=0.0) -> float:
    """The largest cell (<= ``largest`` in) with which the whole row of stages fits the column
    (``two_rows``: the projections on one row, the attention from Q, K, V on the next;
    ``label_w``: room for the tokens' names beside the rows on the second row (two columns of names, narrower than their allowance))."""
    room = style.COLUMN_WIDTH - 0.5  # 0.5: the caption and labels past the edges
    for cell in np.arange(largest, 0.05, -0.005):
        to_at, to_qkv = _proj_offsets(d_k, d_v, cell)
        op = _op_gap(T, cell)
        row_a = d_model * cell + to_at + to_qkv + max(d_k, d_v) * cell / 2 + 0.7  # X .. Q, K, V (+ names)
        row_b = (max(d_k, d_v) * cell + 1.0 + T * cell                               # Q, K, V, @ and Q K^T
                 + (2 + masked) * (op + T * cell) + op + 0.2 + d_v * cell + _MARGINS + 1.3 * label_w)
        width = max(row_a, row_b) if two_rows else row_a - 0.7 + row_b - max(d_k, d_v) * cell
        if width <= room:
            return float(cell)
    return 0.05


def _at_node(canvas, stage, x, y):
    """A small circle with "@" in it: a matrix product happens here."""
    canvas.add(stage, canvas.ax.add_patch(Circle((x, y), _AT_R, facecolor="white", edgecolor=_ARROW,
                                                 lw=1.2, gid="at", zorder=3)))
    canvas.text(stage, x, y, "@", va="center_baseline", zorder=4, gid="at-label")
    return (x - _AT_R, y - _AT_R, x + _AT_R, y + _AT_R)


def _draw(canvas, d, T, d_model, d_k, d_v, masked):
    """Place every stage left to right; returns the drawing's extent (x0, y0, x1, y1) in inches."""
    wide = canvas.cell  # the attention's cells (two-digit numbers)
    if d["numbers"]:  # the first row holds one-digit numbers: smaller cells
        canvas.cell = 0.75 * wide
    c = canvas.cell
    w_top = 0.34                                # from a row's line down to the top of its W
    row_h = max(T * c + 0.95, w_top + d_model * c + 0.8)  # a W hangs below its row's "@"
    y_q, y_k, y_v = 2 * row_h, row_h, 0.0       # the three branches
    y_s = (y_q + y_k) / 2                       # the scores chain runs between the Q and K rows
    op_gap = _op_gap(T, c)
    x = d_model * c / 2
    num = (lambda a: a) if d["numbers"] else (lambda a: None)  # the values written in the cells, or none
    x_box = canvas.matrix("input", x, y_k, _tint("#7F7F7F", d["x"]), "$X$", r"$T\times d_\mathrm{model}$",
                          f"{T}×{d_model}", values=num(d["x"]))
    for i, name in enumerate(d["tokens"] or []):
        canvas.text("input", x_box[0] - 0.06, x_box[3] - (i + 0.5) * c, name, ha="right", va="center")
    x_in_right = x + d_model * c / 2
    to_at, to_qkv = _proj_offsets(d_k, d_v, c)
    x_bus, x_at = x_in_right + 0.2, x_in_right + to_at
    x_qkv = x_at + to_qkv
    # X is read by all three products: one line to a bus, the bus to each "@"
    line = dict(color=_ARROW, lw=1.3, solid_capstyle="butt")
    canvas.add("projections", canvas.ax.plot([x_in_right, x_bus], [y_k, y_k], **line)[0])
    canvas.add("projections", canvas.ax.plot([x_bus, x_bus], [y_v, y_q], **line)[0])
    rows = (("q", y_q, style.QUERY_COLOR, d_k), ("k", y_k, style.KEY_COLOR, d_k),
            ("v", y_v, style.VALUE_COLOR, d_v))
    boxes, rows_colors = {}, [r[2] for r in rows]
    for name, y, color, width in rows:
        at = _at_node(canvas, "projections", x_at, y)
        canvas.arrow("projections", (x_bus, y), (at[0], y))
        w_cy = y - w_top - d_model * c / 2
        w_box = canvas.matrix("projections", x_at, w_cy, _tint(color, d[f"w_{name}"]), "",
                              rf"$d_\mathrm{{model}}\times d_{name}$".replace("d_q", "d_k"),
                              f"{d_model}×{width}", name_color=color, values=num(d[f"w_{name}"]))
        canvas.text("projections", w_box[0] - 0.07, w_cy, f"$W_{name}$", size=_NAME_FONT, ha="right",
                    va="center", color=color)
        canvas.arrow("projections", (x_at, w_box[3]), (x_at, at[1]))
        boxes[name] = canvas.matrix("qkv", x_qkv, y, _tint(color, d[name]), f"${name.upper()}$",
                                    rf"$T\times d_{'v' if name == 'v' else 'k'}$", f"{T}×{width}",
                                    name_color=color, values=num(d[name]))
        _row_labels(canvas, "qkv", boxes[name], d["tokens"] or [], side="right")
        canvas.arrow("projections", (at[2], y), (boxes[name][0], y))
    x_right_a = x_qkv + max(d_k, d_v) * c / 2
    if d["numbers"]:  # numbers need wide cells: the attention itself runs on a second row, from Q, K, V again
        y_q = y_v - w_top - d_model * c - 1.05
        c = canvas.cell = wide
        gap = T * c + 0.75
        y_q -= T * c / 2
        y_k, y_v = y_q - gap, y_q - 2 * gap
        x_qkv = max(d_k, d_v) * c / 2 + 0.05  # their names, on the left, stay within X's names' margin
        canvas.text(None, x_qkv, y_q + T * c / 2 + 0.45, "then, with the same Q, K, V:", ha="left",
                    va="bottom", color="#555555")
        for name, y, color, width in zip("qk", (y_q, y_k), rows_colors, (d_k, d_k)):  # V hangs under its "@"
            boxes[name] = canvas.matrix("qkv", x_qkv, y, _tint(color, d[name]), f"${name.upper()}$",
                                        rf"$T\times d_{'v' if name == 'v' else 'k'}$", f"{T}×{width}",
                                        name_color=color, values=num(d[name]))
            _row_labels(canvas, "qkv", boxes[name], d["tokens"] or [])
        y_s = (y_q + y_k) / 2
    # Q @ K^T: the two upper branches meet in an "@", the dot products come out
    floor = y_s + 0.36  # the chain's names sit above its arrow labels, however short the matrices
    names = d["tokens"] or []
    label_h = (0.085 * max(map(len, names)) + 0.08) if names else 0.0  # keys' names, upright above each T x T
    floor = max(floor, y_s + T * c / 2 + label_h + 0.06) if names else floor
    lim = float(np.abs(d["scores"]).max()) or 1.0
    x_dot = boxes["q"][2] + 0.55
    dot = _at_node(canvas, "scores", x_dot, y_s)
    canvas.arrow("scores", (boxes["q"][2], y_q), (dot[0] + 0.02, y_s + 0.06), connection="arc3,rad=-0.2")
    canvas.arrow("scores", (boxes["k"][2], y_k), (dot[0] + 0.02, y_s - 0.06), connection="arc3,rad=0.2")
    canvas.text("scores", (boxes["k"][2] + dot[0]) / 2 + 0.12, (y_k + y_s) / 2 - 0.08, r"$K^\top$",
                va="center", ha="left")
    x_s = dot[2] + (0.15 + _label_width(names) if names else 0.3) + T * c / 2
    s_box = canvas.matrix("scores", x_s, y_s, _diverging(d["scores"], lim), "dot products\n" + r"$QK^\top$",
                          r"$T\times T$", f"{T}×{T}", name_floor=floor, values=num(d["scores"]))
    canvas.arrow("scores", (dot[2], y_s), (s_box[0] - _label_width(names), y_s))
    _row_labels(canvas, "scores", s_box, names)  # rows = the queries' tokens, for every T x T after it
    # / sqrt(d_k): the scores (the mask, when drawn, comes before softmax too)
    x_sc = s_box[2] + op_gap + T * c / 2
    sc_box = canvas.matrix("scale", x_sc, y_s, _diverging(d["scaled"], lim),
                           r"$QK^\top/\sqrt{d_k}$" if masked else "scores\n" + r"$QK^\top/\sqrt{d_k}$",
                           r"$T\times T$", f"{T}×{T}", name_floor=floor, values=num(d["scaled"]))
    canvas.arrow("scale", (s_box[2], y_s), (sc_box[0], y_s), label=r"$\div\sqrt{d_k}$")
    last = sc_box
    if masked:
        x_m = sc_box[2] + op_gap + T * c / 2
        m_box = canvas.matrix("mask", x_m, y_s, _diverging(d["scaled"], lim), "scores\n(masked)",
                              r"$T\times T$", "hatched: −∞", masked=d["mask"], name_floor=floor,
                              values=num(d["scaled"]))
        canvas.arrow("mask", (sc_box[2], y_s), (m_box[0], y_s), label="mask")
        last = m_box
    y_o = y_s  # the row of the weights and the output
    if d["numbers"]:  # numbers need wide cells: the weights and the output go on a third row, under the scores
        x_a = (last[0] + last[2]) / 2
        y_o = last[1] - 0.62 - 0.25 - label_h - T * c / 2
        floor = y_o + T * c / 2 + label_h + 0.06
        a_box = canvas.matrix("softmax", x_a, y_o, _weights_rgb(d["weights"]), "weights",
                              r"$T\times T$", "rows sum to 1", name_floor=floor, values=num(d["weights"]))
        canvas.arrow("softmax", (x_a - 0.45, last[1] - 0.1), (x_a - 0.45, floor + 0.3), label="softmax",
                     label_xy=(x_a - 0.5, (last[1] + floor) / 2 + 0.05))
        canvas.ax.texts[-1].set_ha("right")
    else:
        x_a = last[2] + op_gap + T * c / 2
        a_box = canvas.matrix("softmax", x_a, y_s, _weights_rgb(d["weights"]), "weights",
                              r"$T\times T$", "rows sum to 1", name_floor=floor, values=num(d["weights"]))
        canvas.arrow("softmax", (last[2], y_s), (a_box[0], y_s), label="softmax")
    _scale_bar(canvas, "softmax", x_a, a_box[1] - 0.5, style.WEIGHTS_CMAP, ("0", "1"), "weights")
    # weights @ V -> output
    x_wv = a_box[2] + (op_gap * 0.85 + max(0, d_v - 2) * c / 2 if d["numbers"] else op_gap * 0.5)  # room for V under it
    wv = _at_node(canvas, "output", x_wv, y_o)
    x_o = x_wv + 0.12 + op_gap / 2 + d_v * c / 2
    o_box = canvas.matrix("output", x_o, y_o, _tint(style.VALUE_COLOR, d["out"]), "output",
                          r"$T\times d_v$", f"{T}×{d_v}", name_color=style.VALUE_COLOR, name_floor=floor,
                            values=num(d["out"]))
    canvas.arrow("output", (a_box[2], y_o), (wv[0], y_o))
    for stage, box in (("scores", s_box), ("scale", sc_box), ("softmax", a_box)) + ((("mask", m_box),) if masked else ()):
        for j, name in enumerate(names):  # columns = the keys' tokens (rows: the queries', in the same order)
            canvas.text(stage, box[0] + (j + 0.5) * c, box[3] + 0.05, name, size=style.MIN_FONT_PT,
                        rotation=90, va="bottom", color="#555555", gid="token-label")
    canvas.arrow("output", (wv[2], y_o), (o_box[0], y_o))
    _row_labels(canvas, "output", o_box, names, side="right")
    if d["numbers"]:  # V hangs below the "@" it enters, as the W's do on the first row
        v_cy = y_o - w_top - T * c / 2
        boxes["v"] = canvas.matrix("qkv", x_wv, v_cy, _tint(style.VALUE_COLOR, d["v"]), "", r"$T\times d_v$",
                                   f"{T}×{d_v}", values=num(d["v"]))
        canvas.text("qkv", boxes["v"][0] - 0.07, v_cy, "$V$", size=_NAME_FONT, ha="right", va="center",
                    color=style.VALUE_COLOR)
        canvas.arrow("output", (x_wv, boxes["v"][3]), (x_wv, wv[1]), color=style.VALUE_COLOR)
        y_v = v_cy - T * c / 2
    else:
        canvas.arrow("output", (boxes["v"][2], y_v), (x_wv, wv[1]),
                     connection="angle,angleA=0,angleB=90,rad=6", color=style.VALUE_COLOR)
    _scale_bar(canvas, "scale", *((x_s, s_box[1] - 0.5) if d["numbers"] else (x_sc, sc_box[1] - 0.5)),
               style.SCORES_CMAP,
               (f"−{lim:.3g}", f"+{lim:.3g}"),
               "dot products,\nscores: white = 0")
    cap_x, cap_y = (x_right_a + 3.6, 2 * row_h + T * c / 2) if d["numbers"] else (o_box[2] + 0.3, y_v - 0.12)
    canvas.text(None, cap_x, cap_y,
                ("" if d["numbers"] else "example numbers, ")
                + f"T = {T}, $d_\\mathrm{{model}}$ = {d_model}, $d_k$ = {d_k}, $d_v$ = {d_v}\n"
                "X, W, Q, K, V, output: each shaded from its\nsmallest (light) to its largest (dark) entry\n"
                "@ = matrix product", va="top", ha="right", color="#555555")
    top = (2 * row_h if d["numbers"] else y_q) + max(T * c / 2 + 0.35, 0.35)
    if d["numbers"]:
        bottom = min(y_k - T * c / 2, y_v) - 0.55
    else:
        bottom = min(y_v - w_top - d_model * c - 0.6, y_v - T * c / 2 - 0.55)
    left = x - 0.55  # X's shape label is wider than X
    if d["tokens"]:  # room for the tokens' names left of X (in the larger font)
        left = min(left, x_box[0] - 0.16 - 0.075 * max(map(len, d["tokens"])))
        right = max(o_box[2] + _label_width(names) + 0.12, cap_x + 0.05)
    else:
        right = max(o_box[2], cap_x - 0.3 if d["numbers"] else 0) + 0.35
    return (min(-0.1, left), bottom, right, top)  # X's shape label is wider than X


def _diverging(values, limit):
    """SCORES_CMAP colours on [-limit, limit] (one limit for raw and scaled scores, so scaling shows)."""
    return plt.get_cmap(style.SCORES_CMAP)((values + limit) / (2 * limit))[..., :3]


def _weights_rgb(values):
    return plt.get_cmap(style.WEIGHTS_CMAP)(np.clip(values, 0, 1))[..., :3]


def _frame(ax, extent, own: bool):
    """Show exactly the drawing, 1 data unit = 1 inch, no ticks; size a figure we made to fit."""
    x0, y0, x1, y1 = extent
    ax.set_xlim(x0, x1)
    ax.set_ylim(y0, y1)
    ax.set_aspect("equal")
    ax.set_axis_off()
    fig = ax.figure
    if own:
        width = min(style.COLUMN_WIDTH, x1 - x0)
        fig.set_size_inches(width, width * (y1 - y0) / (x1 - x0))


def _emphasise(canvas, key):
    """Fade every stage but ``key``; ring ``key``'s matrices and thicken its arrows."""
    for stage, artists in canvas.artists.items():
        if stage != key:
            for a in artists:
                a.set_alpha(_DIM)
                if a.get_gid() == "cell-number":  # white on a faded cell would vanish: dark ink instead
                    a.set_color(_INK)
    for a in list(canvas.artists[key]):
        if isinstance(a, Line2D):  # the input's bus
            a.set_linewidth(2.2)
            a.set_color(_HIGHLIGHT_EDGE)
        elif isinstance(a, FancyArrowPatch):
            a.set_linewidth(2.2)
            a.set_color(_HIGHLIGHT_EDGE)
        elif a.get_gid() == "frame":
            pad = 0.05
            ring = FancyBboxPatch((a.get_x() - pad, a.get_y() - pad), a.get_width() + 2 * pad,
                                  a.get_height() + 2 * pad, boxstyle="round,pad=0,rounding_size=0.06",
                                  facecolor=_HIGHLIGHT_FACE, edgecolor=_HIGHLIGHT_EDGE, lw=2.2, zorder=0)
            canvas.ax.add_patch(ring)
            canvas.artists[key].append(ring)
