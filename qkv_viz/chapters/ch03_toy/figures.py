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


def plot_rows_times_columns(Q, K, i: int = 0, j: int = 1, ax=None, row_names=None, col_names=None,
                            labels=("$Q$: row = a query", "$K^\\top$: column\n= a key", "$QK^\\top$:\nthe dot\nproducts"),
                            colors=None, decimals=None, sum_name=None, inner_names=None, scale=None):
    """Q K^T drawn as rows times columns: Q (T, d_k) on the left, K^T (d_k, S) on top, their
    product, the dot products (T, S), where the two meet. Row ``i`` of Q and column ``j`` of
    K^T are coloured (query, key) and their cell of the product is framed, with the sum that
    gives it written out. Rows are labelled q_0, q_1, ..., columns k_0, k_1, ... (or ``row_names``,
    ``col_names``); ``labels`` name the three matrices, ``colors`` the two factors' highlights;
    ``decimals`` rounds the numbers (None: as short as they are); ``sum_name`` names the framed cell in the
    written-out sum (default: row name · column name); ``inner_names``, two lists of d_k names, label
    Q's columns and K^T's rows, the axis the sum runs over (default: unlabelled); ``scale`` multiplies the type
    (default 1.5 on a figure of its own, so that it reads at page width; 1 on a given ``ax``). Any product A @ B draws as
    ``plot_rows_times_columns(A, B.T, ...)``. Every number is computed from Q and K. Returns a dict:
    "cells" (the product's texts, (T, S) nested lists), "sum" (the written-out sum's text)."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    from qkv_viz.viz import style

    Q, K = as_array("Q", Q, ndim=2), as_array("K", K, ndim=2)
    if Q.shape[1] != K.shape[1]:
        raise ValueError(f"Q and K need the same d_k: Q has shape {Q.shape}, K has shape {K.shape}")
    (T, d_k), S = Q.shape, K.shape[0]
    if not (0 <= i < T and 0 <= j < S):
        raise ValueError(f"i must be in 0..{T - 1} and j in 0..{S - 1}, got i={i}, j={j}")
    row_names = [f"$q_{r}$" for r in range(T)] if row_names is None else list(row_names)
    col_names = [f"$k_{c}$" for c in range(S)] if col_names is None else list(col_names)
    if len(row_names) != T or len(col_names) != S:
        raise ValueError(f"row_names needs {T} names and col_names {S}, got {len(row_names)} and {len(col_names)}")
    c_row, c_col = (style.QUERY_COLOR, style.KEY_COLOR) if colors is None else colors
    dots = Q @ K.T                                     # (T, d_k) @ (d_k, S) -> (T, S)
    if inner_names is not None and any(len(names) != d_k for names in inner_names):
        raise ValueError(f"inner_names needs two lists of {d_k} names, got {inner_names}")
    if scale is None:
        scale = 1.5 if ax is None else 1.0
    if ax is None:
        _, ax = plt.subplots(figsize=style.figsize(0.6 * scale, 0.62))
    x0 = d_k + 0.6                                     # the product (and K^T above it) start here
    fs, fn = style.FONT_PT * scale, (style.ANNOTATION_PT + 1) * scale

    def cell(x, y, text, face, edge="0.6", lw=0.8, weight="normal"):
        ax.add_patch(Rectangle((x, y), 1, 1, facecolor=face, edgecolor=edge, lw=lw, zorder=3 if lw > 1 else 1))
        return ax.text(x + 0.5, y + 0.5, text, ha="center", va="center", fontsize=fn, fontweight=weight, zorder=4)

    def num(v):
        return f"{v:g}" if decimals is None else f"{v:.{decimals}f}"

    for r in range(T):                                 # Q: rows are queries
        for c in range(d_k):
            cell(c, r, num(Q[r, c]), c_row + "40" if r == i else "white")
        ax.text(-0.15, r + 0.5, row_names[r], ha="right", va="center", fontsize=fs,
                color=c_row if r == i else "black")
    for r in range(d_k):                               # K^T: columns are keys
        for c in range(S):
            cell(x0 + c, -d_k - 0.6 + r, num(K[c, r]), c_col + "40" if c == j else "white")
    for c in range(S):
        ax.text(x0 + c + 0.5, -d_k - 0.75, col_names[c], ha="center", va="bottom", fontsize=fs,
                color=c_col if c == j else "black")
    texts = [[cell(x0 + c, r, num(dots[r, c]), "0.92" if (r == i or c == j) else "white",
                   edge="black" if (r, c) == (i, j) else "0.6", lw=2.2 if (r, c) == (i, j) else 0.8,
                   weight="bold" if (r, c) == (i, j) else "normal")
              for c in range(S)] for r in range(T)]
    if inner_names is not None:                        # the summed axis: Q's columns, K^T's rows
        for c in range(d_k):
            ax.text(c + 0.5, -0.1, inner_names[0][c], ha="center", va="bottom", fontsize=fs)
            ax.text(x0 - 0.15, -d_k - 0.6 + c + 0.5, inner_names[1][c], ha="right",
                    va="center", fontsize=fs)
    ax.text(d_k / 2, -0.2 if inner_names is None else -0.7, labels[0], ha="center", va="bottom", fontsize=fs,
            color=c_row)
    ax.text(x0 + S + 0.15, -d_k / 2 - 0.6, labels[1], ha="left", va="center", fontsize=fs, color=c_col)
    ax.text(x0 + S + 0.15, T / 2, labels[2], ha="left", va="center", fontsize=fs)
    def factor(v):                                     # a negative factor in brackets: 1·(-1), not 1·-1
        return f"({num(v)})" if v < 0 else num(v)

    terms = " + ".join(f"{factor(Q[i, c])}·{factor(K[j, c])}" for c in range(d_k))
    name = f"{row_names[i]}$\\cdot${col_names[j]}" if sum_name is None else sum_name
    total = ax.text(x0 + S / 2, T + 0.25, f"{name} = {terms} = {num(dots[i, j])}",
                    ha="center", va="top", fontsize=fs + 1)
    ax.set(xlim=(-1.0, x0 + S + 2.6), ylim=(T + 1.0, -d_k - 1.4), aspect="equal")
    ax.axis("off")
    return {"cells": texts, "sum": total}


def plot_weights_times_values(weights, V, names, i: int = 0, j: int = 1, ax=None):
    """``weights @ V`` drawn as rows times columns: the weights (T, S) on the left, V^T (d_v, S)'s
    columns on top (one entry of every value), each token's output (T, d_v) where they meet; row
    ``i`` (token i's shares) and column ``j`` of V are coloured and their cell framed, with its sum
    written out. ``names``: the T tokens' names. Returns what ``plot_rows_times_columns`` returns."""
    import matplotlib.pyplot as plt

    from qkv_viz.viz import style
    V = as_array("V", V, ndim=2)
    if ax is None:
        ax = plt.subplots(figsize=style.figsize(0.75, 0.62))[1]
    return plot_rows_times_columns(
        weights, V.T, i=i, j=j, ax=ax, decimals=2, row_names=[f"{n} ($q_{r}$)" for r, n in enumerate(names)],
        col_names=[f"col {c}" for c in range(V.shape[1])], colors=("#666666", style.VALUE_COLOR),
        inner_names=([f"$k_{c}$" for c in range(V.shape[0])], [f"$v_{c}$" for c in range(V.shape[0])]),
        labels=("weights", "$V$: column =\none entry of\nevery value", "weights @ V:\nrow = a token's\noutput"),
        sum_name=f"{names[i]}'s output, entry {j}")


def plot_query_and_keys(q, K, ax=None):
    """One query q (2,) among the keys K (S, 2), all drawn as arrows from the origin: the query
    orange, each key in its value's colour (the live picture's colours). Each key's label gives
    what the page compares: its length |k_j|, the cosine with q and the dot product q . k_j, all
    computed here. Returns a dict: "query" (its arrow), "keys" (their arrows), "labels" (their texts)."""
    import matplotlib.pyplot as plt

    from qkv_viz.chapters.ch03_toy.vector_move import Q_TEXT, SHARE_COLOURS, SHARE_TEXT
    from qkv_viz.viz import style

    q, K = as_array("q", q, ndim=1), as_array("K", K, ndim=2)
    if q.shape != (2,) or K.shape[1:] != (2,):
        raise ValueError(f"need a query (2,) and keys (S, 2) in the plane, got {q.shape} and {K.shape}")
    if ax is None:
        _, ax = plt.subplots(figsize=style.figsize(0.62, 0.62))
    lengths = np.linalg.norm(K, axis=1)                        # (S,)
    dots = K @ q                                               # (S, 2) @ (2,) -> (S,)
    cosines = dots / (lengths * np.linalg.norm(q))             # (S,)
    arrow = dict(length_includes_head=True, head_width=0.14, overhang=0.2)
    query = ax.arrow(0, 0, *q, color=style.QUERY_COLOR, width=0.06, zorder=1, **arrow)
    ax.annotate("$q_0$", q, xytext=(-6, 4), textcoords="offset points", ha="right", va="bottom",
                color=Q_TEXT, fontweight="bold", fontsize=style.FONT_PT)
    keys, labels = [], []
    for j, k in enumerate(K):
        keys.append(ax.arrow(0, 0, *k, color=SHARE_COLOURS[j % 3], width=0.03, zorder=2, **arrow))
        labels.append(ax.annotate(f"$k_{j}$: length {lengths[j]:.2f}\ncos {cosines[j]:.2f}, "
                                  f"$q_0\\cdot k_{j}$ = {dots[j]:.0f}", k, textcoords="offset points",
                                  # a key left of the query is labelled on its left, clear of the query's arrow
                                  **(dict(xytext=(-6, 0), ha="right", va="center") if k[0] * q[1] < k[1] * q[0]
                                     else dict(xytext=(6, 2), ha="left", va="bottom" if k[1] > 0.5 else "top")),
                                  color=SHARE_TEXT[j % 3],
                                  fontsize=style.ANNOTATION_PT))
    top = max(np.abs(K).max(), np.abs(q).max()) + 0.3
    left = 2.9 if np.any(K[:, 0] * q[1] < K[:, 1] * q[0]) else 0.3  # room for labels on the left
    ax.set(xlim=(-left, top + 2.5), ylim=(-0.6, top), aspect="equal", title="the query among the keys")
    ax.axhline(0, color="#ddd", lw=0.8, zorder=0)
    ax.axvline(0, color="#ddd", lw=0.8, zorder=0)
    return {"query": query, "keys": keys, "labels": labels}


def plot_query_states(queries, K, V, captions, scale=True):
    """Still states of the page's live picture side by side: one column per query (n, 2), the query
    among the keys K (S, 2) above, the output among the values V (S, 2) below, drawn by the live
    picture's own still code (the output is the black ring). Each column's title is its caption and the value with the largest
    weight, from the math core. Returns (fig, weights (n, S))."""
    import matplotlib.pyplot as plt

    from qkv_viz.chapters.ch03_toy.vector_move import draw_query_plane, draw_value_plane
    from qkv_viz.core.attention import scaled_dot_product_attention
    from qkv_viz.viz import style

    queries, K, V = (as_array(n, a, ndim=2) for n, a in (("queries", queries), ("K", K), ("V", V)))
    if len(captions) != len(queries):
        raise ValueError(f"need one caption per query ({len(queries)}), got {len(captions)}")
    outputs, weights = scaled_dot_product_attention(queries, K, V, scale=scale)   # (n, d_v), (n, S)
    n = len(queries)
    fig, axes = plt.subplots(2, n, figsize=style.figsize(0.9, 0.66), layout="constrained", squeeze=False)
    for c in range(n):
        draw_query_plane(axes[0, c], queries[c], K)
        draw_value_plane(axes[1, c], V, weights[c], outputs[c], named=False)
        j = int(np.argmax(weights[c]))
        axes[0, c].set_title(f"{captions[c]}:\nv{j} gets {100 * weights[c, j]:.0f} %", fontsize=style.FONT_PT)
        axes[1, c].set_title("")
    return fig, weights
