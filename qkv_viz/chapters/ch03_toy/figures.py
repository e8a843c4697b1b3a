"""Chapter 3 picture: an attention output is a point inside the triangle of the values.

``plot_value_triangle`` takes ``ax=None``, returns the artists and never calls
``plt.show()``. Values are drawn in the book's VALUE_COLOR, outputs in QUERY_COLOR
(each output belongs to the token whose query asked).
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Polygon

from qkv_viz.core.validate import as_array
from qkv_viz.viz import style


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


def plot_value_triangle(V, weights, ax=None, tokens=None, explain: int | None = 0):
    """Values V (3, 2) as a triangle; each output weights[i] @ V as a point inside it.

    ``weights`` (T, 3), rows summing to 1. Output ``explain`` gets dashed lines to
    the three corners, each line as thick as its weight (0..1 mapped to 0.5..5 pt),
    and the mix written as the title. Returns the artists.
    """
    V = as_array("V", V, ndim=2)
    weights = as_array("weights", weights, ndim=2)
    if V.shape != (3, 2):
        raise ValueError(f"V must be (3, 2): three values in the plane, got shape {V.shape}")
    if weights.shape[1] != 3:
        raise ValueError(f"weights must have 3 columns (one per value), got shape {weights.shape}")
    if not np.allclose(weights.sum(axis=1), 1.0):
        raise ValueError("each row of weights must sum to 1 (a softmax row)")
    T = weights.shape[0]
    tokens = [f"token {i + 1}" for i in range(max(T, 3))] if tokens is None else [str(t) for t in tokens]
    outputs = weights @ V  # (T, 3) @ (3, 2) -> (T, 2)
    if ax is None:
        _, ax = plt.subplots(figsize=style.figsize(0.6, 0.9))
    artists = [ax.add_patch(Polygon(V, closed=True, facecolor=style.VALUE_COLOR, alpha=0.12,
                                    edgecolor=style.VALUE_COLOR, lw=1.5))]
    centre = V.mean(axis=0)
    for j, v in enumerate(V):
        artists.append(ax.plot(*v, "o", color=style.VALUE_COLOR, ms=9)[0])
        above = 1.0 if v[1] >= centre[1] else -1.0  # label above the upper corners, below the others
        artists.append(ax.annotate(f"v{j + 1} = ({v[0]:g}, {v[1]:g})", tuple(v), xytext=(0, 14 * above),
                                   textcoords="offset points", ha="center", va="center",
                                   color=style.VALUE_COLOR, fontsize=style.FONT_PT, fontweight="bold"))
    if explain is not None:
        o = outputs[explain]
        for j, v in enumerate(V):
            artists.append(ax.plot([o[0], v[0]], [o[1], v[1]], "--", color=style.QUERY_COLOR,
                                   lw=0.5 + 4.5 * weights[explain, j], alpha=0.7)[0])
    for i, o in enumerate(outputs):
        artists.append(ax.plot(*o, "o", color=style.QUERY_COLOR, ms=7, mec="white", mew=1)[0])
        artists.append(ax.annotate(f"output {i + 1}", tuple(o), xytext=(-6, -5),
                                   textcoords="offset points", ha="right", va="top",
                                   color=style.QUERY_COLOR, fontsize=style.FONT_PT))
    if explain is not None:
        mix = " + ".join(f"{w:.2f} v{j + 1}" for j, w in enumerate(weights[explain]))
        o = outputs[explain]
        artists.append(ax.set_title(f"output {explain + 1} = {mix}\n= ({o[0]:.2f}, {o[1]:.2f})",
                                    color=style.QUERY_COLOR, fontsize=style.FONT_PT, family="monospace"))
    span = np.ptp(V, axis=0).max()
    lo, hi = V.min(axis=0) - 0.3 * span, V.max(axis=0) + 0.3 * span
    ax.set(xlim=(lo[0], hi[0]), ylim=(lo[1], hi[1]), aspect="equal",
           xlabel="value coordinate 1", ylabel="value coordinate 2")
    return artists
