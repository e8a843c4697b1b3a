"""The numbers behind the scaling explorer (numpy only, no drawing).

Data model: for a seed, ``n_heads`` and a sequence length ``n`` we draw ONE
set of query and key vectors of the widest width ``D_MAX = 1024``,
q, k ~ N(0, 1) of shape (H, n, D_MAX). A smaller ``d_k`` takes the first
``d_k`` columns. So moving the d_k slider adds dimensions to the *same*
vectors instead of drawing new ones, and every picture is reproducible from
(seed, n_heads, n, d_k). The draw is made in float32 (half the memory at
n = 1024) and returned as float64.

Caching: the unscaled products q . k for all eleven d_k are computed once per
(seed, n_heads, n, head); the diagnostics at every (d_k, scale) - the
metric-vs-d_k curves - once per (seed, n_heads, n, head, temperature). A d_k
or scale step then costs at most one softmax (none for n <= 512, where the
weights are kept too).
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from qkv_viz.core.validate import positive_int, positive_number
from qkv_viz.core.attention import attention_scores, masked_softmax, resolve_scale
from qkv_viz.core.diagnostics import summarize

D_MAX = 1024
D_KS = tuple(2 ** i for i in range(11))  # 1, 2, 4, ..., 1024
N_MAX = 1024
HEADS_MAX = 8
KEEP_WEIGHTS_N = 512  # keep all 22 weight matrices in memory up to this n (44 MB)
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
    if not 0 <= head < n_heads:
        raise ValueError(f"head must be in 0..{n_heads - 1}, got {head!r}")


def draw_qk(seed: int, n_heads: int, n: int, d_k: int):
    """Queries and keys for the explorer: two float64 arrays (H, n, d_k)."""
    check_settings(n, d_k, seed, 1.0, n_heads)
    wide = _wide_draw(int(seed), int(n_heads), int(n))  # (2, H, n, D_MAX)
    q = wide[0, :, :, :d_k].astype(np.float64)  # (H, n, D_MAX) -> (H, n, d_k)
    k = wide[1, :, :, :d_k].astype(np.float64)
    return q, k


def _frozen(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False  # cached: callers must not change it in place
    return a


@lru_cache(maxsize=2)  # two explorers on one page do not evict each other
def _dots(seed: int, n_heads: int, n: int, head: int) -> tuple:
    """Unscaled q . k for every d_k in D_KS, one (n, n) matrix each (cached)."""
    out = []
    for d_k in D_KS:
        q, k = draw_qk(seed, n_heads, n, d_k)  # (H, n, d_k) each
        out.append(_frozen(attention_scores(q[head], k[head], False)))  # (n, d_k) @ (d_k, n) -> (n, n)
    return tuple(out)


def _scores(dots: np.ndarray, d_k: int, scale: bool) -> np.ndarray:
    # attention_scores computes (q @ k^T) * factor; dots is (q @ k^T) * 1.0,
    # so this product is bit-for-bit the same array.
    return dots * resolve_scale(bool(scale), d_k)


@lru_cache(maxsize=2)
def _sweep(seed: int, n_heads: int, n: int, head: int, temperature: float):
    """Summaries (and, for n <= KEEP_WEIGHTS_N, the weights) at every (d_k, scale)."""
    curves = {m: {"scaled": np.empty(len(D_KS)), "unscaled": np.empty(len(D_KS))} for m in METRICS}
    kept = {}
    for i, (d_k, dots) in enumerate(zip(D_KS, _dots(seed, n_heads, n, head))):
        for key, scale in (("scaled", True), ("unscaled", False)):
            scores = _scores(dots, d_k, scale)
            weights = masked_softmax(scores, None, temperature)
            summary = summarize(scores, weights)
            for m in METRICS:
                curves[m][key][i] = summary[m]
            if n <= KEEP_WEIGHTS_N:
                kept[d_k, scale] = (_frozen(scores), _frozen(weights), summary)
    return curves, kept


def dk_curves(seed, n_heads, n, temperature, head=0):
    """Every diagnostic at every d_k in ``D_KS``, scaled and unscaled.

    Returns ``{metric: {"scaled": (11,), "unscaled": (11,)}}`` with the
    metrics of ``diagnostics.summarize`` (means over the head's n rows).
    The first call for a new (seed, n_heads, n, head, temperature) costs 22
    softmaxes of (n, n) (a few seconds at n = 1024); later calls are cached.
    """
    check_settings(n, 1, seed, temperature, n_heads, head)
    curves, _ = _sweep(int(seed), int(n_heads), int(n), int(head), float(temperature))
    return curves


def head_attention(seed, n_heads, n, d_k, scale, temperature, head=0):
    """Scores, weights (n, n) and ``summarize`` dict of one head, via the math core.

    Same operations as ``scaled_dot_product_attention`` (``attention_scores``
    then ``masked_softmax``), so the weights are what it returns for
    ``draw_qk(seed, n_heads, n, d_k)``. Returned arrays are read-only
    (they may come from the cache of ``dk_curves``).
    """
    check_settings(n, d_k, seed, temperature, n_heads, head)
    key = (int(seed), int(n_heads), int(n), int(head), float(temperature))
    curves, kept = _sweep(*key)
    if (d_k, bool(scale)) in kept:
        scores, weights, summary = kept[d_k, bool(scale)]
        return scores, weights, dict(summary)
    scores = _scores(_dots(*key[:4])[D_KS.index(d_k)], d_k, scale)
    weights = masked_softmax(scores, None, temperature)
    i, col = D_KS.index(d_k), "scaled" if scale else "unscaled"
    summary = {m: float(curves[m][col][i]) for m in METRICS}  # summarize() of these very arrays
    return _frozen(scores), _frozen(weights), summary
