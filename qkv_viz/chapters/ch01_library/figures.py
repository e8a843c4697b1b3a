"""Chapter 1 pictures: the library's keys and query, and the weights over its books.

``plot_library``, ``plot_weight_bars``, ``weights_vs_temperature`` take ``ax=None``,
return the artists and never call ``plt.show()``. Colours come from the book's
style (``qkv_viz.viz.style``): keys in KEY_COLOR, the query in QUERY_COLOR, every
key arrow has the same width and carries its book's short name and weight as a label
("Attention" over "0.49"), and weight bars are drawn on their fixed 0..1 scale. The interactive version is in ``widget``.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.transforms import Bbox, ScaledTranslation

from qkv_viz.chapters.ch01_library.library import KEY_AXES, soft_lookup
from qkv_viz.viz import style
from qkv_viz.viz.style import KEY_COLOR, QUERY_COLOR

KEY_LW = 1.6                # every key arrow's line width (points): the weight is written, not drawn
LABEL_OFFSET_PT = 7.0       # labels sit this far beyond the arrow tip, along the arrow
COLLINEAR_SHIFT_PT = 8.0    # a key along a longer key's line is drawn this far beside it (4 pt read as one thick line)


def _collinear_shifts(keys):
    """(n, 2) offsets in points: a key pointing the way of a longer key (within about 3 degrees) is drawn
    COLLINEAR_SHIFT_PT to its clockwise side, so that its shaft does not hide under the longer one's
    (``plot_library`` writes a note in the panel naming the moved arrow)."""
    keys = np.asarray(keys, dtype=float)
    shifts = np.zeros_like(keys)
    for j, i in enumerate(_collinear_partners(keys)):
        if i >= 0:
            shifts[j] = COLLINEAR_SHIFT_PT * np.array([keys[j, 1], -keys[j, 0]]) / np.hypot(*keys[j])
    return shifts


def _collinear_partners(keys) -> np.ndarray:
    """(n,) ints: for each key, the longer key whose line it lies along (within about 3 degrees), else -1."""
    keys = np.asarray(keys, dtype=float)
    lengths = np.hypot(keys[:, 0], keys[:, 1])
    partners = np.full(len(keys), -1)
    for j, (key, n) in enumerate(zip(keys, lengths)):
        if n == 0:
            continue
        longer = (lengths > n) & (keys @ key > 0.9986 * lengths * n)  # cos > 0.9986: under 3 degrees apart
        if longer.any():
            partners[j] = int(np.flatnonzero(longer)[0])
    return partners


def _renderer(fig):
    canvas = fig.canvas
    if hasattr(canvas, "get_renderer"):
        return canvas.get_renderer()
    return fig._get_renderer()  # a bare Figure (the widget's) has a base canvas


def _segment_points(ax, tip, lw_pt, head_pt):
    """Display-space points covering an arrow from the origin to ``tip``: the shaft,
    widened by its line width, and the head (a disc of radius ``head_pt`` at the tip)."""
    to_px = ax.figure.dpi / 72.0
    a, b = ax.transData.transform([(0.0, 0.0), tuple(tip)])
    d = b - a
    n = np.array([-d[1], d[0]]) / (np.hypot(*d) or 1.0)
    t = np.linspace(0, 1, 60)[:, None]
    shaft = [a + t * d + s * n * lw_pt * to_px / 2 for s in (-1.0, 0.0, 1.0)]
    ang = np.linspace(0, 2 * np.pi, 16, endpoint=False)
    head = b + head_pt * to_px * np.stack([np.cos(ang), np.sin(ang)], axis=1) * np.linspace(0.3, 1, 3)[:, None, None]
    return np.concatenate(shaft + list(head))


def _inside(box, points) -> np.ndarray:
    """Which display-space points (N, 2) fall inside the Bbox ``box``."""
    return ((points[:, 0] >= box.x0) & (points[:, 0] <= box.x1)
            & (points[:, 1] >= box.y0) & (points[:, 1] <= box.y1))


def _place_labels(ax, labels, arrows, relayout=True):
    """Write each label just beyond its arrow tip without touching any arrow or earlier label.

    labels: ``(text, tip, color, fontweight)``; arrows: ``(tip, line width pt, head size pt)``.
    Candidate spots go round the tip, starting straight outward along the arrow
    (the old picture wrote "query" across arrow 1). Returns the Annotations.
    """
    engine = ax.figure.get_layout_engine()
    if relayout and engine is not None:  # lay the figure out first, so the room measured is the room drawn
        engine.execute(ax.figure)
    ax.apply_aspect()
    renderer = _renderer(ax.figure)
    obstacles = np.concatenate([_segment_points(ax, *a) for a in arrows])
    to_px = ax.figure.dpi / 72.0
    frame = ax.get_window_extent(renderer)  # labels stay inside the panel
    placed, artists = [], []
    for text, tip, color, weight in labels:
        ann = ax.annotate(text, tip, xytext=(0, 0), textcoords="offset points", ha="center",
                          va="center", color=color, fontsize=style.FONT_PT, fontweight=weight)
        extent = ann.get_window_extent(renderer)  # measured once; candidates are moved copies
        half = np.array([extent.width, extent.height]) / 2 + 2.0  # 2 px of air
        tip_px = ax.transData.transform(tuple(tip))
        x, y = tip
        base = np.arctan2(y, x) if (x, y) != (0, 0) else np.pi / 2
        turns = [0] + [sign * t for t in range(15, 180, 15) for sign in (1, -1)] + [180]
        spots = [(turn, dist) for turn in turns for dist in (1.0, 1.4, 1.8, 2.4, 3.0)]
        # a free spot inside the panel, else a free spot anywhere, else straight outward
        tries = [(turn, dist, True) for turn, dist in spots] + [(turn, dist, False) for turn, dist in spots]
        for turn, dist, in_frame in tries + [(0, 1.0, False)]:
            u = np.array([np.cos(base + np.radians(turn)), np.sin(base + np.radians(turn))])
            centre = tip_px + u * (dist * LABEL_OFFSET_PT * to_px + np.abs(u) @ (half - 2.0))
            box = Bbox.from_extents(*(centre - half), *(centre + half))
            if (not np.any(_inside(box, obstacles)) and not any(box.overlaps(p) for p in placed)
                    and (not in_frame or (frame.contains(*box.min) and frame.contains(*box.max)))):
                break
        ann.xyann = tuple((centre - tip_px) / to_px)  # offset in points
        placed.append(box)
        artists.append(ann)
    return artists


def plot_library(library, query, ax=None, weights=None, relayout=True):
    """Keys as arrows from the origin (all of width ``KEY_LW``), the query as a dashed arrow.

    Each arrow is labelled with its book's short name (``library.short``); with ``weights``
    (n_books,) the label also gives the book's weight under the name, "Attention\n0.49".
    Only the first two key coordinates are drawn.
    ``relayout=False`` skips laying the figure out before placing the labels
    (for a caller that has already done it once for several panels).
    Returns the artists: per book an arrow and its label, then the query's arrow and label.
    """
    if ax is None:
        _, ax = plt.subplots(figsize=style.figsize(0.42, 0.9))
    if weights is not None:
        weights = np.asarray(weights, dtype=float)
        if weights.shape != (library.n_books,):
            raise ValueError(f"weights must have shape ({library.n_books},) (one per book), "
                             f"got {weights.shape}")
    lws = np.full(library.n_books, KEY_LW)
    q = np.asarray(query, dtype=float)[:2]
    lim = 1.6 * max(np.abs(library.keys[:, :2]).max(), np.abs(q).max())  # room for "name: w" labels
    ax.set(xlim=(-lim, lim), ylim=(-lim, lim), aspect="equal",
           xlabel=f"key[0]: {KEY_AXES[0]}", ylabel=f"key[1]: {KEY_AXES[1]}")
    ax.set_xticks([-2, 0, 2])
    ax.set_yticks([-2, 2])  # no tick at 0 or -1, where the leftmost key's label may sit (history, on the x axis)
    arrows, specs = [], []
    shifts = _collinear_shifts(library.keys[:, :2])
    for key, lw, shift in zip(library.keys[:, :2], lws, shifts):
        head = 8 + 1.5 * lw
        where = ax.transData + ScaledTranslation(*(shift / 72.0), ax.figure.dpi_scale_trans)
        arrows.append(ax.annotate("", key, (0, 0), xycoords=where, textcoords=where, arrowprops=dict(
            arrowstyle="-|>", color=KEY_COLOR, lw=lw, shrinkA=0, shrinkB=0, mutation_scale=head),
            zorder=3 if shift.any() else 2))
        specs.append((key, lw, head / 2))
    arrows.append(ax.annotate("", q, (0, 0), arrowprops=dict(
        arrowstyle="-|>", color=QUERY_COLOR, lw=2.0, linestyle=(0, (4, 2)),
        shrinkA=0, shrinkB=0, mutation_scale=14)))
    specs.append((q, 2.0, 7.0))
    labels = [("query", q, QUERY_COLOR, "bold")] + [
        (name if weights is None else f"{name}\n{weights[i]:.2f}", key, KEY_COLOR, "normal")
        for i, (name, key) in enumerate(zip(library.short, library.keys[:, :2]))]
    texts = _place_labels(ax, labels, specs, relayout=relayout)
    artists = []
    for arrow, text in zip(arrows[:-1], texts[1:]):
        artists += [arrow, text]
    artists += [arrows[-1], texts[0]]
    ax.axhline(0, color="0.85", lw=0.5, zorder=0)
    ax.axvline(0, color="0.85", lw=0.5, zorder=0)
    moved = [f"{library.short[j]} lies along {library.short[i]}: drawn offset"
             for j, i in enumerate(_collinear_partners(library.keys[:, :2])) if i >= 0]  # the figure says which arrow is not where its key is
    if moved:
        ax.text(0.5, 0.03, "\n".join(moved), transform=ax.transAxes, ha="center", va="bottom",
                color=KEY_COLOR, fontsize=style.ANNOTATION_PT, fontstyle="italic", gid="collinear-note")
    return artists


def plot_weight_bars(weights, titles, ax=None, title=None):
    """Horizontal bars of the weights on a fixed 0..1 axis, the value written at each bar.

    Returns the BarContainer.
    """
    if ax is None:
        _, ax = plt.subplots(figsize=style.figsize(0.4, 0.7))
    weights = np.asarray(weights, dtype=float)
    bars = ax.barh(range(len(weights)), weights, color=KEY_COLOR)
    ax.set(xlim=(0, 1), yticks=range(len(weights)), xlabel="weight")
    ax.set_yticklabels(titles, fontsize=style.FONT_PT)
    ax.invert_yaxis()  # first book on top
    for i, w in enumerate(weights):
        inside = w > 0.7  # long bars carry their number inside, in white
        ax.text(w - 0.02 if inside else w + 0.02, i, f"{w:.2f}", va="center",
                ha="right" if inside else "left", color="white" if inside else "black",
                fontsize=style.ANNOTATION_PT)
    if title is not None:
        ax.set_title(title, fontsize=style.TITLE_PT)
    return bars


def library_and_weights(library, query, temperature=1.0, axes=None):
    """Which books does the query read, and how much? Two panels: the keys and the
    query (each key labelled with its weight), and the weights as bars with the books' titles.

    axes: two Axes, or None for a new figure one column wide. Returns the artists
    of ``plot_library`` followed by the BarContainer.
    """
    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=style.figsize(1.0, 0.42), layout="constrained",
                               gridspec_kw=dict(width_ratios=[1.4, 1]))
    w = soft_lookup(query, library, temperature)[1]
    axes[0].set_title("keys and query (book and weight)", fontsize=style.TITLE_PT)
    artists = plot_library(library, query, ax=axes[0], weights=w)
    artists.append(plot_weight_bars(w, list(library.titles), ax=axes[1],
                                    title=f"weights at temperature τ = {temperature:g}"))
    engine = axes[0].figure.get_layout_engine()
    if engine is not None:  # constrained layout settles in two passes (the save is the second): else the
        engine.execute(axes[0].figure)  # left panel's y label ends past the figure's edge
    return artists


def weights_vs_temperature(temperatures, weights, library, ax=None, marks=(1.0, np.sqrt(2)), longer=None):
    """What does the temperature do? The page's table of weights, one line per book, against the
    temperature on a log axis; dotted verticals at ``marks`` (default: tau = 1 and the
    Transformer's sqrt(d_k) = sqrt(2), labelled so).

    temperatures: (n,) positive, increasing; weights: (n, n_books), row i = the weights at
    ``temperatures[i]``. ``longer``: optional ``(c, weights_longer)``, one factor c > 0 and the
    (n_books,) weights of the query times c at tau = 1; they are drawn as one open circle per book at
    tau = 1/c, where they sit on the lines, named in the legend. Returns the list of Line2D, one per
    book, in the library's order (then the marks, then one circle per book if ``longer`` is given).
    """
    taus = np.ravel(np.asarray(temperatures, dtype=float))                    # (n,)
    weights = np.asarray(weights, dtype=float)
    if taus.size < 2 or not np.all(taus > 0) or not np.all(np.diff(taus) > 0):
        raise ValueError(f"temperatures must be positive and increasing, at least two of them, got {taus.size} "
                         f"values from {taus.min() if taus.size else None} to {taus.max() if taus.size else None}")
    if weights.shape != (taus.size, library.n_books):
        raise ValueError(f"weights must have shape (len(temperatures), n_books) = ({taus.size}, {library.n_books}), "
                         f"got {weights.shape}")
    lo, hi = taus[0], taus[-1]
    if ax is None:
        _, ax = plt.subplots(figsize=style.figsize(1.0, 0.4), layout="constrained")
    colors = plt.get_cmap("tab10")(np.arange(library.n_books))
    lines = []
    for j, (title, color) in enumerate(zip(list(library.titles), colors)):
        lines += ax.plot(taus, weights[:, j], color=color, lw=2.0, label=title)
    for t in marks:
        lines.append(ax.axvline(t, color="0.5", lw=1.0, ls=":"))
    ax.axhline(1 / library.n_books, color="0.75", lw=0.8, zorder=0)
    if longer is not None:
        c, w_long = float(longer[0]), np.ravel(np.asarray(longer[1], dtype=float))
        if not c > 0 or w_long.shape != (library.n_books,):
            raise ValueError(f"longer must be (c > 0, weights (n_books,) = ({library.n_books},)), "
                             f"got c = {c} and weights of shape {w_long.shape}")
        for j, color in enumerate(colors):
            lines += ax.plot([1 / c], [w_long[j]], ls="none", marker="o", ms=9, mfc="white",
                             mec=color, mew=2.0, zorder=3)
        ax.plot([], [], ls="none", marker="o", ms=9, mfc="white", mec="0.3", mew=2.0,
                label=f"{c:g} × query at τ = 1,\ndrawn at τ = 1/{c:g}")  # legend entry only
    ax.set_xscale("log")
    ax.set(xlim=(lo, hi), ylim=(0, 1.02), xlabel="temperature τ (log scale)", ylabel="weight")
    ax.text(hi, 1 / library.n_books + 0.02, f"1/{library.n_books}", ha="right", va="bottom",
            color="0.45", fontsize=style.FONT_PT)
    for t, name, side in zip(marks, ("τ = 1 ", r" $\sqrt{d_k} = \sqrt{2}$"), ("right", "left")):  # one label each side
        ax.text(t, 0.9, name, ha=side, va="top", color="0.35", fontsize=style.FONT_PT)
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False, fontsize=style.FONT_PT)
    ax.set_title(f"cold: one book takes everything; hot: every book tends to 1/{library.n_books}",
                 fontsize=style.TITLE_PT)
    return lines


VISIBLE_MIN = 0.01  # a bar segment thinner than this cannot be seen: no legend entry for its book


def output_as_sum(contributions, library, value_axes, ax=None, label_min=0.035):
    """The output as the weighted sum of the values: one stacked bar per value entry (rows of
    the picture: ``value_axes``), one segment per book, ``contributions[j] = w_j * v_j``, in the
    book's colour of ``weights_vs_temperature``. Segments of at least ``label_min`` (wide enough for
    the text) carry their number; the thinner ones are listed, with their numbers, in a note under
    the legend, and a book none of whose segments is visible (all under ``VISIBLE_MIN``) is named
    there in full, not in the legend. Each bar's total (the output's entry) is written at its end; the axis runs from
    0 to just past the largest total.

    contributions: (n_books, d_v). Returns the list of BarContainers, one per book.
    """
    contributions = np.asarray(contributions, dtype=float)
    if contributions.shape != (library.n_books, len(value_axes)):
        raise ValueError(f"contributions must have shape (n_books, d_v) = ({library.n_books}, {len(value_axes)}), "
                         f"got {contributions.shape}")
    if ax is None:
        _, ax = plt.subplots(figsize=style.figsize(1.0, 0.3), layout="constrained")
    colors = plt.get_cmap("tab10")(np.arange(library.n_books))
    rows = np.arange(len(value_axes))
    left, bars, thin, handles = np.zeros(len(value_axes)), [], [], []
    for j, (title, color) in enumerate(zip(list(library.titles), colors)):
        piece = contributions[j]                                             # (d_v,): w_j * v_j
        bars.append(ax.barh(rows, piece, left=left, color=color, label=title, edgecolor="white", lw=0.8))
        visible = piece.max() >= VISIBLE_MIN
        if visible:
            handles.append(bars[-1])
        small = []
        for r in rows:
            if piece[r] >= label_min:
                ax.text(left[r] + piece[r] / 2, r, f"{piece[r]:.2f}", ha="center", va="center",
                        color="white", fontsize=style.ANNOTATION_PT)
            elif piece[r] > 0:
                small.append(f"{value_axes[r]} {piece[r]:.3f}" if piece[r] >= 5e-4 else f"{value_axes[r]} < 0.001")
        if small:
            thin.append(f"{title}: " + ", ".join(small) if visible else f"{title}:\n   " + ", ".join(small))
        left = left + piece
    for r in rows:
        ax.text(left[r] + 0.01, r, f"= {left[r]:.3f}", ha="left", va="center", fontsize=style.FONT_PT)
    ax.set(xlim=(0, min(1.0, np.ceil((left.max() + 0.08) * 10) / 10)), yticks=rows,
           xlabel="output entry = sum over books of weight × value")
    ax.set_yticklabels(value_axes, fontsize=style.FONT_PT)
    ax.invert_yaxis()
    legend = ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False,
                       fontsize=style.FONT_PT)
    if thin:
        ax.annotate("too thin to label:\n" + "\n".join(thin), (1.02, 0.0), xycoords="axes fraction",
                    ha="left", va="bottom", fontsize=style.FONT_PT, color="#444444")
    ax.set_title("the output: each book's value times its weight, stacked", fontsize=style.TITLE_PT)
    return bars
