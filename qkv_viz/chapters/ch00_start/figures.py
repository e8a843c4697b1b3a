"""Chapter 0's picture: "bank" moved by the weighted values.

``bank_moves(moves, ax=None)`` draws one token's vector, in the plane of two features, moved by
its weights times the values, head to tail, once per sentence. Never calls ``plt.show()``.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from qkv_viz.viz import style

MOVE_COLORS = ("#0072B2", "#E69F00")  # one per sentence: blue (the river one), orange (the money one)
PIECE_MIN = 0.2                       # pieces shorter than this are drawn but not labelled


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
