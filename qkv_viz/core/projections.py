"""Q, K, V as three linear views of the same tokens: Q = X W_q, K = X W_k, V = X W_v."""
from __future__ import annotations

import numpy as np

from .validate import as_array, as_rng, finite_result, positive_int, positive_number


def init_projection(d_in: int, d_out: int, seed=None, std: float | None = None) -> np.ndarray:
    """A (d_in, d_out) weight with N(0, std^2) entries.

    The default ``std = 1 / sqrt(d_in)`` keeps a projected vector's entries at
    about unit variance when the input's are (Xavier/LeCun style).
    ``std`` must be a finite number >= 0 (0 gives an all-zero matrix).
    ``seed`` is an int >= 0, a ``numpy.random.Generator`` or None (seed 0).
    """
    d_in, d_out = positive_int("d_in", d_in), positive_int("d_out", d_out)
    std = 1.0 / np.sqrt(d_in) if std is None else positive_number("std", std, allow_zero=True)
    W = as_rng(seed).normal(0.0, std, size=(d_in, d_out))  # (d_in, d_out)
    return finite_result("init_projection's weight", W, f"std={std:.3g} is too large")


def project(x, W, b=None, *, name: str = "W", x_name: str = "x") -> np.ndarray:
    """``x @ W + b``. Shapes: x (..., n, d_in), W (d_in, d_out), b (d_out,) -> (..., n, d_out).

    ``name`` and ``x_name`` are how W and x are called in error messages.
    """
    x = as_array(x_name, x, min_ndim=1)
    W = as_array(name, W, ndim=2)
    if x.shape[-1] != W.shape[0]:
        raise ValueError(
            f"{x_name}'s last axis must match {name}'s rows ({x.shape[-1]} vs {W.shape[0]}): "
            f"{x_name} has shape {x.shape}, {name} has shape {W.shape}. In the book's layout "
            f"{x_name} @ {name}, {name} is (d_in, d_out); torch's nn.Linear stores (d_out, d_in), "
            f"so a weight taken from torch needs .T")
    if b is not None:
        b = as_array(f"bias of {name}", b, ndim=1)
        if b.shape[0] != W.shape[1]:
            raise ValueError(f"b, the bias of {name}, has shape {b.shape}, expected ({W.shape[1]},): "
                             f"one entry per column of {name}")
    with np.errstate(over="ignore", invalid="ignore"):
        out = x @ W  # (..., n, d_in) @ (d_in, d_out) -> (..., n, d_out)
        out = out if b is None else out + b
    return finite_result(f"{x_name} @ {name}", out, f"largest |{x_name}| is {np.abs(x).max():.3g}, "
                         f"largest |{name}| is {np.abs(W).max():.3g}")


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
    """One fused matrix [W_q | W_k | W_v].

    Shapes: W_q (d_model, d_k), W_k (d_model, d_k), W_v (d_model, d_v) -> (d_model, 2 d_k + d_v).
    """
    mats = [as_array(n, w, ndim=2) for n, w in (("W_q", W_q), ("W_k", W_k), ("W_v", W_v))]
    rows = {m.shape[0] for m in mats}
    if len(rows) != 1:
        raise ValueError(f"W_q, W_k, W_v must have the same rows (d_model), got {[m.shape for m in mats]}")
    if mats[0].shape[1] != mats[1].shape[1]:
        raise ValueError(f"W_q and W_k must produce the same d_k so q . k is defined: "
                         f"W_q has shape {mats[0].shape}, W_k has shape {mats[1].shape}")
    return np.concatenate(mats, axis=1)  # 3 x (d_model, d) -> (d_model, 3d)


def fused_qkv_projections(x, W_qkv, d_k: int, d_v: int | None = None):
    """Q, K, V with a single matmul, then a split: same result as three matmuls.

    Shapes: x (..., n, d_model), W_qkv (d_model, 2 d_k + d_v) -> Q (..., n, d_k),
    K (..., n, d_k), V (..., n, d_v). ``d_v`` defaults to ``d_k``.
    """
    d_k = positive_int("d_k", d_k)
    d_v = d_k if d_v is None else positive_int("d_v", d_v)
    W_qkv = as_array("W_qkv", W_qkv, ndim=2)
    if W_qkv.shape[1] != 2 * d_k + d_v:
        raise ValueError(f"W_qkv has shape {W_qkv.shape}: {W_qkv.shape[1]} columns, expected "
                         f"2*d_k + d_v = {2 * d_k + d_v} for d_k={d_k}, d_v={d_v}")
    qkv = project(x, W_qkv, name="W_qkv")  # (..., n, d_model) @ (d_model, 2 d_k + d_v) -> (..., n, 2 d_k + d_v)
    return qkv[..., :d_k], qkv[..., d_k:2 * d_k], qkv[..., 2 * d_k:]
