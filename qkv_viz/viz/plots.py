"""Static matplotlib pictures of attention: weights, scores, metrics vs d_k.

Every function takes ``ax=None`` (a new small figure is made when omitted),
returns the artists it drew and never calls ``plt.show()``. Weights are
drawn on the fixed colour range 0..1 so two pictures can be compared by eye;
raw scores use a diverging colormap centred on 0.

Conventions: queries on rows (T), keys on columns (S).
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import NullLocator

from qkv_viz.core.validate import as_array

ANNOTATE_MAX_CELLS = 64  # annotate="auto" writes the numbers only up to 8 x 8


def _new_ax(ax, figsize=(4, 3.2)):
    if ax is None:
        _, ax = plt.subplots(figsize=figsize)
    return ax


def _check_tokens(name: str, tokens, n: int):
    if tokens is None:
        return None
    tokens = [str(t) for t in tokens]
    if len(tokens) != n:
        raise ValueError(f"{name} has {len(tokens)} labels but the matrix has {n} along that axis")
    return tokens


def _label_axes(ax, T: int, S: int, tokens_q, tokens_k):
    """Tick labels: token strings when given, else indices (thinned when long)."""
    tokens_q = _check_tokens("tokens_q", tokens_q, T)
    tokens_k = _check_tokens("tokens_k", tokens_k, S)
    if tokens_q is not None:
        ax.set_yticks(range(T), tokens_q)
    if tokens_k is not None:
        ax.set_xticks(range(S), tokens_k, rotation=90 if max(map(len, tokens_k)) > 2 else 0)
    ax.set_ylabel("query")
    ax.set_xlabel("key")


def _annotate(ax, matrix: np.ndarray, fmt: str, threshold: float):
    """Write each cell's value, dark text on light cells and vice versa."""
    texts = []
    for (i, j), value in np.ndenumerate(matrix):
        color = "black" if value > threshold else "white"
        texts.append(ax.text(j, i, format(value, fmt), ha="center", va="center",
                             fontsize=8, color=color))
    return texts


def _should_annotate(annotate, T: int, S: int) -> bool:
    if annotate is None or annotate == "auto":
        return T * S <= ANNOTATE_MAX_CELLS
    return bool(annotate)


def attention_heatmap(weights, ax=None, tokens_q=None, tokens_k=None, annotate=None,
                      title=None, vmin=0.0, vmax=1.0, cmap="viridis"):
    """Draw attention weights (T, S) as an image, queries on rows, keys on columns.

    ``annotate=None`` writes the values in the cells when T * S <= 64.
    Returns the ``AxesImage`` (its clim is (vmin, vmax), 0..1 by default).
    """
    weights = as_array("weights", weights, ndim=2)
    T, S = weights.shape
    ax = _new_ax(ax)
    im = ax.imshow(weights, cmap=cmap, vmin=vmin, vmax=vmax, interpolation="nearest",
                   aspect="auto")
    _label_axes(ax, T, S, tokens_q, tokens_k)
    if _should_annotate(annotate, T, S):
        _annotate(ax, weights, ".2f", threshold=vmin + 0.6 * (vmax - vmin))
    if title is not None:
        ax.set_title(title)
    return im


def scores_heatmap(scores, ax=None, tokens_q=None, tokens_k=None, annotate=None,
                   title=None, limit=None, cmap="RdBu_r"):
    """Draw raw scores (T, S) before softmax on a diverging, symmetric colour range.

    ``limit`` fixes the range to [-limit, limit]; by default it is the largest
    absolute score, so 0 is always the middle colour. Returns the ``AxesImage``.
    """
    scores = as_array("scores", scores, ndim=2)
    T, S = scores.shape
    if limit is None:
        limit = float(np.abs(scores).max()) or 1.0
    ax = _new_ax(ax)
    im = ax.imshow(scores, cmap=cmap, vmin=-limit, vmax=limit, interpolation="nearest",
                   aspect="auto")
    _label_axes(ax, T, S, tokens_q, tokens_k)
    if _should_annotate(annotate, T, S):
        texts = _annotate(ax, scores, ".1f", threshold=np.inf)
        for t, value in zip(texts, scores.ravel()):  # black text except on the darkest cells
            t.set_color("white" if abs(value) > 0.6 * limit else "black")
    if title is not None:
        ax.set_title(title)
    return im


