"""Chapter 2 pictures: what the three projections *mean*.

- ``plot_token_to_qkv``: one token vector x becoming three vectors q, k, v,
  every entry written in its cell.
- ``frame_row_max``: frame each row's largest score on a heatmap.
- ``asymmetry``: how far W_q W_k^T is from symmetric (a number, for the tests and exercises).
- ``plot_learning``: the loss of the training run and W_q W_k^T before and after it.

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


def plot_learning(losses, M_start, M_end, features, axes=None):
    """The training run of "Learned, not designed": the loss per step (left), then
    M = W_q W_k^T (d_model, d_model) at the start and at the end, on one colour scale
    (rows: query features, columns: key features). ``axes``: three axes, or None for a
    new figure. Returns a dict: "loss" (the Line2D), "start" and "end" (the images)."""
    from qkv_viz.viz.plots import scores_heatmap

    losses = as_array("losses", losses, ndim=1)
    M_start, M_end = as_array("M_start", M_start, ndim=2), as_array("M_end", M_end, ndim=2)
    if M_start.shape != M_end.shape or M_start.shape != (len(features), len(features)):
        raise ValueError(f"M_start and M_end must both be (d_model, d_model) = ({len(features)}, {len(features)}) "
                         f"for {len(features)} features, got {M_start.shape} and {M_end.shape}")
    if axes is None:
        fig, axes = plt.subplots(1, 3, figsize=style.figsize(1.0, 0.36),
                                 gridspec_kw={"width_ratios": [0.8, 1, 1.25]})
    (line,) = axes[0].plot(np.arange(len(losses)), losses, color=style.QUERY_COLOR, lw=2)
    axes[0].set(xlabel="step", ylabel="loss", title="the loss")
    lim = float(max(np.abs(M_start).max(), np.abs(M_end).max())) or 1.0
    short = [f[:4] + "." if len(f) > 5 else f for f in features]  # "anim.", "thing", ...
    start = scores_heatmap(np.round(M_start, 1) + 0.0, ax=axes[1], tokens_q=short, tokens_k=short, limit=lim, colorbar=False,
                           title="$W_qW_k^\\top$ at step 0")
    end = scores_heatmap(np.round(M_end, 1) + 0.0, ax=axes[2], tokens_q=short, tokens_k=short, limit=lim,
                         title=f"$W_qW_k^\\top$ at step {len(losses) - 1}", colorbar_label="adds to the score")
    for ax in axes[1:]:
        ax.set_xlabel("key feature")
        ax.set_ylabel("query feature")
    axes[2].set_ylabel("")
    axes[0].figure.tight_layout()
    return {"loss": line, "start": start, "end": end}
