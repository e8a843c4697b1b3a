"""Chapter 0's pictures: every token's scores and weights, and "bank" moved by the weighted values.

``weights_grids(panels, axes=None)`` draws the T x T weights of each sentence side by side, one colour bar.
``scores_weights_grids(panels)`` draws each sentence's scores (top row, sequential from 0 when none is
negative) above its weights (bottom row), one colour bar per row, shared by the row's panels.
``bank_moves(moves, ax=None)`` draws one token's vector, in the plane of two features, moved by
its weights times the values, head to tail, once per sentence.
``query_among_keys(query, keys, ax=None)`` draws one query among the keys in the keys' plane, with
lines of equal dot product. ``data_flow(...)`` draws the formula as boxes with shapes. Never calls
``plt.show()``.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from qkv_viz.viz import style
from qkv_viz.viz.plots import attention_heatmap, scores_heatmap

MOVE_COLORS = ("#0072B2", "#E69F00")  # one per sentence: blue (the river one), orange (the money one)
PIECE_MIN = 0.2                       # pieces shorter than this are drawn but not labelled
SCORES_SEQ_CMAP = "Reds"              # scores that are all >= 0: sequential, white at 0


def weights_grids(panels, axes=None):
    """The weights of each sentence as a T x T grid (row = the token that reads, column = the token
    read), each cell written with its weight, on one shared 0..1 colour bar.

    panels: a list of ``(title, tokens, weights)``, ``weights`` (T, T) for T = len(tokens). ``axes``:
    one axes per panel, or None for a new figure with panels as wide as their T. Returns the images.
    """
    if axes is None:
        sizes = [len(tokens) for _, tokens, _ in panels]
        fig, axes = plt.subplots(1, len(panels), figsize=style.figsize(1.0, 0.42), layout="constrained",
                                 gridspec_kw=dict(width_ratios=sizes))
    axes = list(np.ravel(axes))
    if len(axes) != len(panels):
        raise ValueError(f"got {len(axes)} axes for {len(panels)} panels")
    images = []
    for ax, (title, tokens, weights) in zip(axes, panels):
        weights = np.asarray(weights, dtype=float)
        if weights.shape != (len(tokens), len(tokens)):
            raise ValueError(f"weights must be (T, T) for T = {len(tokens)} tokens, got {weights.shape}")
        images.append(attention_heatmap(weights, ax=ax, tokens_q=tokens, tokens_k=tokens, annotate=True,
                                        colorbar=False, title=title))
        ax.set_aspect("equal")
    bar = axes[0].figure.colorbar(images[0], ax=axes, ticks=np.linspace(0, 1, 5), fraction=0.04, pad=0.02)
    bar.set_label(style.WEIGHTS_LABEL, fontsize=style.FONT_PT)
    bar.ax.tick_params(labelsize=style.FONT_PT)
    bar.outline.set_visible(False)
    for ax in axes[1:]:
        ax.set_ylabel("")
    return images


def scores_weights_grids(panels):
    """Each sentence's scores Q K^T / sqrt(d_k) above its weights, one column per sentence.

    panels: a list of ``(title, tokens, scores, weights)``, both (T, T) for T = len(tokens). Each
    row has one colour bar, its label saying the row's sentences share it. The scores share one
    range: sequential (``SCORES_SEQ_CMAP``, 0 lightest) from 0 to the largest score when no score
    is negative, else diverging and symmetric about 0 (white). The weights are ``weights_grids``'. Returns ``(score_images, weight_images)``.
    """
    sizes = [len(tokens) for _, tokens, _, _ in panels]
    fig, axes = plt.subplots(2, len(panels), figsize=style.figsize(1.0, 0.8), layout="constrained",
                             gridspec_kw=dict(width_ratios=sizes), squeeze=False)
    limit = max(float(np.abs(np.asarray(s, dtype=float)).max()) for _, _, s, _ in panels) or 1.0
    signed = any(float(np.min(s)) < 0 for _, _, s, _ in panels)
    shared = {1: "", 2: ", both sentences"}.get(len(panels), ", all sentences")
    score_images = []
    for ax, (title, tokens, scores, _) in zip(axes[0], panels):
        scores = np.asarray(scores, dtype=float)
        if scores.shape != (len(tokens), len(tokens)):
            raise ValueError(f"scores must be (T, T) for T = {len(tokens)} tokens, got {scores.shape}")
        kw = dict(ax=ax, tokens_q=tokens, tokens_k=tokens, annotate=True, colorbar=False,
                  title=f"{title}: scores", fmt=".2f")
        if signed:
            score_images.append(scores_heatmap(scores, limit=limit, **kw))
        else:  # all >= 0: the lowest score is the lightest colour, not a neutral middle
            score_images.append(attention_heatmap(scores, vmin=0.0, vmax=limit, cmap=SCORES_SEQ_CMAP, **kw))
        ax.set_aspect("equal")
    bar = fig.colorbar(score_images[0], ax=list(axes[0]), fraction=0.04, pad=0.02)
    bar.set_label(f"scores{shared}", fontsize=style.FONT_PT)
    bar.ax.tick_params(labelsize=style.FONT_PT)
    bar.outline.set_visible(False)
    for ax in axes[0][1:]:
        ax.set_ylabel("")
    weight_images = weights_grids([(f"{title}: weights", tokens, weights) for title, tokens, _, weights in panels],
                                  axes=axes[1])
    weight_images[0].colorbar.set_label(f"{style.WEIGHTS_LABEL}{shared}", fontsize=style.FONT_PT)
    return score_images, weight_images


def bank_moves(moves, ax=None):
    """One token's vector moved by the weighted values, in the plane of the features
    *water* (x) and *money* (y).

    moves: a list of ``(label, start, weights, V, tokens)``, one per sentence: ``start`` (2,) the
    token's water and money before attention, ``weights`` (T,) its row of weights, ``V`` (T, 2)
    the sentence's values, ``tokens`` (T names). From ``start`` the pieces ``weights[j] * V[j]``
    are drawn head to tail (pieces of length >= ``PIECE_MIN`` labelled "0.42 × river"); the last
    one ends at ``start + weights @ V``, the token after attention. Returns a list with, per
    sentence, the list of piece arrows and the end marker.
    """
    if ax is None:
        _, ax = plt.subplots(figsize=style.figsize(0.62, 0.88), layout="constrained")
    drawn = []
    for (label, start, weights, V, tokens), color in zip(moves, MOVE_COLORS):
        start, weights, V = (np.asarray(a, dtype=float) for a in (start, weights, V))
        if start.shape != (2,) or V.shape != (len(tokens), 2) or weights.shape != (len(tokens),):
            raise ValueError(f"need start (2,), weights (T,), V (T, 2) for T = {len(tokens)} tokens, got "
                             f"{start.shape}, {weights.shape}, {V.shape}")
        tip, arrows = start.copy(), []
        for w, v, t in zip(weights, V, tokens):
            piece = w * v                                       # (2,): this token's share of the output
            if not piece.any():
                continue
            arrows.append(ax.annotate("", tip + piece, tip, arrowprops=dict(
                arrowstyle="-|>", color=color, lw=2.2, shrinkA=0, shrinkB=0, mutation_scale=13)))
            if np.hypot(*piece) >= PIECE_MIN:
                # Beside its own arrow, tied to the arrow's midpoint by a thin line: to the right of a
                # vertical piece, under a horizontal one (starting under the piece itself, not under
                # the short unlabelled piece before it).
                mid = tip + piece / 2
                vertical = abs(piece[1]) > abs(piece[0])
                ax.annotate(f"{w:.2f} × {t}", mid, xytext=(14, 0) if vertical else (0, -22),
                            textcoords="offset points", ha="left" if vertical else "center",
                            va="center" if vertical else "top", color=color, fontsize=style.FONT_PT,
                            arrowprops=dict(arrowstyle="-", color=color, lw=0.9, shrinkA=1, shrinkB=2))
            tip = tip + piece
        end = ax.plot(*tip, "o", color=color, ms=7, zorder=4)[0]
        up = tip[1] - start[1] > tip[0] - start[0]  # moved mostly towards money: label to the right
        ax.annotate(f"{label}\n({tip[0]:.2f}, {tip[1]:.2f})", tip, xytext=(10, 0) if up else (0, 9),
                    textcoords="offset points", ha="left" if up else "right", va="center" if up else "bottom",
                    color=color,
                    fontsize=style.FONT_PT, fontweight="bold")
        drawn.append([arrows, end])
    start = np.asarray(moves[0][1], dtype=float)
    ax.plot(*start, "o", color="black", ms=7, zorder=4)
    ax.annotate(f"bank before\n({start[0]:.2f}, {start[1]:.2f})", start, xytext=(-6, -6),
                textcoords="offset points", ha="right", va="top", fontsize=style.FONT_PT)
    ax.set(xlim=(0, 1.3), ylim=(0, 1.25), aspect="equal", xlabel="water", ylabel="money")
    ax.set_title('"bank" moved by the weighted values', fontsize=style.TITLE_PT)
    return drawn


_INK, _ARROW = "#222222", "#555555"
_BOX_W, _BOX_H, _AT_R = 0.95, 0.62, 0.17  # inches: a matrix's box, an "@" node's radius


def _box(ax, x, y, name, shape, toy, color, width=_BOX_W):
    """A matrix: a tinted box centred on (x, y) with its name, its shape and (if given) the toy's shape."""
    from matplotlib.patches import FancyBboxPatch
    face = style_tint(color)
    ax.add_patch(FancyBboxPatch((x - width / 2, y - _BOX_H / 2), width, _BOX_H, boxstyle="round,pad=0.02",
                                facecolor=face, edgecolor=color, lw=1.4))
    ax.text(x, y + 0.12, name, ha="center", va="center", fontsize=style.TITLE_PT, fontweight="bold", color=_INK)
    ax.text(x, y - 0.13, shape, ha="center", va="center", fontsize=style.FONT_PT, color=_INK)
    if toy is not None:
        ax.text(x, y - _BOX_H / 2 - 0.06, f"here {toy}", ha="center", va="top", fontsize=style.FONT_PT,
                color="#555555")


