"""Q, K, V as three linear views of the same tokens: Q = X W_q, K = X W_k, V = X W_v."""
from __future__ import annotations

import numpy as np

from .validate import as_array, as_rng, positive_int


def init_projection(d_in: int, d_out: int, seed=None, std: float | None = None) -> np.ndarray:
    """A (d_in, d_out) weight with N(0, std^2) entries.

    The default ``std = 1 / sqrt(d_in)`` keeps a projected vector's entries at
    about unit variance when the input's are (Xavier/LeCun style).
    ``seed`` is an int, a ``numpy.random.Generator`` or None (seed 0).
    """
    d_in, d_out = positive_int("d_in", d_in), positive_int("d_out", d_out)
    std = 1.0 / np.sqrt(d_in) if std is None else float(std)
    return as_rng(seed).normal(0.0, std, size=(d_in, d_out))


def project(x, W, b=None, *, name: str = "W") -> np.ndarray:
    """``x @ W + b``. Shapes: x (..., n, d_in), W (d_in, d_out), b (d_out,) -> (..., n, d_out)."""
    x = as_array("x", x, min_ndim=1)
    W = as_array(name, W, ndim=2)
    if x.shape[-1] != W.shape[0]:
        raise ValueError(
            f"x's last axis must match {name}'s rows: x has shape {x.shape}, {name} has shape {W.shape}")
    out = x @ W  # (..., n, d_in) @ (d_in, d_out) -> (..., n, d_out)
    if b is not None:
        b = as_array(f"bias of {name}", b, ndim=1)
        if b.shape[0] != W.shape[1]:
            raise ValueError(f"bias of {name} has shape {b.shape}, expected ({W.shape[1]},)")
        out = out + b
    return out


def qkv_projections(x, W_q, W_k, W_v):
    """Q, K, V from one input. Shapes: x (n, d_model), W_q/W_k (d_model, d_k),
    W_v (d_model, d_v) -> Q (n, d_k), K (n, d_k), V (n, d_v)."""
    W_q = as_array("W_q", W_q, ndim=2)
    W_k = as_array("W_k", W_k, ndim=2)
    if W_q.shape[1] != W_k.shape[1]:
        raise ValueError(
            f"W_q and W_k must produce the same d_k so q . k is defined: "
            f"W_q has shape {W_q.shape}, W_k has shape {W_k.shape}")
    return project(x, W_q, name="W_q"), project(x, W_k, name="W_k"), project(x, W_v, name="W_v")


def fuse_qkv(W_q, W_k, W_v) -> np.ndarray:
    """One fused (d_model, d_q + d_k + d_v) matrix: [W_q | W_k | W_v]."""
    mats = [as_array(n, w, ndim=2) for n, w in (("W_q", W_q), ("W_k", W_k), ("W_v", W_v))]
    rows = {m.shape[0] for m in mats}
    if len(rows) != 1:
        raise ValueError(f"W_q, W_k, W_v must have the same rows (d_model), got {[m.shape for m in mats]}")
    return np.concatenate(mats, axis=1)  # 3 x (d_model, d) -> (d_model, 3d)


def fused_qkv_projections(x, W_qkv, d_k: int, d_v: int | None = None):
    """Q, K, V with a single matmul, then a split: same result as three matmuls."""
    d_v = d_k if d_v is None else d_v
    qkv = project(x, W_qkv, name="W_qkv")  # (n, d_model) @ (d_model, 2 d_k + d_v) -> (n, 2 d_k + d_v)
    if qkv.shape[-1] != 2 * d_k + d_v:
        raise ValueError(f"W_qkv has {qkv.shape[-1]} columns, expected 2*d_k + d_v = {2 * d_k + d_v}")
    return qkv[..., :d_k], qkv[..., d_k:2 * d_k], qkv[..., 2 * d_k:]
