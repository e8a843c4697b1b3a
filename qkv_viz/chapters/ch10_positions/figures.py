"""Chapter 10's pictures. Each takes ``ax=None`` (or ``axes``), returns its artists, never shows.

Queries are drawn in the book's QUERY_COLOR, keys in KEY_COLOR.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from qkv_viz.core.positions import apply_rope, pair_index, rope_dots_by_offset, rope_frequencies
from qkv_viz.core.validate import as_array
from qkv_viz.viz import style
from qkv_viz.viz.plots import scores_heatmap


def _axes(axes, n: int, aspect: float):
    if axes is None:
        _, axes = plt.subplots(1, n, figsize=style.figsize(1.0, aspect), layout="constrained")
    return np.atleast_1d(axes)


def plot_sinusoids(P, axes=None):
    """Left: the position vectors P (T, d_model) as rows. Right: P @ P.T, p_m . p_n for all m, n."""
    P = as_array("P", P, ndim=2)
    ax1, ax2 = _axes(axes, 2, 0.42)
    im1 = ax1.imshow(P, cmap=style.SCORES_CMAP, vmin=-1, vmax=1, aspect="auto", interpolation="nearest")
    ax1.figure.colorbar(im1, ax=ax1, fraction=0.05, pad=0.03, label="value")
    ax1.set(xlabel="coordinate (pairs: sin, cos)", ylabel="position m", title="position vectors $p_m$")
    G = P @ P.T  # (T, d_model) @ (d_model, T) -> (T, T)
    im2 = ax2.imshow(G, cmap=style.SCORES_CMAP, vmin=-np.abs(G).max(), vmax=np.abs(G).max(),
                     aspect="auto", interpolation="nearest")
    ax2.figure.colorbar(im2, ax=ax2, fraction=0.05, pad=0.03, label="$p_m \\cdot p_n$")
    ax2.set(xlabel="position n", ylabel="position m", title="$p_m \\cdot p_n$: constant along diagonals")
    return [im1, im2]


def plot_dot_grid(grid, ax=None, title=None, label="$q_m \\cdot k_n$"):
    """A (T, T) grid of q_m . k_n, rows m, columns n, on the book's diverging map."""
    grid = as_array("grid", grid, ndim=2)
    im = scores_heatmap(grid, ax=ax, annotate=False, title=title, colorbar_label=label)
    T, S = grid.shape
    ticks = lambda n: np.arange(0, n, 1 if n <= 10 else 5)  # no labels running together
    im.axes.set(xlabel="key position n", ylabel="query position m", xticks=ticks(S), yticks=ticks(T),
                xticklabels=ticks(S), yticklabels=ticks(T))
    return im


def plot_turning(q, k, m: float, n: float, base: float = 10000.0, pair: int = 0, ax=None,
                 pairing: str = "adjacent"):
    """Pair ``pair`` of q and k in its plane: faint at position 0, solid turned to m (q) and n (k).

    The angle between the solid arrows is the angle at position 0 plus (n - m) * theta_pair,
    so it is the same for every m with the same n - m. Title: the dot product of the pair.
    """
    q, k = as_array("q", q, ndim=1), as_array("k", k, ndim=1)
    d_k = q.shape[0]
    first, second = pair_index(d_k, pairing)
    a, b = first[pair], second[pair]
    qm = apply_rope(q[None], [m], base, pairing)[0][[a, b]]
    kn = apply_rope(k[None], [n], base, pairing)[0][[a, b]]
    if ax is None:
        _, ax = plt.subplots(figsize=style.figsize(0.42, 1.0))
    r = 1.15 * max(np.hypot(*q[[a, b]]), np.hypot(*k[[a, b]]))
    arts = [ax.add_patch(plt.Circle((0, 0), r / 1.15, fill=False, ls=":", color="#999"))]
    for vec, colour, name, pos, faint in ((q[[a, b]], style.QUERY_COLOR, "q", 0, True),
                                          (k[[a, b]], style.KEY_COLOR, "k", 0, True),
                                          (qm, style.QUERY_COLOR, "q", m, False),
                                          (kn, style.KEY_COLOR, "k", n, False)):
        arts.append(ax.annotate("", xy=tuple(vec), xytext=(0, 0), arrowprops=dict(
            arrowstyle="-|>", color=colour, lw=1 if faint else 2.2, alpha=0.35 if faint else 1,
            ls="--" if faint else "-")))
        if not faint:
            arts.append(ax.annotate(f"{name} at {pos:g}", tuple(vec), xytext=(4, 4), textcoords="offset points",
                                    color=colour, fontsize=style.FONT_PT, fontweight="bold"))
    theta = rope_frequencies(d_k, base)[pair]
    arts.append(ax.text(0.02, 0.02, "dashed: at position 0", transform=ax.transAxes, color="#555",
                        fontsize=style.ANNOTATION_PT))
    ax.set(xlim=(-r, r), ylim=(-r, r), aspect="equal", xticks=[], yticks=[],
           xlabel=f"coordinate {a}", ylabel=f"coordinate {b}")
    arts.append(ax.set_title(f"pair {pair} (θ = {theta:.3g} rad per position)\n"
                             f"m = {m:g}, n = {n:g}: pair's q·k = {qm @ kn:.3f}", fontsize=style.FONT_PT))
    return arts


def plot_frequencies_and_decay(d_k: int, base: float, distances, matching, unrelated, axes=None):
    """Left: theta_i per pair (log scale). Right: mean q_m . k_n / d_k against n - m."""
    ax1, ax2 = _axes(axes, 2, 0.38)
    theta = rope_frequencies(d_k, base)
    arts = [ax1.semilogy(np.arange(theta.size), theta, "o-", ms=3, color=style.QUERY_COLOR)[0]]
    ax1.set(xlabel="pair i", ylabel="θ_i (radians per position)",
            title=f"frequencies, d_k = {d_k}, base = {base:g}")
    arts.append(ax2.plot(distances, matching, color=style.QUERY_COLOR, label="key matches query (k = q)")[0])
    arts.append(ax2.plot(distances, unrelated, color=style.KEY_COLOR, label="unrelated random key")[0])
    ax2.axhline(0, color="#444", lw=0.8)
    ax2.set(xlabel="distance n − m", ylabel="mean $q_m \\cdot k_n$ / d_k",
            title="dot products fade with distance")
    ax2.legend(loc="upper right", frameon=False)
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
