"""How sharp is an attention row? Per-query diagnostics.

All functions work on the last axis: ``weights`` (..., T, S) -> (..., T).
``weights`` must be rows of probabilities (>= 0, each row summing to 1, as
softmax returns them); scores passed by mistake are refused, not measured.
"""
from __future__ import annotations

import numpy as np

from .validate import as_array, as_distribution


def _weights(weights) -> np.ndarray:
    return as_distribution("weights", weights)


def entropy(weights) -> np.ndarray:
    """Shannon entropy (nats) of each row: 0 for one-hot, log(S) for uniform.

    Shapes: weights (..., S) -> (...,)."""
    return _entropy(_weights(weights))


def _entropy(w: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(w > 0, w * np.log(w), 0.0)
    return np.maximum(-terms.sum(axis=-1), 0.0)  # >= 0; rounding of a one-hot row could dip below


def effective_tokens(weights) -> np.ndarray:
    """exp(entropy): how many keys a row effectively attends to (1 .. S).

    Shapes: weights (..., S) -> (...,)."""
    return np.exp(entropy(weights))


def max_weight(weights) -> np.ndarray:
    """Largest weight of each row: 1/S for uniform, 1 for one-hot.

    Shapes: weights (..., S) -> (...,)."""
    return _weights(weights).max(axis=-1)


def softmax_grad_norm(weights) -> np.ndarray:
    """Frobenius norm of the softmax Jacobian ``diag(p) - p p^T`` for each row.

    Computed without building the (S, S) matrix:
    ||J||_F^2 = sum_i p_i^2 (1 - p_i)^2 + sum_i p_i^2 sum_{j != i} p_j^2.
    It is 0 for a one-hot row (saturated: no gradient flows back to the
    scores) and about 1/sqrt(S) for a uniform row. Near one-hot, ``1 - p_max``
    and ``sum_{j != max} p_j^2`` are summed from the small entries rather than
    subtracted from 1, so the tiny gradients of saturated rows stay accurate.
    Shapes: weights (..., S) -> (...,).
    """
    return _grad_norm(_weights(weights))


def _grad_norm(p: np.ndarray) -> np.ndarray:
    top = p.argmax(axis=-1)[..., None]  # (..., 1) index of the largest weight
    is_top = np.arange(p.shape[-1]) == top  # (..., S)
    rest = np.where(is_top, 0.0, p)  # every weight but the largest
    one_minus = np.where(is_top, rest.sum(-1, keepdims=True), 1.0 - p)  # 1 - p_i
    sq = p ** 2
    others_sq = np.where(is_top, (rest ** 2).sum(-1, keepdims=True),
                         sq.sum(-1, keepdims=True) - sq)  # sum_{j != i} p_j^2
    return np.sqrt((sq * one_minus ** 2 + sq * others_sq).sum(-1))


def score_std(scores) -> np.ndarray:
    """Standard deviation of each row of scores (the logits before softmax).

    Shapes: scores (..., S) -> (...,). Rows whose squares overflow float64
    (entries near 1e300) are divided by their largest |entry| first, so the
    result stays finite and exact.
    """
    s = as_array("scores", scores)
    with np.errstate(over="ignore", invalid="ignore"):
        std = s.std(axis=-1)
    if np.all(np.isfinite(std)):
        return std
    top = np.abs(s).max(axis=-1, keepdims=True)  # (..., 1), > 0 wherever std overflowed
    top = np.where(top > 0, top, 1.0)
    return np.where(np.isfinite(std), std, (s / top).std(axis=-1) * top[..., 0])


def summarize(scores, weights) -> dict:
    """Means over all rows of the diagnostics above, as plain floats.

    Shapes: scores and weights both (..., T, S), weights = softmax(scores).
    Keys: score_std, max_weight, entropy, effective_tokens, grad_norm.
    """
    s, w = as_array("scores", scores), _weights(weights)  # checked once, measured five times
    if s.shape != w.shape:
        raise ValueError(f"scores and weights must have the same shape (weights = softmax(scores)): "
                         f"scores has shape {s.shape}, weights has shape {w.shape}")
    ent = _entropy(w)
    return {
        "score_std": float(np.mean(score_std(s))),
        "max_weight": float(np.mean(w.max(axis=-1))),
        "entropy": float(np.mean(ent)),
        "effective_tokens": float(np.mean(np.exp(ent))),
        "grad_norm": float(np.mean(_grad_norm(w))),
    }
