"""Chapter 1 pictures: the library's keys and query, and the weights over its books.

``plot_library``, ``plot_weight_bars``, ``library_small_multiples`` take ``ax=None``,
return the artists and never call ``plt.show()``. The interactive version is in ``widget``.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from qkv_viz.chapters.ch01_library.library import KEY_AXES, soft_lookup

QUERY_COLOR, KEY_COLOR = "tab:red", "tab:blue"


# ---------------------------------------------------------------- pictures
def plot_library(library, query, ax=None, weights=None):
    """Keys as blue arrows from the origin (thicker = more weight), the query in red.

    Arrows are numbered like the books (1 = first title); only the first two
    key coordinates are drawn. Returns the arrows and labels.
    """
    if ax is None:
        _, ax = plt.subplots(figsize=(3.6, 3.2))
    weights = np.full(library.n_books, 0.5) if weights is None else np.asarray(weights)
    artists = []
    for i, ((x, y), w) in enumerate(zip(library.keys[:, :2], weights)):
        artists.append(ax.annotate("", (x, y), (0, 0), arrowprops=dict(
            arrowstyle="->", color=KEY_COLOR, lw=0.8 + 3 * w, alpha=0.35 + 0.65 * w)))
        artists.append(ax.text(x, y, f"{i + 1}", fontsize=9, color=KEY_COLOR,
                               ha="left" if x >= 0 else "right", va="bottom"))
    qx, qy = np.asarray(query, dtype=float)[:2]
    artists.append(ax.annotate("", (qx, qy), (0, 0), arrowprops=dict(
        arrowstyle="-|>", color=QUERY_COLOR, lw=2.5)))
    artists.append(ax.text(qx, qy, " query", fontsize=9, color=QUERY_COLOR, va="top"))
    lim = 1.25 * max(np.abs(library.keys[:, :2]).max(), np.abs([qx, qy]).max())
    ax.set(xlim=(-lim, lim), ylim=(-lim, lim), aspect="equal",
           xlabel=f"key[0]: {KEY_AXES[0]}", ylabel=f"key[1]: {KEY_AXES[1]}")
    ax.axhline(0, color="0.85", lw=0.5)
    ax.axvline(0, color="0.85", lw=0.5)
    return artists


def plot_weight_bars(weights, titles, ax=None, title=None):
    """Horizontal bars of the weights on a fixed 0..1 axis. Returns the BarContainer."""
    if ax is None:
        _, ax = plt.subplots(figsize=(3, 2.4))
    weights = np.asarray(weights, dtype=float)
    bars = ax.barh(range(len(weights)), weights, color=KEY_COLOR)
    ax.set(xlim=(0, 1), yticks=range(len(weights)), xlabel="weight")
    ax.set_yticklabels(titles, fontsize=8)
    ax.invert_yaxis()  # first book on top
    for i, w in enumerate(weights):
        ax.text(min(w, 0.8) + 0.02, i, f"{w:.2f}", va="center", fontsize=7)
    if title is not None:
        ax.set_title(title, fontsize=9)
    return bars


def numbered_titles(library) -> list:
    """'1 Title', '2 Title', ...: the labels that match ``plot_library``'s arrows."""
    return [f"{i + 1} {t}" for i, t in enumerate(library.titles)]


def library_small_multiples(library, query, temperatures, axes=None):
    """The library picture, then one bar chart of weights per temperature.

    axes: ``1 + len(temperatures)`` Axes, or None for a new (9, 3) figure.
    Returns the list of artists (``artists[0].figure`` is the figure).
    """
    if axes is None:
        _, axes = plt.subplots(1, 1 + len(temperatures), figsize=(9, 3), layout="constrained",
                               gridspec_kw=dict(width_ratios=[1.5] + [1] * len(temperatures)))
    artists = plot_library(library, query, ax=axes[0])
    labels = numbered_titles(library)
    for i, (t, ax) in enumerate(zip(temperatures, axes[1:])):
        w = soft_lookup(query, library, t)[1]
        artists.append(plot_weight_bars(w, labels if i == 0 else [""] * len(w),
                                        ax=ax, title=f"temperature {t:g}"))
    return artists
