"""Chapter 8's helpers: the per-head split of a fused QKV result and its block-split bug (used by
the exercise and the split picture), and the fused-vs-separate timing (``benchmarks/``).

numpy only. The timing helper measures; tests never assert on its numbers.
"""
from __future__ import annotations

import time

import numpy as np

from qkv_viz.core.projections import fuse_qkv, init_projection
from qkv_viz.core.validate import as_array, as_rng, positive_int


def _per_head_input(name: str, a, n_heads) -> tuple[np.ndarray, int]:
    """``a`` as a 2-D float array whose width is 3 * n_heads * d_head; returns (a, d_head)."""
    a = as_array(name, a, ndim=2)
    n_heads = positive_int("n_heads", n_heads)
    if a.shape[1] % (3 * n_heads):
        raise ValueError(f"{name}'s width {a.shape[1]} (shape {a.shape}) is not 3 * n_heads = {3 * n_heads} "
                         f"times a head size")
    return a, a.shape[1] // (3 * n_heads)


def split_per_head(qkv, n_heads: int):
    """Split a per-head fused result (n, 3 H d_head), laid out (n, H, 3, d_head), into
    q, k, v of shape (H, n, d_head) each (heads first, ready for attention)."""
    qkv, d_head = _per_head_input("qkv", qkv, n_heads)
    n, width = qkv.shape
    q, k, v = qkv.reshape(n, n_heads, 3, d_head).transpose(2, 1, 0, 3)   # (n, H, 3, d_head) -> (3, H, n, d_head)
    return q, k, v


def split_per_head_as_blocks(qkv, n_heads: int):
    """The bug: the block split ``np.split(qkv, 3, axis=-1)`` (then heads) applied to a
    per-head layout. Same shapes as :func:`split_per_head`, no error, wrong columns."""
    qkv, d_head = _per_head_input("qkv", qkv, n_heads)
    n, width = qkv.shape
    return tuple(a.reshape(n, n_heads, d_head).transpose(1, 0, 2)   # (n, H d_head) -> (H, n, d_head)
                 for a in np.split(qkv, 3, axis=-1))


def _time_once(fn) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1e3


def time_fused_vs_separate(n: int = 512, d_model: int = 768, repeats: int = 7, seed=0) -> dict:
    """Median wall time (ms) of one fused matmul vs three separate ones.

    x (n, d_model); W_q, W_k, W_v (d_model, d_model); the fused matrix
    (d_model, 3 d_model) is built once, outside the timing. The two variants
    alternate inside each repeat so machine-load drift hits both alike. Raw
    ``@`` is timed (no input checks), float64, numpy's BLAS on this machine.
    Returns ``{"fused_ms", "separate_ms", "ratio" (separate / fused), "n",
    "d_model", "repeats"}``.
    """
    n, d_model, repeats = (positive_int(a, b) for a, b in (("n", n), ("d_model", d_model), ("repeats", repeats)))
    rng = as_rng(seed)
    x = rng.standard_normal((n, d_model))
    W_q, W_k, W_v = (init_projection(d_model, d_model, rng) for _ in range(3))
    W_qkv = fuse_qkv(W_q, W_k, W_v)  # (d_model, 3 d_model)
    fused = lambda: x @ W_qkv  # noqa: E731  (n, d_model) @ (d_model, 3 d_model) -> (n, 3 d_model)
    separate = lambda: (x @ W_q, x @ W_k, x @ W_v)  # noqa: E731  3 x (n, d_model) @ (d_model, d_model)
    fused(), separate()  # warm-up
    t_fused, t_sep = [], []
    for _ in range(repeats):
        t_fused.append(_time_once(fused))
        t_sep.append(_time_once(separate))
    f, s = float(np.median(t_fused)), float(np.median(t_sep))
    return {"fused_ms": f, "separate_ms": s, "ratio": s / f, "n": n, "d_model": d_model, "repeats": repeats}
