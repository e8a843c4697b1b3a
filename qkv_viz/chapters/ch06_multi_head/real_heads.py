"""Trained heads from a real model beside random heads fed the same inputs.

The trained heads are picked by what they do (computed with
``qkv_viz.bridges.real_forward.head_patterns``), not by hand: for each pattern
(previous token, next token, [CLS]/[SEP], itself) the head of the whole model
that puts the most weight there on this sentence.
"""
from __future__ import annotations

import numpy as np

from qkv_viz.bridges.real_forward import Trace, head_patterns
from qkv_viz.core.multihead import init_multihead_params, multi_head_attention
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


def random_head_weights(trace: Trace, config, layer: int = 0, seed: int = 0) -> np.ndarray:
    """Attention weights (H, T, T) of a randomly initialised layer of the same shape as the
    model's, fed the model's own input to ``layer`` (``trace.hidden_states[layer]``)."""
    params = init_multihead_params(config, seed=seed)
    x = trace.hidden_states[layer]  # (T, d_model)
    _, weights = multi_head_attention(x, x, params, config.n_heads)  # (H, T, T)
    return weights


def random_twins(trace: Trace, config, picks, seed: int = 0) -> np.ndarray:
    """For each picked ``(pattern, layer, head, share)``: the same head of one random layer
    (``seed``), fed that trained head's own input ``trace.hidden_states[layer]``. (n, T, T)."""
    return np.stack([random_head_weights(trace, config, layer, seed)[head] for _, layer, head, _ in picks])


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
    return head_grid(maps, tokens_q=tokens, tokens_k=tokens, ncols=n,
                     titles=list(titles_trained) + list(titles_random))
