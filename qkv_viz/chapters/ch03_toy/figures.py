"""Chapter 3's geometry: an attention output is a point inside the triangle of the values.

The picture itself is live (``vector_move.py``); this module keeps the one
computation it needs in reverse, a point's barycentric coordinates, and the still pictures: the query among
the keys (as given and at unit length) and still states of the live picture.
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


def plot_query_and_keys(q, K, ax=None, title="the query among the keys"):
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
    on_left = K[:, 0] * q[1] < K[:, 1] * q[0]                # (S,): keys left of the query, labelled on their left
    lowest = min((k[1] for k, left in zip(K, on_left) if not left), default=None)   # its label hangs below the key
    for j, k in enumerate(K):
        keys.append(ax.arrow(0, 0, *k, color=SHARE_COLOURS[j % 3], width=0.03, zorder=2, **arrow))
        labels.append(ax.annotate(f"$k_{j}$: length {lengths[j]:.2f}\ncos {cosines[j]:.2f}, "
                                  f"$q_0\\cdot k_{j}$ = {dots[j]:.3g}", k, textcoords="offset points",
                                  # a key left of the query is labelled on its left, clear of the query's arrow
                                  **(dict(xytext=(-6, 0), ha="right", va="center") if on_left[j]
                                     else dict(xytext=(6, 2), ha="left", va="top" if k[1] == lowest else "bottom")),
                                  color=SHARE_TEXT[j % 3],
                                  fontsize=style.ANNOTATION_PT))
    top = max(np.abs(K).max(), np.abs(q).max()) + 0.3
    left = 2.9 if np.any(K[:, 0] * q[1] < K[:, 1] * q[0]) else 0.3  # room for labels on the left
    ax.set(xlim=(-left, top + 2.5), ylim=(-0.6, top), aspect="equal", title=title)
    ax.axhline(0, color="#ddd", lw=0.8, zorder=0)
    ax.axvline(0, color="#ddd", lw=0.8, zorder=0)
    return {"query": query, "keys": keys, "labels": labels}


def plot_length_against_angle(q, K, d_k: int = 2):
    """The same query q (2,) against the keys K (S, 2) as given (left) and against the same keys scaled to length 1
    (right), each panel drawn by ``plot_query_and_keys``; each title names the winning key and gives every key's
    weight, softmax(q . k / sqrt(d_k)). Returns (fig, weights (2, S)): row 0 as given, row 1 at unit length."""
    import matplotlib.pyplot as plt

    from qkv_viz.core.softmax import softmax
    from qkv_viz.viz import style

    q, K = as_array("q", q, ndim=1), as_array("K", K, ndim=2)
    unit = K / np.linalg.norm(K, axis=1, keepdims=True)        # (S, 2): every key of length 1, same direction
    weights = np.stack([softmax(keys @ q / np.sqrt(d_k)) for keys in (K, unit)])   # (2, S)
    fig, axes = plt.subplots(1, 2, figsize=style.figsize(1.0, 0.36), layout="constrained")
    for ax, keys, w, name in zip(axes, (K, unit), weights, ("keys as given", "keys of length 1")):
        shares = ", ".join(f"{x:.2f}" for x in w)
        plot_query_and_keys(q, keys, ax=ax, title=f"{name}: $k_{int(np.argmax(w))}$ wins\nweights {shares}")
    axes[1].set(xlim=axes[0].get_xlim(), ylim=axes[0].get_ylim())   # one scale: q0 is drawn the same in both
    return fig, weights


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