def style_tint(color, amount=0.18):
    """``color`` mixed with white: ``amount`` = 0 is white, 1 the colour itself."""
    import matplotlib.colors as mcolors
    c = np.array(mcolors.to_rgb(color))
    return tuple(1 + amount * (c - 1))


def _at(ax, x, y):
    """A matrix product: a circle with "@" in it."""
    from matplotlib.patches import Circle
    ax.add_patch(Circle((x, y), _AT_R, facecolor="white", edgecolor=_INK, lw=1.3, zorder=3))
    ax.text(x, y, "@", ha="center", va="center", fontsize=style.TITLE_PT, fontweight="bold", zorder=4)


def _arrow(ax, start, end, color=_ARROW):
    ax.annotate("", end, start, arrowprops=dict(arrowstyle="-|>", color=color, lw=1.4, mutation_scale=12,
                                                shrinkA=0, shrinkB=0))


def data_flow(T=None, d_model=None, d_k=None, d_v=None, ax=None):
    """Self-attention as a data flow: X -> Q, K, V -> Q @ K^T -> / sqrt(d_k) -> softmax -> @ V, every
    matrix with its shape; every matrix product is an "@" node. If all of ``T``, ``d_model``, ``d_k``,
    ``d_v`` are given, each box and each W also writes the toy's shape ("here (4, 3)"). Returns the axes.
    """
    dims = (T, d_model, d_k, d_v)
    if any(d is not None for d in dims) and not all(isinstance(d, int) and d > 0 for d in dims):
        raise ValueError(f"give all of T, d_model, d_k, d_v as positive ints (or none), got {dims}")
    toy = (lambda *s: f"({', '.join(str(d) for d in s)})") if dims[0] is not None else (lambda *s: None)
    if ax is None:
        _, ax = plt.subplots(figsize=(style.COLUMN_WIDTH, 4.1))
        ax.figure.subplots_adjust(0, 0, 1, 1)
    qc, kc, vc, gc = style.QUERY_COLOR, style.KEY_COLOR, style.VALUE_COLOR, "#777777"
    y_q, y_k, y_v, y_row = 3.2, 2.25, 1.2, 2.72       # rows of Q, K (and X), V; of the (T, T) tables
    x_x, x_w, x_qkv, x_at, x_dots, x_scores, x_weights = 0.55, 1.95, 3.1, 4.15, 5.14, 6.5, 7.85
    edge = _BOX_W / 2

    _box(ax, x_x, y_k, "X", "(T, d_model)", toy(T, d_model), _INK)
    ax.text(x_x, y_k + _BOX_H / 2 + 0.08, "the tokens", ha="center", va="bottom", fontsize=style.FONT_PT)
    for y, name, w, shape, color in ((y_q, "Q", "W_q", "(T, d_k)", qc), (y_k, "K", "W_k", "(T, d_k)", kc),
                                     (y_v, "V", "W_v", "(T, d_v)", vc)):
        _arrow(ax, (x_x + edge, y_k + 0.2 * np.sign(y - y_k)), (x_w - _AT_R, y), color)
        _at(ax, x_w, y)
        w_shape = "(d_model, d_v)" if name == "V" else "(d_model, d_k)"
        w_toy = toy(d_model, d_v if name == "V" else d_k)
        below = name != "Q"                                   # under K's and V's nodes: clear of the arrows
        # Read top to bottom: name, shape, then (grey) the toy's shape, as in the boxes. Above a node the
        # toy's line sits next to the node; under a node it comes last.
        lift = 0.0 if w_toy is None else 0.19
        ax.text(x_w, y - _AT_R - 0.05 if below else y + _AT_R + 0.05 + lift, f"{w}\n{w_shape}", ha="center",
                va="top" if below else "bottom", fontsize=style.FONT_PT,
                color=color, bbox=dict(facecolor="white", edgecolor="none", pad=0.5))
        if w_toy is not None:
            ax.text(x_w, y - _AT_R - 0.05 - 0.36 if below else y + _AT_R + 0.05, f"here {w_toy}", ha="center",
                    va="top" if below else "bottom", fontsize=style.FONT_PT, color="#555555",
                    bbox=dict(facecolor="white", edgecolor="none", pad=0.5))
        _arrow(ax, (x_w + _AT_R, y), (x_qkv - edge, y), color)
        _box(ax, x_qkv, y, name, shape, toy(T, d_v if name == "V" else d_k), color)

    _arrow(ax, (x_qkv + edge, y_q), (x_at - _AT_R, y_row + 0.05), qc)          # Q @ K^T
    _arrow(ax, (x_qkv + edge, y_k), (x_at - _AT_R, y_row - 0.05), kc)
    ax.text(x_at + 0.02, y_k - 0.1, "Kᵀ (d_k, T)", ha="center", va="top", fontsize=style.FONT_PT, color=kc)
    _at(ax, x_at, y_row)
    _arrow(ax, (x_at + _AT_R, y_row), (x_dots - 0.55, y_row))
    _box(ax, x_dots, y_row, "dot products", "(T, T)", toy(T, T), gc, width=1.1)
    _arrow(ax, (x_dots + 0.55, y_row), (x_scores - edge, y_row))
    ax.text((x_dots + x_scores) / 2, y_row + _BOX_H / 2 + 0.04, "÷ √d_k", ha="center", va="bottom",
            fontsize=style.TITLE_PT)
    _box(ax, x_scores, y_row, "scores", "(T, T)", toy(T, T), gc)
    _arrow(ax, (x_scores + edge, y_row), (x_weights - edge, y_row))
    ax.text((x_scores + x_weights) / 2, y_row + _BOX_H / 2 + 0.04, "softmax\nalong each row", ha="center",
            va="bottom", fontsize=style.FONT_PT)
    _box(ax, x_weights, y_row, "weights", "(T, T)", toy(T, T), gc)

    y_out = 0.38                                                               # weights @ V
    _arrow(ax, (x_weights, y_row - _BOX_H / 2 - (0.3 if T else 0.02)), (x_weights, y_v + _AT_R))
    _arrow(ax, (x_qkv + edge, y_v), (x_weights - _AT_R, y_v), vc)
    _at(ax, x_weights, y_v)
    _arrow(ax, (x_weights, y_v - _AT_R), (x_weights, y_out + _BOX_H / 2))
    _box(ax, x_weights, y_out, "output", "(T, d_v)", None, vc)
    if T is not None:
        ax.text(x_weights - edge - 0.08, y_out, f"here {toy(T, d_v)}", ha="right", va="center",
                fontsize=style.FONT_PT, color="#555555")
    ax.text(x_weights - 0.25, (y_v + y_row) / 2 - 0.1, "weights @ V", ha="right", va="center",
            fontsize=style.FONT_PT)
    ax.text((x_qkv + x_weights) / 2, y_v + 0.08, "V waits for the weights", ha="center", va="bottom",
            fontsize=style.FONT_PT, color=vc)
    ax.set(xlim=(0, style.COLUMN_WIDTH), ylim=(0, 4.1), aspect="equal")
    ax.axis("off")
    return ax


