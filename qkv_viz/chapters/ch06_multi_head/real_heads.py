"""Chapter 6's Going further: a trained model's heads beside random heads fed the same inputs.

The page picks the heads itself, in numpy (the mean weight on a pattern, over the queries
that have such a key, and the argmax over all heads); this module gives it each layer's
scores and draws the comparison.
"""
from __future__ import annotations

import numpy as np

from qkv_viz.core.multihead import split_heads
from qkv_viz.core.validate import as_array
from qkv_viz.viz import style
from qkv_viz.viz.plots import head_grid


def head_scores(x, params, n_heads: int) -> np.ndarray:
    """Scaled scores (H, T, T) of every head of one self-attention layer on x (T, d_model)."""
    x = as_array("x", x, ndim=2)
    q = split_heads(x @ params.W_q + (0 if params.b_q is None else params.b_q), n_heads)  # (H, T, d_k)
    k = split_heads(x @ params.W_k + (0 if params.b_k is None else params.b_k), n_heads)  # (H, T, d_k)
    return q @ k.swapaxes(-1, -2) / np.sqrt(q.shape[-1])  # (H, T, d_k) @ (H, d_k, T) -> (H, T, T)


PATTERNS = ("previous token", "next token", "[CLS] / [SEP]", "itself")


def share(w, pattern: str) -> np.ndarray:
    """Mean weight on the pattern's key, over the queries that have such a key: w (..., T, T) -> (...,).

    "previous token": key i-1 (queries 1..T-1); "next token": key i+1 (queries 0..T-2);
    "itself": key i; "[CLS] / [SEP]": the first and the last key together.
    """
    w = as_array("w", w)
    if w.ndim < 2 or w.shape[-1] != w.shape[-2]:
        raise ValueError(f"w must be (..., T, T) self-attention weights, got shape {w.shape}")
    if pattern == "previous token":
        return np.diagonal(w, -1, -2, -1).mean(-1)
    if pattern == "next token":
        return np.diagonal(w, 1, -2, -1).mean(-1)
    if pattern == "itself":
        return np.diagonal(w, 0, -2, -1).mean(-1)
    if pattern == "[CLS] / [SEP]":
        return (w[..., 0] + w[..., -1]).mean(-1)
    raise ValueError(f"pattern must be one of {PATTERNS}, got {pattern!r}")


def plot_trained_vs_random(trained, random, tokens, titles_trained, titles_random):
    """Trained heads on the top row, random heads below, on one shared colour bar (weights 0..1).

    ``trained``/``random``: (n, T, T) with the same n <= 4; the grid is the book's
    ``head_grid`` with n panels a row. Returns the 2n images.
    """
    trained, random = np.asarray(trained), np.asarray(random)
    n = trained.shape[0]
    if random.shape[0] != n or n > style.MAX_GRID_COLUMNS:
        raise ValueError(f"need the same number (<= {style.MAX_GRID_COLUMNS}) of trained and random "
                         f"heads, got {trained.shape} and {random.shape}")
    maps = np.concatenate([trained, random])  # (2n, T, T): row 1 trained, row 2 random
    tokens = [f"'{t}'" if len(t) == 1 and not t.isalnum() else t for t in tokens]  # a bare "." is invisible
    images = head_grid(maps, tokens_q=tokens, tokens_k=tokens, ncols=n,
                       titles=list(titles_trained) + list(titles_random))
    for im in images:  # one label size on both axes (the grid sizes each axis by its own pitch)
        for label in im.axes.get_xticklabels() + im.axes.get_yticklabels():
            label.set_fontsize(style.ANNOTATION_PT)
    return images
