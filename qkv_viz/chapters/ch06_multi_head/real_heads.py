"""Trained heads from a real model beside random heads fed the same inputs (the best of as
many random heads, at the trained head's score spread).

The trained heads are picked by what they do (computed with
``qkv_viz.bridges.real_forward.head_patterns``), not by hand: for each pattern
(previous token, next token, [CLS]/[SEP], itself) the head of the whole model
that puts the most weight there on this sentence.
"""
from __future__ import annotations

import numpy as np

from qkv_viz.bridges.real_forward import Trace, head_patterns
from qkv_viz.core.attention import softmax
from qkv_viz.core.diagnostics import score_std
from qkv_viz.core.multihead import init_multihead_params, split_heads
from qkv_viz.core.validate import as_array
from qkv_viz.viz import style
from qkv_viz.viz.plots import head_grid

PATTERNS = {"previous": "previous token", "next": "next token",
            "special": "[CLS] / [SEP]", "self": "itself"}


def pick_heads(trace: Trace, patterns=tuple(PATTERNS)) -> list:
    """For each pattern, ``(pattern, layer, head, share)``: the head whose mean weight on
    that pattern is largest. ``share`` is that mean weight (0..1)."""
    found = head_patterns(trace)  # pattern -> (L, H)
    picks = []
    for name in patterns:
        table = found[name]
        layer, head = np.unravel_index(int(np.argmax(table)), table.shape)
        picks.append((name, int(layer), int(head), float(table[layer, head])))
    return picks


def head_scores(x, params, n_heads: int) -> np.ndarray:
    """Scaled scores (H, T, T) of every head of one self-attention layer on x (T, d_model)."""
    x = as_array("x", x, ndim=2)
    q = split_heads(x @ params.W_q + (0 if params.b_q is None else params.b_q), n_heads)  # (H, T, d_k)
    k = split_heads(x @ params.W_k + (0 if params.b_k is None else params.b_k), n_heads)  # (H, T, d_k)
    return q @ k.swapaxes(-1, -2) / np.sqrt(q.shape[-1])  # (H, T, d_k) @ (H, d_k, T) -> (H, T, T)


def pattern_share(weights, name: str) -> float:
    """Mean weight (over the queries) that one map (T, T) puts on ``name``'s key (see ``PATTERNS``)."""
    w = as_array("weights", weights, ndim=2)
    T = w.shape[-1]
    shares = {"special": lambda: (w[:, 0] + w[:, -1]).mean(), "previous": lambda: np.diagonal(w, -1).sum() / T,
              "self": lambda: np.diagonal(w).mean(), "next": lambda: np.diagonal(w, 1).sum() / T}
    if name not in shares:
        raise ValueError(f"pattern must be one of {sorted(shares)}, got {name!r}")
    return float(shares[name]())


def random_head_weights(trace: Trace, config, layer: int = 0, seed: int = 0) -> np.ndarray:
    """Attention weights (H, T, T) of a randomly initialised layer of the same shape as the
    model's, fed the model's own input to ``layer`` (``trace.hidden_states[layer]``)."""
    params = init_multihead_params(config, seed=seed)
    return softmax(head_scores(trace.hidden_states[layer], params, config.n_heads))  # (H, T, T)


def random_twin_scores(trace: Trace, config, picks, seed: int = 0) -> np.ndarray:
    """For each picked ``(pattern, layer, head, share)``: the scaled scores (T, T) of the same head
    of one random layer (``seed``), fed that trained head's own input ``trace.hidden_states[layer]``.
    Returns (n, T, T)."""
    params = init_multihead_params(config, seed=seed)
    return np.stack([head_scores(trace.hidden_states[layer], params, config.n_heads)[head]
                     for _, layer, head, _ in picks])


def random_twins(trace: Trace, config, picks, seed: int = 0, spreads=None) -> np.ndarray:
    """The weights (n, T, T) of ``random_twin_scores``.

    ``spreads`` (n,): when given, each twin's scores are first multiplied by one number so
    that their mean row std equals ``spreads[i]`` (e.g. the trained head's): the same size
    of scores, only their pattern left random.
    """
    scores = random_twin_scores(trace, config, picks, seed)  # (n, T, T)
    if spreads is not None:
        scores = scores * (np.asarray(spreads, dtype=float) / score_std(scores).mean(-1))[:, None, None]
    return softmax(scores)


def best_random_heads(trace: Trace, config, picks, spreads, seed: int = 0):
    """The fair control: for each picked ``(pattern, layer, head, share)``, the best of as many
    random heads as the trained one was picked from.

    One random layer per layer of the model (seeds ``seed``, ``seed + 1``, ...), each fed that
    layer's own input, gives L * H random heads. Each head's scores are scaled to the trained
    head's spread ``spreads[i]`` (mean row std), and the head with the most weight on the
    pattern is kept. Returns ``(weights (n, T, T), [(layer, head), ...], shares (n,))``.
    """
    scores = np.stack([head_scores(x, init_multihead_params(config, seed=seed + layer), config.n_heads)
                       for layer, x in enumerate(trace.hidden_states[:len(trace.weights)])])  # (L, H, T, T)
    raw = score_std(scores).mean(-1)                                                         # (L, H)
    maps, where, shares = [], [], []
    for (name, _, _, _), spread in zip(picks, np.asarray(spreads, dtype=float)):
        w = softmax(scores * (spread / raw)[..., None, None])                               # (L, H, T, T)
        table = np.array([[pattern_share(m, name) for m in layer] for layer in w])         # (L, H)
        layer, head = np.unravel_index(int(np.argmax(table)), table.shape)
        maps.append(w[layer, head])
        where.append((int(layer), int(head)))
        shares.append(float(table[layer, head]))
    return np.stack(maps), where, np.array(shares)


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
            label.set_fontsize(style.MIN_FONT_PT)
    return images