def query_among_keys(query, keys, ax=None):
    """One query among the keys, in the plane of the two key coordinates *is a topic* (x) and
    *is a noun* (y), with dashed lines of equal dot product.

    query: (2,). keys: a dict ``{token: (2,)}``; tokens with the same key share one dot and one label.
    A key's dot product with the query grows the further it lies along the query's arrow: each dashed
    line, at right angles to the query, passes through one key; each key is labelled "tokens: q · k".
    Returns ``(query_arrow, key_dots, level_lines)``.
    """
    query = np.asarray(query, dtype=float)
    if query.shape != (2,) or not query.any():
        raise ValueError(f"query must be a non-zero (2,), got {query}")
    groups = {}
    for token, k in keys.items():
        k = np.asarray(k, dtype=float)
        if k.shape != (2,):
            raise ValueError(f"key of {token!r} must be (2,), got {k.shape}")
        groups.setdefault(tuple(k.round(9)), []).append(token)
    if ax is None:
        _, ax = plt.subplots(figsize=style.figsize(0.62, 0.6), layout="constrained")
    xlim, ylim = (-0.15, 2.25), (-0.15, 1.3)
    along = query / (query @ query)                  # the point of the query's line where q . k = 1
    across = np.array([-query[1], query[0]])          # the direction of a line of equal q . k
    lines = []
    for level in sorted({float(np.dot(k, query)) for k in groups}):
        ends = level * along + np.outer((-5, 5), across)
        lines.append(ax.plot(*ends.T, ls="--", lw=0.9, color="#999999", zorder=1)[0])
    dots = []
    for k, tokens in groups.items():
        dots.append(ax.plot(*k, "o", color=style.KEY_COLOR, ms=7, zorder=3)[0])
        crowded = any(o != k and o[1] == k[1] and 0 < o[0] - k[0] < 0.45 for o in groups)
        ax.annotate(f"{', '.join(tokens)}: {np.dot(k, query):g}", k,  # left of a dot with a near right one
                    xytext=(-6, -4) if crowded else (6, -4), textcoords="offset points",
                    ha="right" if crowded else "left", va="top", color=style.KEY_COLOR,
                    fontsize=style.FONT_PT)
    arrow = ax.annotate("", query, (0, 0), arrowprops=dict(arrowstyle="-|>", color=style.QUERY_COLOR,
                                                           lw=2.2, shrinkA=0, shrinkB=0, mutation_scale=13))
    ax.annotate(f"query of bank ({query[0]:g}, {query[1]:g})", query, xytext=(-4, 6),
                textcoords="offset points", ha="right", va="bottom", color=style.QUERY_COLOR,
                fontsize=style.FONT_PT, fontweight="bold")
    ax.set(xlim=xlim, ylim=ylim, aspect="equal", xlabel="is a topic", ylabel="is a noun")
    ax.set_title("bank's query among the keys: each key's q · k (dashed: equal q · k)",
                 fontsize=style.TITLE_PT)
    return arrow, dots, lines
