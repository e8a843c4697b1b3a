"""Chapter 2 pictures: what the three projections *mean*.

- ``plot_token_to_qkv``: one token vector x becoming three vectors q, k, v,
  every entry written in its cell.
- ``plot_qk_panels``: every token's key (left) and query (right) as arrows in the d_k = 2 plane, one scale.
- ``frame_row_max``: frame each row's largest score on a heatmap.
- ``asymmetry``: how far W_q W_k^T is from symmetric (a number, for the tests and exercises).
- ``plot_learning``: the training run: what the verb reads, step by step, and the row of W_q W_k^T it learned.

Each takes ``ax=None``, returns the artists it drew and never calls
``plt.show()``. Colours follow the book's roles (``qkv_viz.viz.style``):
queries vermillion, keys blue, values green, the plain token grey.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import FancyArrowPatch, Rectangle

from qkv_viz.core.validate import as_array
from qkv_viz.viz import style

TOKEN_COLOR = "0.45"  # the plain token x: no role yet
ROLE_COLORS = {"q": style.QUERY_COLOR, "k": style.KEY_COLOR, "v": style.VALUE_COLOR}
ROLE_WORDS = {"q": "query: what I look for", "k": "key: what I offer as a label",
              "v": "value: what I pass on"}


def _vector_row(ax, values, x0: float, y0: float, color, decimals: int = 2):
    """One row of cells at (x0, y0), one cell per entry, the value written inside."""
    artists = []
    for i, value in enumerate(values):
        artists.append(ax.add_patch(Rectangle((x0 + i, y0), 1, 1, facecolor=color, alpha=0.18,
                                              edgecolor=color, lw=1.2)))
        artists.append(ax.text(x0 + i + 0.5, y0 + 0.5, f"{value:.{decimals}f}", ha="center",
                               va="center", fontsize=style.ANNOTATION_PT))
    return artists


def plot_token_to_qkv(x, W_q, W_k, W_v, ax=None, token: str = "token 0", decimals: int = 2):
    """One token x (d_model,) becoming q = x W_q, k = x W_k (d_k,) and v = x W_v (d_v,).

    The token is a row of d_model cells on top; three arrows labelled with the
    matrix and its shape lead to the three rows below, coloured by role.
    Returns the artists (cells, texts, arrows).
    """
    x = as_array("x", x, ndim=1)
    mats = {"q": as_array("W_q", W_q, ndim=2), "k": as_array("W_k", W_k, ndim=2),
            "v": as_array("W_v", W_v, ndim=2)}
    for role, W in mats.items():
        if W.shape[0] != x.shape[0]:
            raise ValueError(f"W_{role} needs {x.shape[0]} rows (d_model of x): x has shape "
                             f"{x.shape}, W_{role} has shape {W.shape}")
    vectors = {role: x @ W for role, W in mats.items()}  # (d_model,) @ (d_model, d) -> (d,)
    if ax is None:
        _, ax = plt.subplots(figsize=style.figsize(1.0, 0.36))
    gap = 1.5
    widths = [max(v.size, 4) for v in vectors.values()]  # a slot per vector, wide enough for its labels
    total = sum(widths) + gap * (len(widths) - 1)
    x_left = (total - x.size) / 2
    top, bottom = 3.2, 0.0
    artists = _vector_row(ax, x, x_left, top, TOKEN_COLOR, decimals)
    artists.append(ax.text(x_left - 0.3, top + 0.5, f"x ({token})", ha="right", va="center",
                           fontsize=style.FONT_PT))
    left = 0.0
    for (role, vec), W, slot in zip(vectors.items(), mats.values(), widths):
        color = ROLE_COLORS[role]
        centre = left + slot / 2
        artists += _vector_row(ax, vec, centre - vec.size / 2, bottom, color, decimals)
        artists.append(ax.add_patch(FancyArrowPatch(
            (x_left + x.size / 2, top), (centre, bottom + 1.05), arrowstyle="-|>",
            mutation_scale=12, color=color, lw=1.5)))
        mid = ((x_left + x.size / 2 + centre) / 2, (top + bottom + 1) / 2)
        artists.append(ax.text(*mid, f"@ $W_{role}$  {W.shape[0]}×{W.shape[1]}", ha="center",
                               va="center", color=color, fontsize=style.FONT_PT,
                               bbox=dict(facecolor="white", edgecolor="none", pad=1)))
        artists.append(ax.text(centre, bottom - 0.35, f"${role} = x\\,W_{role}$\n{ROLE_WORDS[role]}",
                               ha="center", va="top", color=color, fontsize=style.FONT_PT))
        left += slot + gap
    ax.set(xlim=(min(-0.2, x_left - 2.6), total + 0.2), ylim=(-1.9, top + 1.2), aspect="equal")
    ax.axis("off")
    return artists


def frame_row_max(scores, ax=None, color="black"):
    """Frame each row's largest entry of a (T, S) heatmap drawn with ``imshow``
    (cell (i, j) centred at x = j, y = i). A tie frames every cell that shares the
    maximum; a row whose entries are all equal has no largest entry and gets no frame.
    Returns the rectangles."""
    scores = as_array("scores", scores, ndim=2)
    ax = plt.gca() if ax is None else ax
    frames = []
    for i, row in enumerate(scores):
        top = np.isclose(row, row.max())
        if top.all():
            continue
        frames += [ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor=color, lw=2.2))
                   for j in np.flatnonzero(top)]
    return frames


def asymmetry(M) -> float:
    """How far a square M is from symmetric: ||M - M^T|| / ||M + M^T|| (Frobenius norms).

    0 for a symmetric matrix (e.g. W W^T, tied projections); about 1 for the
    product of two unrelated random matrices; it can exceed 1.
    """
    M = as_array("M", M, ndim=2)
    if M.shape[0] != M.shape[1]:
        raise ValueError(f"M must be square, got shape {M.shape}")
    return float(np.linalg.norm(M - M.T) / np.linalg.norm(M + M.T))


def plot_learning(history, row_hand, row_learned, features, tokens, target: str, query: str = "the query",
                  row_name: str = "action", axes=None):
    """The training run of "Learned, not designed", in two panels of equal width.

    Left: the weights one query gives each token, step by step (``history`` (steps, T)); the
    ``target`` token coloured, the other tokens one grey style under one legend entry (their weights
    are nearly equal). ``history[k]`` is the weights after k updates, so the learned row is labelled
    with ``len(history) - 1`` updates. Right: the one row of M = W_q W_k^T that training moved, ``row_hand`` and
    ``row_learned`` (d_model,) as two rows of one heatmap (columns: key features), whole numbers
    in the cells, one colour bar. ``axes``: two axes, or None for a new figure. Returns a dict:
    "target" (the Line2D), "others" (their Line2Ds), "rows" (the image)."""
    from qkv_viz.viz.plots import scores_heatmap

    history = as_array("history", history, ndim=2)
    row_hand, row_learned = as_array("row_hand", row_hand, ndim=1), as_array("row_learned", row_learned, ndim=1)
    n = len(features)
    if row_hand.shape != (n,) or row_learned.shape != (n,):
        raise ValueError(f"row_hand and row_learned must both be (d_model,) = ({n},) for {n} features, "
                         f"got {row_hand.shape} and {row_learned.shape}")
    rows = np.stack([row_hand, row_learned])  # (2, d_model)
    if history.shape[1] != len(tokens) or target not in tokens:
        raise ValueError(f"history must be (steps, T) with T = {len(tokens)} tokens and target one of them; "
                         f"got shape {history.shape} and target {target!r}")
    if axes is None:
        fig, axes = plt.subplots(1, 2, figsize=style.figsize(1.0, 0.36))
    steps = np.arange(len(history))
    j = list(tokens).index(target)
    others = [axes[0].plot(steps, history[:, i], color="0.45", lw=1.6)[0] for i in range(len(tokens)) if i != j]
    others[0].set_label(f"the other {len(others)} (nearly equal)")
    (line,) = axes[0].plot(steps, history[:, j], color=style.KEY_COLOR, lw=2.5, label=f'"{target}"')
    axes[0].legend(handles=[line, others[0]], loc="center right", fontsize=style.FONT_PT, frameon=False,
                   handlelength=1.5, borderaxespad=0.1)
    axes[0].set(xlabel="step", ylabel="weight", ylim=(-0.03, 1.03), title=f"what {query} reads")
    lim = float(np.ceil(np.abs(rows).max())) or 1.0  # whole: the bar ends on a tick
    image = scores_heatmap(np.round(rows) + 0.0, ax=axes[1], tokens_q=["by hand", f"after {len(history) - 1} updates"],
                           tokens_k=features, limit=lim, fmt=".0f", colorbar_label="adds to the score",
                           title=f"row \"{row_name}\" of $W_qW_k^\\top$")
    axes[1].set(xlabel="key feature", ylabel="")
    axes[0].figure.tight_layout()
    return {"target": line, "others": others, "rows": image}


def plot_qk_panels(X, W_q, W_k, tokens, axes=None, axis_names=("key coordinate 1", "key coordinate 2")):
    """Every token's key k_i = x_i W_k (left panel) and query q_i = x_i W_q (right panel) as arrows from 0,
    for d_k = 2, drawn as chapter 1 draws them: keys solid blue, queries dashed vermillion. A query and a
    key meet in a dot product, so both panels show the same plane, on the same scale and grid.

    Tokens whose vectors land on the same point share one arrow and one label ("dog, ball"), set beside
    the tip on the side facing the middle of the panel. The zero vectors of a panel share one grey ring at 0 and one label
    ("zero: the, a"), set in the diagonal direction from 0 farthest from every arrow, with a thin line
    to the ring. ``axes``: two axes, or None for a new figure.
    Returns a dict: "keys" and "queries" (the arrows), "labels" ({"k": texts, "q": texts}, a panel's zero
    label last), "points" ({("q" or "k", token): (2,) array}), "axes" (the two axes)."""
    X = as_array("X", X, ndim=2)
    W_q, W_k = as_array("W_q", W_q, ndim=2), as_array("W_k", W_k, ndim=2)
    if W_q.shape != (X.shape[1], 2) or W_k.shape != (X.shape[1], 2):
        raise ValueError(f"W_q and W_k must be (d_model, 2) = ({X.shape[1]}, 2) to draw a plane, "
                         f"got {W_q.shape} and {W_k.shape}")
    if len(tokens) != len(X):
        raise ValueError(f"one token name per row of X: {len(tokens)} names for {len(X)} rows")
    Q, K = X @ W_q, X @ W_k  # (T, d_model) @ (d_model, 2) -> (T, 2)
    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=style.figsize(1.0, 0.46), sharex=True, sharey=True)
    span = np.abs(np.vstack([Q, K])).max() or 1.0
    allp = np.vstack([Q, K, np.zeros((1, 2))])
    lo, hi = allp.min(axis=0) - 0.35 * span, allp.max(axis=0) + 0.35 * span
    gap = 0.06 * span  # label distance from the tip, in data units
    out = {"keys": [], "queries": [], "labels": {"k": [], "q": []}, "points": {}, "axes": list(axes)}
    panels = (("k", K, axes[0], "keys: what each token offers"),
              ("q", Q, axes[1], "queries: what each token looks for"))
    for role, vecs, ax, title in panels:
        color = ROLE_COLORS[role]
        groups, zeros = {}, []
        for t, v in zip(tokens, vecs):
            out["points"][(role, t)] = v
            if np.linalg.norm(v) == 0:
                zeros.append(t)
            else:
                groups.setdefault(tuple(np.round(v, 9)), []).append(t)
        kw = (dict(arrowstyle="-|>", lw=3.0, mutation_scale=20) if role == "k" else    # filled head
              dict(arrowstyle="->", lw=2.0, mutation_scale=16, linestyle=(0, (4, 2))))  # open head
        for p, names in groups.items():
            p = np.array(p)
            u = p / np.linalg.norm(p)
            n = np.array([-u[1], u[0]])
            if n @ ((lo + hi) / 2 - p) < 0:
                n = -n  # the arrow's side facing the middle of the panel, where there is room
            out["keys" if role == "k" else "queries"].append(
                ax.add_patch(FancyArrowPatch((0, 0), tuple(p), color=color, shrinkA=0, shrinkB=0, **kw)))
            ha = "right" if n[0] < -0.3 else "left" if n[0] > 0.3 else "center"
            va = "bottom" if n[1] > 0.3 else "top" if n[1] < -0.3 else "center"
            out["labels"][role].append(ax.text(*(p + gap * n - 0.5 * gap * u), ", ".join(names), color=color,
                                               ha=ha, va=va, fontsize=style.FONT_PT))
        if zeros:  # one ring and one label for the panel's zero vectors, away from its arrows
            ax.scatter(0, 0, s=60, facecolor="white", edgecolor="0.3", lw=1.5, zorder=4)
            tips = [np.array(p) for p in groups]
            best = None
            for d in np.array([[1, 1], [-1, 1], [1, -1], [-1, -1]]) / np.sqrt(2):
                at = 0.45 * span * d
                if not (np.all(at > lo + 0.1 * span) and np.all(at < hi - 0.1 * span)):
                    continue  # too near the frame
                clear = min((np.linalg.norm(at - max(0.0, min(1.0, at @ v / (v @ v))) * v) for v in tips),
                            default=np.inf)  # distance from the nearest arrow
                if best is None or clear > best[0] + 1e-9:
                    best = (clear, at, d)
            at, d = (best[1], best[2]) if best else (np.array([gap, -gap]), np.array([1, -1]))
            out["labels"][role].append(ax.annotate(
                "zero: " + ", ".join(zeros), xy=(0, 0), xytext=tuple(at), color="0.2",
                ha="left" if d[0] > 0 else "right", va="bottom" if d[1] > 0 else "top", fontsize=style.FONT_PT,
                arrowprops=dict(arrowstyle="-", color="0.5", lw=0.8, shrinkA=2, shrinkB=5)))
        ax.set(xlim=(lo[0], hi[0]), ylim=(lo[1], hi[1]), aspect="equal", xlabel=axis_names[0], title=title)
        ax.title.set_color(color)
        ax.axhline(0, color="0.8", lw=0.8, zorder=0)
        ax.axvline(0, color="0.8", lw=0.8, zorder=0)
    axes[0].set_ylabel(axis_names[1])
    axes[0].figure.tight_layout()
    return out
