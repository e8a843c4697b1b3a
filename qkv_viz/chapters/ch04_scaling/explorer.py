"""The data behind the scaling explorer, and its numbers from the math core.

Data model: for a seed, ``n_heads`` and a sequence length ``n`` we draw ONE
set of query and key vectors of the widest width ``D_MAX = 1024``,
q, k ~ N(0, 1) of shape (H, n, D_MAX), in float32. A smaller ``d_k`` takes
the first ``d_k`` columns, so moving the d_k slider adds dimensions to the
*same* vectors instead of drawing new ones.

The live figure computes every step in the browser (``qkv_viz/viz/js/explorer.js``).
Python has no second implementation of that maths: ``head_attention`` and
``dk_curves`` call ``qkv_viz.core`` (``attention_scores``, ``masked_softmax``,
``summarize``) on the drawn vectors; the widget's still picture and the tests
use them.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from qkv_viz.core.attention import attention_scores, masked_softmax
from qkv_viz.core.diagnostics import summarize
from qkv_viz.core.validate import positive_int, positive_number

D_MAX = 1024
D_KS = tuple(2 ** i for i in range(11))  # 1, 2, 4, ..., 1024
N_MAX = 1024
HEADS_MAX = 8
METRICS = ("score_std", "max_weight", "entropy", "effective_tokens", "grad_norm")


@lru_cache(maxsize=2)
def _wide_draw(seed: int, n_heads: int, n: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.standard_normal((2, n_heads, n, D_MAX), dtype=np.float32)  # (q|k, H, n, D_MAX)


def check_settings(n, d_k, seed, temperature, n_heads=1, head=0):
    """Validate explorer settings; raise ValueError/TypeError naming the bad one."""
    n = positive_int("sequence length n", n)
    if n > N_MAX:
        raise ValueError(f"sequence length n must be <= {N_MAX}, got {n}")
    if d_k not in D_KS:
        raise ValueError(f"d_k must be a power of two in 1..{D_MAX}, got {d_k!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0, got {seed!r}")
    positive_number("temperature", temperature)
    n_heads = positive_int("n_heads", n_heads)
    if n_heads > HEADS_MAX:
        raise ValueError(f"n_heads must be <= {HEADS_MAX}, got {n_heads}")
    if isinstance(head, bool) or not isinstance(head, (int, np.integer)) or not 0 <= head < n_heads:
        raise ValueError(f"head must be an integer in 0..{n_heads - 1}, got {head!r}")


def draw_qk(seed: int, n_heads: int, n: int, d_k: int):
    """Queries and keys for the explorer: two float64 arrays (H, n, d_k)."""
    check_settings(n, d_k, seed, 1.0, n_heads)
    wide = _wide_draw(int(seed), int(n_heads), int(n))  # (2, H, n, D_MAX)
    q = wide[0, :, :, :d_k].astype(np.float64)  # (H, n, D_MAX) -> (H, n, d_k)
    k = wide[1, :, :, :d_k].astype(np.float64)
    return q, k


def head_attention(seed, n_heads, n, d_k, scale, temperature, head=0):
    """Scores, weights (n, n) and the ``summarize`` dict of one head, from the math core.

    The same operations as ``scaled_dot_product_attention`` on
    ``draw_qk(seed, n_heads, n, d_k)[:, head]``.
    """
    check_settings(n, d_k, seed, temperature, n_heads, head)
    q, k = draw_qk(seed, n_heads, n, d_k)  # (H, n, d_k) each
    scores = attention_scores(q[head], k[head], bool(scale))  # (n, d_k) @ (d_k, n) -> (n, n)
    weights = masked_softmax(scores, None, temperature)  # (n, n), rows sum to 1
    return scores, weights, summarize(scores, weights)


def dk_curves(seed, n_heads, n, temperature, head=0):
    """Every diagnostic at every d_k in ``D_KS``, scaled and unscaled.

    Returns ``{metric: {"scaled": (11,), "unscaled": (11,)}}`` with the
    metrics of ``diagnostics.summarize`` (means over the head's n rows):
    22 calls of :func:`head_attention`.
    """
    curves = {m: {"scaled": np.empty(len(D_KS)), "unscaled": np.empty(len(D_KS))} for m in METRICS}
    for i, d_k in enumerate(D_KS):
        for key, scale in (("scaled", True), ("unscaled", False)):
            summary = head_attention(seed, n_heads, n, d_k, scale, temperature, head)[2]
            for m in METRICS:
                curves[m][key][i] = summary[m]
    return curves
