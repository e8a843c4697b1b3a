"""Chapter 10's pictures. Each takes ``ax=None`` (or ``axes``), returns its artists, never shows.

Queries are drawn in the book's QUERY_COLOR, keys in KEY_COLOR.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from qkv_viz.core.positions import apply_rope, pair_index, rope_dots_by_offset, rope_frequencies
from qkv_viz.core.validate import as_array
from qkv_viz.viz import style


def _axes(axes, n: int, aspect: float):
    if axes is None:
        _, axes = plt.subplots(1, n, figsize=style.figsize(1.0, aspect), layout="constrained")
    return np.atleast_1d(axes)


def _cosines(P):
    """cos(p_m, p_n) for all m, n: (T, T)."""
    U = P / np.linalg.norm(P, axis=1, keepdims=True)   # (T, d): unit rows
    return U @ U.T                                     # (T, d) @ (d, T) -> (T, T)


def plot_sinusoids(P, learned=None, axes=None, learned_name="learned", pairs=None, waves=True,
                   own_range=False):
    """Left (if ``waves``): a few coordinates of the position vectors P (T, d_model), the sine
    of each pair in ``pairs`` (default: four from fast to slow), as dots at whole positions on
    the curve sin(m theta_i) (base 10000), stacked.
    Then cos(p_m, p_n) for all m, n; with ``learned`` (T', d) a trained model's position
    table, its cosines beside them. All maps share one colour scale, the cosine's full range
    -1 to 1 (white at 0), and one colour bar. With ``own_range`` (one map only, no ``learned``) the map
    spans its own values instead, from its minimum rounded down to 0.1 up to 1, on a sequential scale,
    the range named on the bar. Returns the left panel's dots (one Line2D per pair, none without
    ``waves``), then the cosine images."""
    P = as_array("P", P, ndim=2)
    T, d_model = P.shape
    if pairs is None:
        pairs = sorted({0, d_model // 48, d_model // 12, d_model // 4})
    pairs = [int(i) for i in pairs]
    if any(not 0 <= i < d_model // 2 for i in pairs):
        raise ValueError(f"pairs must be pair numbers in 0..{d_model // 2 - 1}, got {pairs}")
    if own_range and learned is not None:
        raise ValueError("own_range is for one map alone: maps side by side share the -1 to 1 scale")
    grams = [_cosines(P)] + ([_cosines(as_array("learned", learned, ndim=2))] if learned is not None else [])
    n_panels = int(waves) + len(grams)
    axs = _axes(axes, n_panels, 0.34 if n_panels > 2 else 0.42)
    lines = []
    if waves:
        theta = 10000.0 ** (-2 * np.asarray(pairs) / d_model)
        colours = [style.SERIES[j % len(style.SERIES)] for j in (4, 0, 2, 6)]   # no pale yellow
        for row, (i, th) in enumerate(zip(pairs, theta)):
            y0 = 2.6 * (len(pairs) - 1 - row)          # fast pairs on top, each curve in its own band
            fine = np.linspace(0, T - 1, 20 * T)       # the curve sin(m theta_i) between whole positions
            axs[0].plot(fine, np.sin(fine * th) + y0, "-", lw=0.9, color=colours[row % 4], alpha=0.6)
            lines.append(axs[0].plot(np.arange(T), P[:, 2 * i] + y0, "o", ms=2.6,
                                     color=colours[row % 4])[0])
            axs[0].text(T * 1.02, y0, f"pair {i}\nθ = {th:.2g}", va="center", ha="left",
                        fontsize=style.MIN_FONT_PT + 1, color=colours[row % 4])
        axs[0].set(xlabel="position m", ylabel="sin $m\\theta_i$ (each curve ±1, stacked)", yticks=[],
                   xlim=(0, T - 1), title=f"$p_m$: the sine of {len(pairs)} pairs\n(dots: whole positions m)")
        axs[0].spines["left"].set_visible(False)
    titles = ["sinusoids: cos($p_m$, $p_n$)", f"{learned_name}: cos($p_m$, $p_n$)"]
    if own_range:                                      # contrast where the values are, range on the bar
        lo = float(np.floor(grams[0].min() * 10 + 1e-9) / 10)
        cmap, ticks, label = style.WEIGHTS_CMAP, None, f"cosine (this map's range, {lo:.1f} to 1)"
    else:
        lo, cmap, ticks, label = -1.0, "RdBu_r", [-1, -0.5, 0, 0.5, 1], "cosine (one scale, -1 to 1)"
    ims = []
    for ax, G, title in zip(axs[int(waves):], grams, titles):
        ims.append(ax.imshow(G, cmap=cmap, vmin=lo, vmax=1, aspect="auto", interpolation="nearest"))
        ax.set(xlabel="position n", ylabel="position m", title=title)
    maps = list(axs[int(waves):])
    axs[0].figure.colorbar(ims[-1], ax=maps, fraction=0.06 / len(maps), pad=0.03, ticks=ticks, label=label)
    return lines + ims


def by_offset(grid) -> np.ndarray:
    """The (T, T) grid q_m . k_n re-indexed by (m, n - m): (T, 2T - 1), column j is offset j - (T - 1);
    NaN where n = m + offset falls outside 0..T-1."""
    grid = as_array("grid", grid, ndim=2)
    T = grid.shape[0]
    if grid.shape != (T, T):
        raise ValueError(f"grid must be square (T, T), got {grid.shape}")
    out = np.full((T, 2 * T - 1), np.nan)
    for m in range(T):
        out[m, T - 1 - m:2 * T - 1 - m] = grid[m]     # n = 0..T-1 sits at offset -m..T-1-m
    return out


def plot_dot_grid(grid, offset: int = 2, axes=None, label="$q_m \\cdot k_n$"):
    """Left: the (T, T) grid of q_m . k_n, rows m, columns n, the cells with n - m = ``offset``
    outlined. Right: the same numbers with columns n - m (``by_offset``): a relative score makes
    every column one colour. One sequential map spanning the data, one labelled bar. Returns the
    two images."""
    grid = as_array("grid", grid, ndim=2)
    T = grid.shape[0]
    if not -T < offset < T:
        raise ValueError(f"offset must be in -{T - 1}..{T - 1}, got {offset}")
    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=style.figsize(0.95, 0.42), layout="constrained",
                               gridspec_kw={"width_ratios": [1, 1.9]})
    ax1, ax2 = np.atleast_1d(axes)
    kw = dict(cmap=style.WEIGHTS_CMAP, vmin=np.nanmin(grid), vmax=np.nanmax(grid), interpolation="nearest")
    ims = [ax1.imshow(grid, **kw), ax2.imshow(by_offset(grid), aspect="auto", **kw)]
    cells = [(m, m + offset) for m in range(T) if 0 <= m + offset < T]
    col = offset + T - 1
    for ec, lw in (("white", 3.0), ("black", 1.2)):    # black inside white: seen on any colour
        for m, n in cells:                             # the diagonal n - m = offset, cell by cell
            ax1.add_patch(plt.Rectangle((n - 0.5, m - 0.5), 1, 1, fill=False, ec=ec, lw=lw))
        ax2.add_patch(plt.Rectangle((col - 0.5, cells[0][0] - 0.5), 1, len(cells), fill=False, ec=ec, lw=lw))
    ticks = np.arange(0, T, 5)
    ax1.set(xlabel="key position n", ylabel="query position m", xticks=ticks, yticks=ticks,
            title="by position: (m, n)")
    offs = np.arange(-((T - 1) // 5) * 5, T, 5)
    ax2.set(xlabel="offset n − m", ylabel="query position m", xticks=offs + T - 1, xticklabels=offs, yticks=ticks,
            title="the same numbers by offset: (m, n − m)")
    ax2.figure.colorbar(ims[1], ax=[ax1, ax2], fraction=0.04, pad=0.02, label=label)
    return ims


def plot_head(weights, axes=None, titles=("without positions", "with RoPE"), tokens=None):
    """Weights (T, T) of one head, side by side (e.g. without and with RoPE), on 0..1.
    ``tokens``: one list of T token strings per panel (or None there: positions 0..T-1)."""
    ws = [as_array("weights", w, ndim=2) for w in weights]
    tokens = list(tokens) if tokens is not None else [None] * len(ws)
    if len(tokens) != len(ws):
        raise ValueError(f"tokens must have one entry per panel: {len(ws)} panels, {len(tokens)} entries")
    axs = _axes(axes, len(ws), 0.42 if len(ws) < 3 else 0.34)
    ims = []
    for ax, w, title, toks in zip(axs, ws, titles, tokens):
        ims.append(ax.imshow(w, cmap=style.WEIGHTS_CMAP, vmin=0, vmax=1, interpolation="nearest"))
        if toks is not None:
            if len(toks) != w.shape[0] or w.shape[0] != w.shape[1]:
                raise ValueError(f"tokens must name the {w.shape[0]} rows of a square map, got {len(toks)}")
            ax.set(xticks=range(len(toks)), yticks=range(len(toks)), title=title)
            ax.set_xticklabels(toks, rotation=90)
            ax.set_yticklabels(toks)
            ax.set(xlabel="key", ylabel="query")
            continue
        ax.set(xlabel="key position n", ylabel="query position m", title=title,
               xticks=range(0, w.shape[1], 1 if w.shape[1] <= 10 else 2),
               yticks=range(0, w.shape[0], 1 if w.shape[0] <= 10 else 2))
    axs[-1].figure.colorbar(ims[-1], ax=list(axs), fraction=0.05, pad=0.03, label="weights")
    return ims


def plot_turning(q, k, m: float, n: float, base: float = 10000.0, pair: int = 0, ax=None,
                 pairing: str = "adjacent"):
    """Pair ``pair`` of q and k in its plane, turned to m (q) and n (k), and faint and dashed
    at position 0 (the live figure's still).

    The angle between the solid arrows is the angle at position 0 plus (n - m) * theta_pair,
    so it is the same for every m with the same n - m. Title: the pair's part of q_m . k_n
    (the arrows' labels give m and n).
    """
    q, k = as_array("q", q, ndim=1), as_array("k", k, ndim=1)
    d_k = q.shape[0]
    first, second = pair_index(d_k, pairing)
    a, b = first[pair], second[pair]
    qm = apply_rope(q[None], [m], base, pairing)[0][[a, b]]
    kn = apply_rope(k[None], [n], base, pairing)[0][[a, b]]
    if ax is None:
        _, ax = plt.subplots(figsize=style.figsize(0.42, 1.0))
    r = max(np.hypot(*q[[a, b]]), np.hypot(*k[[a, b]]))
    arts = [ax.add_patch(plt.Circle((0, 0), r, fill=False, ls=":", color="#999"))]
    # at position 0 the two arrows may coincide (key = query): dashes offset so both colours show
    for vec, colour, dash in ((q[[a, b]], style.QUERY_COLOR, (0, (3, 3))), (k[[a, b]], style.KEY_COLOR, (3, (3, 3)))):
        arts.append(ax.annotate("", xy=tuple(vec), xytext=(0, 0), arrowprops=dict(
            arrowstyle="-|>", color=colour, lw=1.4, alpha=0.8, ls=dash)))
    aq, ak = np.arctan2(qm[1], qm[0]), np.arctan2(kn[1], kn[0])
    between = (ak - aq + np.pi) % (2 * np.pi) - np.pi          # from q to k, -pi..pi
    # labels beyond the arrowheads, along the arrows, pushed apart when the arrows are close
    min_gap = 0.9
    spread = max(0.0, (min_gap - abs(between)) / 2) * (1.0 if between >= 0 else -1.0)
    for vec, colour, name, pos, angle in ((qm, style.QUERY_COLOR, "q", m, aq - spread),
                                          (kn, style.KEY_COLOR, "k", n, ak + spread)):
        arts.append(ax.annotate("", xy=tuple(vec), xytext=(0, 0), arrowprops=dict(
            arrowstyle="-|>", color=colour, lw=2.2)))
        dist = np.hypot(*vec) + 0.2 * r
        arts.append(ax.text(dist * np.cos(angle), dist * np.sin(angle), f"{name} at {pos:g}", color=colour,
                            ha="center", va="center", fontsize=style.FONT_PT, fontweight="bold"))
    arc_r = 0.5 * min(np.hypot(*qm), np.hypot(*kn))            # inside the shorter arrow
    t = aq + np.linspace(0, between, 40)
    arts.append(ax.plot(arc_r * np.cos(t), arc_r * np.sin(t), color="#444", lw=1)[0])
    theta = rope_frequencies(d_k, base)[pair]
    arts.append(ax.set_xlabel(f"dashed: at position 0; arc: {np.degrees(between):.0f}° from q to k",
                              fontsize=style.FONT_PT))
    ax.set(xlim=(-1.45 * r, 1.45 * r), ylim=(-1.45 * r, 1.45 * r), aspect="equal", xticks=[], yticks=[])
    ax.set_ylabel(f"pair {pair}: coordinates {a}, {b}")
    arts.append(ax.set_title(f"pair {pair}, θ = {theta:.3g}: its part of $q_m \\cdot k_n$ = {qm @ kn:.3f}",
                             fontsize=style.FONT_PT))
    return arts


def plot_angles(T: int, d_k: int, base: float = 10000.0, ax=None):
    """cos(m * theta_i), the cosine of the angle by which RoPE turns pair i at position m: (T, d_k/2),
    on a diverging colour map (+1 red: not turned or a whole turn, -1 blue: half a turn); fast pairs
    (left) cycle every few positions, slow ones (right) stay near +1."""
    if ax is None:
        _, ax = plt.subplots(figsize=style.figsize(0.5, 0.8), layout="constrained")
    cos = np.cos(np.arange(T)[:, None] * rope_frequencies(d_k, base)[None, :])  # (T, 1) * (1, d_k/2) -> (T, d_k/2)
    im = ax.imshow(cos, cmap="RdBu_r", vmin=-1, vmax=1, aspect="auto", interpolation="nearest")
    bar = ax.figure.colorbar(im, ax=ax, ticks=[-1, 0, 1], location="bottom", shrink=0.7, aspect=30)
    bar.set_label("$\\cos(m\\,\\theta_i)$")   # under the map: clear of a neighbour's y-label
    ax.set(xlabel="pair i (fast → slow)", ylabel="position m", title=f"RoPE's turns, d_k = {d_k}")
    return [im, bar]


def plot_frequencies_and_decay(d_k: int, base: float, distances, expected, axes=None, T: int = 64, bound=None,
                               sampled=None):
    """Left: cos(m * theta_i) of every pair at positions 0..T-1 (``plot_angles``). Right: the
    expected q_m . k_n / d_k of a key equal to its query against n - m (``toy.expected_decay``),
    and, if given, the RoPE paper's distance factor ``bound`` (same length as ``distances``, 1 at 0)
    and ``sampled``: a dict label -> (distances, means), sample means drawn as dots."""
    if axes is None:
        fig, axes = plt.subplots(1, 2, figsize=style.figsize(1.0, 0.48), layout="constrained",
                                 gridspec_kw={"width_ratios": [1, 1.15]})
        fig.get_layout_engine().set(wspace=0.08)      # room between the colour bar and the right panel's label
    ax1, ax2 = np.atleast_1d(axes)
    im, _ = plot_angles(T, d_k, base, ax=ax1)
    arts = [im, ax2.plot(distances, expected, color=style.QUERY_COLOR, label="expected match, key = query")[0]]
    ax2.axhline(0, color="#444", lw=0.8)
    for (label, (d, means)), colour in zip((sampled or {}).items(), ("#222", style.KEY_COLOR, "#777")):
        arts.append(ax2.plot(d, means, "o", ms=3, color=colour, alpha=0.8, label=label)[0])
    title = "key = query: $(2/d_k)\\,\\sum_i \\cos((n-m)\\,\\theta_i)$"
    if sampled:
        ax2.legend(loc="upper right", fontsize=style.FONT_PT)
        title = "formula (line) and sample means (dots)"
    if bound is not None:
        bound = as_array("bound", bound, ndim=1)
        if bound.shape[0] != len(distances):
            raise ValueError(f"bound must have one value per distance ({len(distances)}), got {bound.shape[0]}")
        arts.append(ax2.plot(distances, bound, color="#777", label="the paper's bound, its distance factor")[0])
        ax2.legend(loc="upper right", fontsize=style.FONT_PT)
        title, ylabel = "match and bound against distance", "relative to distance 0"
    else:
        ylabel = "expected $q_m \\cdot k_n$ / d_k"
    ax2.set(xlabel="distance n − m", ylabel=ylabel, title=title)
    return arts


def plot_offset_curve(q, k, base: float, t_max: int, m: int, n: int, ax=None):
    """q_m . k_n against n - m for offsets -(t_max-1)..(t_max-1), the current one marked."""
    d = np.arange(-(t_max - 1), t_max)
    dots = rope_dots_by_offset(q, k, d, base)
    if ax is None:
        _, ax = plt.subplots(figsize=style.figsize(0.55, 0.5))
    arts = [ax.plot(d, dots, color="#777", lw=1)[0],
            ax.plot([n - m], [rope_dots_by_offset(q, k, [n - m], base)[0]], "o", color=style.QUERY_COLOR, ms=8)[0]]
    ax.axhline(0, color="#444", lw=0.8)
    ax.set(xlabel="offset n − m", ylabel="$q_m \\cdot k_n$", title="the dot product depends on n − m only")
    return arts


def plot_pair_parts(parts, drawn: int, ax=None):
    """Bars: each pair's part of q_m . k_n (``parts``, shape (d_k/2,)); the drawn pair in orange."""
    parts = as_array("parts", parts, ndim=1)
    if not 0 <= drawn < parts.shape[0]:
        raise ValueError(f"drawn must be a pair 0..{parts.shape[0] - 1}, got {drawn}")
    if ax is None:
        _, ax = plt.subplots(figsize=style.figsize(0.5, 0.25))
    colours = [style.QUERY_COLOR if i == drawn else "#999" for i in range(parts.shape[0])]
    bars = ax.bar(np.arange(parts.shape[0]), parts, color=colours)
    ax.axhline(0, color="#bbb", lw=0.8)
    ax.set(xlabel="pair i (orange: drawn)", xticks=np.arange(parts.shape[0]),
           title=f"each pair's part of $q_m \\cdot k_n$ (they add up to {parts.sum():.3f})")
    return bars


def plot_sentence_weights(weights, sentences, conditions, axes=None):
    """A grid of small weight maps: one row per sentence (a string of T words, which label the
    rows and columns), one column per condition (e.g. "no positions", "X + P", "RoPE").
    ``weights[r][c]`` is (T, T), on 0..1, each cell printed. One labelled bar. Returns the images."""
    rows = [[as_array("weights", w, ndim=2) for w in row] for row in weights]
    sentences, conditions = list(sentences), list(conditions)
    if len(rows) != len(sentences) or any(len(row) != len(conditions) for row in rows):
        raise ValueError(f"weights must be {len(sentences)} rows of {len(conditions)} maps, one per sentence and condition")
    if axes is None:
        _, axes = plt.subplots(len(rows), len(conditions), layout="constrained",
                               figsize=style.figsize(0.8, 0.27 * len(rows) * 3 / max(len(conditions), 1)),
                               squeeze=False)
    axes = np.asarray(axes).reshape(len(rows), len(conditions))
    ims = []
    for r, (row, words) in enumerate(zip(rows, sentences)):
        toks = words.split()
        for c, (w, cond) in enumerate(zip(row, conditions)):
            if w.shape != (len(toks), len(toks)):
                raise ValueError(f"each map of {words!r} must be {(len(toks),) * 2}, got {w.shape}")
            ax = axes[r, c]
            ims.append(ax.imshow(w, cmap=style.WEIGHTS_CMAP, vmin=0, vmax=1, interpolation="nearest"))
            for (m, n), v in np.ndenumerate(w):
                ax.text(n, m, f"{v:.2f}", ha="center", va="center", fontsize=9,
                        color="black" if v > 0.55 else "white")
            ax.set_xticks(range(len(toks)), toks)
            ax.set_yticks(range(len(toks)), toks if c == 0 else [])
            if r == 0:
                ax.set_title(cond)
            if r == len(rows) - 1:
                ax.set_xlabel("key")
            if c == 0:
                ax.set_ylabel(f"“{words}”\nquery")
    axes[0, 0].figure.colorbar(ims[-1], ax=list(axes.ravel()), fraction=0.04, pad=0.02, label="weights")
    return ims


def plot_rope_toy(q, keys, m: int, base: float = 10000.0, pair: int = 0, query_name: str = "q", ax=None):
    """One pair of a query and of some keys in its plane: dashed as projected (position 0),
    solid as RoPE turns them, the query to position ``m``, each key to its own.

    ``keys`` maps a name to (k, n): the key vector (d_k,) and its position. The legend gives each
    key's part of q_m . k_n in this pair."""
    q = as_array("q", q, ndim=1)
    a, b = pair_index(q.shape[0], "adjacent")[0][pair], pair_index(q.shape[0], "adjacent")[1][pair]
    if ax is None:
        _, ax = plt.subplots(figsize=style.figsize(0.8, 0.5), layout="constrained")
    qm = apply_rope(q[None], [m], base)[0][[a, b]]
    arrows = [(q[[a, b]], qm, style.QUERY_COLOR, f"{query_name} (query) at {m}")]
    for name, (k, n) in keys.items():
        k = as_array(name, k, ndim=1)
        kn = apply_rope(k[None], [n], base)[0][[a, b]]
        arrows.append((k[[a, b]], kn, style.KEY_COLOR, f"{name} (key) at {n}: {qm @ kn:+.2f}"))
    r = max(np.hypot(*v) for _, v, _, _ in arrows)
    arts = [ax.add_patch(plt.Circle((0, 0), r, fill=False, ls=":", color="#999"))]
    for before, after, colour, label in arrows:
        arts.append(ax.annotate("", xy=tuple(before), xytext=(0, 0), arrowprops=dict(
            arrowstyle="-|>", color=colour, lw=1.2, alpha=0.5, ls=(0, (3, 3)))))
        arts.append(ax.annotate("", xy=tuple(after), xytext=(0, 0), arrowprops=dict(
            arrowstyle="-|>", color=colour, lw=2.2)))
        name = label.split(" (")[0]
        arts.append(ax.text(*(1.2 * after), name, color=colour, ha="center", va="center",
                            fontsize=style.FONT_PT, fontweight="bold"))
    ax.set(xlim=(-1.5 * r, 1.5 * r), ylim=(-1.5 * r, 1.5 * r), aspect="equal",
           xlabel=f"coordinate {a}", ylabel=f"coordinate {b}")
    ax.set_title(f"pair {pair}: dashed unturned, solid turned by RoPE", fontsize=style.FONT_PT)
    parts = "\n".join(label for _, _, _, label in arrows)
    arts.append(ax.text(1.04, 0.5, f"pair {pair}'s part of $q_m \\cdot k_n$\n\n{parts}",
                        transform=ax.transAxes, va="center", ha="left", fontsize=style.FONT_PT))
    return arts
