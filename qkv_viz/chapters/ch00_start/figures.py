"""Chapter 0 pictures: "bank" moved by the weighted values, and the whole pipeline for one sentence.

``bank_moves(moves, ax=None)`` draws one token's vector, in the plane of two features, moved by
its weights times the values, head to tail, once per sentence.

``bank_pipeline(X, W_q, W_k, W_v, tokens, focus="bank", ax=None)`` draws
``qkv_viz.viz.pipeline.plot_pipeline`` for the given example and outlines the row of
``focus`` in every matrix that has one row per query: X, Q (both copies), the dot
products, the scores, the weights and the output. The numbers in the cells are
written at ``NUMBER_PT``, the token names at ``LABEL_PT``. Returns ``(artists, outlines)``: the pipeline's dict stage ->
artists, and the list of outline Rectangles (one per matrix, in drawing order).
Never calls ``plt.show()``.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Rectangle

from qkv_viz.viz import style

from qkv_viz.viz.pipeline import plot_pipeline

NUMBER_PT = 9.0          # the cells' numbers: legible at the column's width
LABEL_PT = 10.0          # the token names beside the rows and above the columns (the pipeline writes 8 pt)
OUTLINE_COLOR = "#111111"   # not a role colour: it sits on orange Q and red scores alike
_QUERY_ROWS = ("input", "scores", "scale", "softmax", "output")  # one row per token in every frame


def _frames(artists, stage):
    return [a for a in artists[stage] if a.get_gid() == "frame"]


def bank_pipeline(X, W_q, W_k, W_v, tokens, focus="bank", ax=None):
    """The pipeline of ``X`` (T, d_model) through ``W_q``, ``W_k`` (d_model, d_k) and ``W_v``
    (d_model, d_v), ``tokens`` (T names) beside the rows, the row of token ``focus`` outlined."""
    tokens = [str(t) for t in tokens]
    if focus not in tokens:
        raise ValueError(f"focus must be one of the tokens {tokens}, got {focus!r}")
    artists = plot_pipeline(X=X, W_q=W_q, W_k=W_k, W_v=W_v, tokens=tokens, ax=ax)
    for stage_artists in artists.values():
        for a in stage_artists:
            if a.get_gid() == "cell-number":
                a.set_fontsize(NUMBER_PT)
            elif a.get_gid() in ("row-label", "token-label"):
                a.set_fontsize(LABEL_PT)
    T, i = len(tokens), tokens.index(focus)
    q_frames = _frames(artists, "qkv")[0::3]  # Q, K, V on the first row, then again on the second: the Q's
    frames = _frames(artists, "input") + q_frames + [f for s in _QUERY_ROWS[1:] for f in _frames(artists, s)]
    outlines = []
    for f in frames:
        h = f.get_height() / T  # one row
        y = f.get_y() + (T - 1 - i) * h  # row 0 is on top
        ring = Rectangle((f.get_x() - 0.02, y - 0.02), f.get_width() + 0.04, h + 0.04, fill=False,
                         edgecolor=OUTLINE_COLOR, lw=2.0, zorder=5, gid="focus-row")
        f.axes.add_patch(ring)
        outlines.append(ring)
    return artists, outlines


MOVE_COLORS = ("#0072B2", "#E69F00")  # one per sentence: blue (the river one), orange (the money one)
PIECE_MIN = 0.1                       # pieces shorter than this are drawn but not labelled


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
                mid = tip + piece / 2
                vertical = abs(piece[1]) > abs(piece[0])
                ax.annotate(f"{w:.2f} × {t}", mid, xytext=(8, 0) if vertical else (0, -9),
                            textcoords="offset points", ha="left" if vertical else "center",
                            va="center" if vertical else "top", color=color, fontsize=style.FONT_PT)
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