def head_grid(weights, tokens_q=None, tokens_k=None, axes=None, ncols=4, titles=None):
    """Small multiples: one weights heatmap per head, weights (H, T, S).

    ``axes`` is a sequence of at least H axes; when None a figure with
    ``ncols`` columns is created (unused cells hidden). Returns the H images.
    """
    weights = as_array("weights", weights, ndim=3)
    H = weights.shape[0]
    if titles is not None and len(titles) != H:
        raise ValueError(f"titles has {len(titles)} entries but weights has H={H} heads")
    if axes is None:
        ncols = max(1, min(int(ncols), H))
        nrows = -(-H // ncols)
        _, grid = plt.subplots(nrows, ncols, figsize=(2.2 * ncols, 2.0 * nrows), squeeze=False)
        axes = list(grid.ravel())
        for ax in axes[H:]:
            ax.set_visible(False)
    axes = list(np.ravel(axes))
    if len(axes) < H:
        raise ValueError(f"got {len(axes)} axes for H={H} heads")
    images = []
    for h in range(H):
        title = titles[h] if titles is not None else f"head {h}"
        images.append(attention_heatmap(weights[h], ax=axes[h], tokens_q=tokens_q,
                                        tokens_k=tokens_k, annotate=False, title=title))
    return images


def metric_vs_dk(d_ks, values_scaled, values_unscaled, ax=None, label="metric", current=None):
    """Plot one metric against d_k (log2 axis): scaled and unscaled curves.

    ``d_ks`` (K,), ``values_scaled`` (K,), ``values_unscaled`` (K,). ``current``
    (a d_k in ``d_ks``) gets a marker on both curves. Returns the artists
    ``[scaled_line, unscaled_line]`` plus the marker line when ``current`` is set.
    """
    d_ks = as_array("d_ks", d_ks, ndim=1)
    scaled = as_array("values_scaled", values_scaled, ndim=1)
    unscaled = as_array("values_unscaled", values_unscaled, ndim=1)
    if not (d_ks.shape == scaled.shape == unscaled.shape):
        raise ValueError(f"d_ks {d_ks.shape}, values_scaled {scaled.shape} and "
                         f"values_unscaled {unscaled.shape} must have the same shape")
    ax = _new_ax(ax, figsize=(4, 3))
    (line_s,) = ax.plot(d_ks, scaled, "o-", ms=3, label=r"scaled $1/\sqrt{d_k}$")
    (line_u,) = ax.plot(d_ks, unscaled, "s--", ms=3, label="unscaled")
    ax.set_xscale("log", base=2)
    ticks = d_ks[::2] if d_ks.size > 6 else d_ks
    ax.set_xticks(ticks, [f"{t:g}" for t in ticks])  # plain 1, 4, 16 ... rather than 2^k
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlabel("$d_k$")
    ax.set_ylabel(label)
    ax.legend(fontsize=8)
    artists = [line_s, line_u]
    if current is not None:
        artists.append(_current_marker(ax, d_ks, scaled, unscaled, current))
    return artists


def _current_marker(ax, d_ks, scaled, unscaled, current):
    idx = np.flatnonzero(d_ks == current)
    if idx.size == 0:
        raise ValueError(f"current={current!r} is not one of d_ks {d_ks.astype(int).tolist()}")
    i = int(idx[0])
    (marker,) = ax.plot([current, current], [scaled[i], unscaled[i]], "o", ms=8,
                        mfc="none", mec="red", mew=1.5, label="_current")
    return marker
