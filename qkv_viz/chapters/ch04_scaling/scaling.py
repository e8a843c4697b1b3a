"""Chapter 4's measurements: why q . k grows with d_k and what softmax does then.

The chapter's page computes its numbers in numpy; these are the package's
versions of the same measurements, on seeded random vectors (numpy only), for
the pictures and for the tests that keep the page's claims true:
- ``diagnostics_vs_dk``: sharpness and gradient of attention rows against d_k;
- ``weights_at_dk``: one small (T, S) example for the pictures.
"""
from __future__ import annotations

import numpy as np

from qkv_viz.core.validate import as_rng, positive_int
from qkv_viz.core.attention import attention_scores, resolve_scale
from qkv_viz.core.diagnostics import summarize
from qkv_viz.core.softmax import softmax

DEFAULT_D_KS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


def _d_ks(d_ks) -> np.ndarray:
    """Key widths as an int array, each >= 1."""
    d_ks = [positive_int("d_ks entry", d) for d in np.ravel(np.asarray(d_ks)).tolist()]
    if not d_ks:
        raise ValueError("d_ks must hold at least one key width")
    return np.array(d_ks)


D_MAX = 1024  # the widest head: a width d_k takes the first d_k columns of one draw


def random_qk(d_k: int, T: int, S: int, seed=0):
    """Unit-variance Gaussian queries (T, d_k) and keys (S, d_k), as float64.

    One float32 draw of shape (T + S, D_MAX) per seed; a head of width d_k takes its
    first d_k columns. For T = S = n this is the scaling explorer's draw (``explorer.draw_qk``).
    """
    rng = as_rng(seed)
    d_k, T, S = positive_int("d_k", d_k), positive_int("T", T), positive_int("S", S)
    if d_k > D_MAX:
        raise ValueError(f"d_k must be <= {D_MAX}, got {d_k}")
    wide = rng.standard_normal((T + S, D_MAX), dtype=np.float32).astype(np.float64)  # (T + S, D_MAX)
    return wide[:T, :d_k], wide[T:, :d_k]


def weights_at_dk(d_k: int, T: int = 8, S: int = 8, seed=0, scale=True):
    """(scores, weights), each (T, S), for unit-variance q, k of width d_k."""
    q, k = random_qk(d_k, T, S, seed)
    scores = attention_scores(q, k, scale)  # (T, d_k) @ (d_k, S) -> (T, S), scaled or not
    return scores, softmax(scores)


def diagnostics_vs_dk(d_ks=DEFAULT_D_KS, T: int = 32, S: int = 32, seed=0, scale=True) -> dict:
    """``summarize`` of random attention rows for each d_k.

    Returns dict d_k (K,) and score_std, max_weight, entropy,
    effective_tokens, grad_norm, each (K,) (means over the T rows).
    """
    d_ks = _d_ks(d_ks)
    resolve_scale(scale, 1)  # validate early
    rows = []
    for d_k in d_ks:
        scores, weights = weights_at_dk(int(d_k), T, S, seed, scale)
        rows.append(summarize(scores, weights))
    out = {key: np.array([r[key] for r in rows]) for key in rows[0]}
    out["d_k"] = d_ks
    return out
