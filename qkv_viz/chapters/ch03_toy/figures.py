"""Chapter 3's geometry: an attention output is a point inside the triangle of the values.

The picture itself is live (``vector_move.py``); this module keeps the one
computation it needs in reverse, a point's barycentric coordinates.
"""
from __future__ import annotations

import numpy as np

from qkv_viz.core.validate import as_array


def barycentric(point, corners) -> np.ndarray:
    """Barycentric coordinates (3,) of ``point`` (2,) in the triangle ``corners`` (3, 2).

    Solves lambda_1 c_1 + lambda_2 c_2 + lambda_3 c_3 = point with sum(lambda) = 1.
    """
    corners = as_array("corners", corners, ndim=2)
    point = as_array("point", point, ndim=1)
    if corners.shape != (3, 2) or point.shape != (2,):
        raise ValueError(f"need corners (3, 2) and point (2,), got {corners.shape} and {point.shape}")
    A = np.vstack([corners.T, np.ones(3)])  # (3, 3): rows x, y, 1
    return np.linalg.solve(A, np.append(point, 1.0))


def plot_rows_times_columns(Q, K, i: int = 0, j: int = 1, ax=None):
    """Q K^T drawn as rows times columns: Q (T, d_k) on the left, K^T (d_k, S) on top, their
    product, the dot products (T, S), where the two meet. Row ``i`` of Q and column ``j`` of
    K^T are coloured (query, key) and their cell of the product is framed, with the sum that
    gives it written out. Rows are labelled q_0, q_1, ..., columns k_0, k_1, .... Every number is
    computed from Q and K. Returns a dict: "cells" (the product's texts, (T, S) nested lists),
    "sum" (the written-out sum's text)."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    from qkv_viz.viz import style

    Q, K = as_array("Q", Q, ndim=2), as_array("K", K, ndim=2)
    if Q.shape[1] != K.shape[1]:
        raise ValueError(f"Q and K need the same d_k: Q has shape {Q.shape}, K has shape {K.shape}")
    (T, d_k), S = Q.shape, K.shape[0]
    if not (0 <= i < T and 0 <= j < S):
        raise ValueError(f"i must be in 0..{T - 1} and j in 0..{S - 1}, got i={i}, j={j}")
    dots = Q @ K.T                                     # (T, d_k) @ (d_k, S) -> (T, S)
    if ax is None:
        _, ax = plt.subplots(figsize=style.figsize(0.6, 0.62))
    x0 = d_k + 0.6                                     # the product (and K^T above it) start here
    fs, fn = style.FONT_PT, style.ANNOTATION_PT + 1

    def cell(x, y, text, face, edge="0.6", lw=0.8, weight="normal"):
        ax.add_patch(Rectangle((x, y), 1, 1, facecolor=face, edgecolor=edge, lw=lw, zorder=3 if lw > 1 else 1))
        return ax.text(x + 0.5, y + 0.5, text, ha="center", va="center", fontsize=fn, fontweight=weight, zorder=4)

    def num(v):
        return f"{v:g}"

    for r in range(T):                                 # Q: rows are queries
        for c in range(d_k):
            cell(c, r, num(Q[r, c]), style.QUERY_COLOR + "40" if r == i else "white")
        ax.text(-0.15, r + 0.5, f"$q_{r}$", ha="right", va="center", fontsize=fs,
                color=style.QUERY_COLOR if r == i else "black")
    for r in range(d_k):                               # K^T: columns are keys
        for c in range(S):
            cell(x0 + c, -d_k - 0.6 + r, num(K[c, r]), style.KEY_COLOR + "40" if c == j else "white")
    for c in range(S):
        ax.text(x0 + c + 0.5, -d_k - 0.75, f"$k_{c}$", ha="center", va="bottom", fontsize=fs,
                color=style.KEY_COLOR if c == j else "black")
    texts = [[cell(x0 + c, r, num(dots[r, c]), "0.92" if (r == i or c == j) else "white",
                   edge="black" if (r, c) == (i, j) else "0.6", lw=2.2 if (r, c) == (i, j) else 0.8,
                   weight="bold" if (r, c) == (i, j) else "normal")
              for c in range(S)] for r in range(T)]
    ax.text(d_k / 2, -0.2, "$Q$: row = a query", ha="center", va="bottom", fontsize=fs, color=style.QUERY_COLOR)
    ax.text(x0 + S + 0.15, -d_k / 2 - 0.6, "$K^\\top$: column\n= a key", ha="left", va="center", fontsize=fs,
            color=style.KEY_COLOR)
    ax.text(x0 + S + 0.15, T / 2, "$QK^\\top$:\nthe dot\nproducts", ha="left", va="center", fontsize=fs)
    terms = " + ".join(f"{num(Q[i, c])}·{num(K[j, c])}" for c in range(d_k))
    total = ax.text(x0 + S / 2, T + 0.25, f"$q_{i}\\cdot k_{j}$ = {terms} = {num(dots[i, j])}", ha="center",
                    va="top", fontsize=fs + 1)
    ax.set(xlim=(-1.0, x0 + S + 2.0), ylim=(T + 1.0, -d_k - 1.4), aspect="equal")
    ax.axis("off")
    return {"cells": texts, "sum": total}
