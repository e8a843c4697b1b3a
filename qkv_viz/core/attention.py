"""Scaled dot-product attention, masks included.

Notation: T queries, S keys/values, ``d_k`` the query/key width, ``d_v`` the
value width. Any number of leading batch/head dimensions (...) is allowed and
broadcast. Masks are boolean with True = "may attend", as in torch.
"""
from __future__ import annotations

import numbers

import numpy as np

from .validate import as_array, positive_int, positive_number
from .softmax import softmax


def resolve_scale(scale, d_k: int) -> float:
    """Turn the ``scale`` argument into the factor applied to ``q . k``.

    ``True`` -> ``1 / sqrt(d_k)`` (the paper), ``False`` or ``None`` -> 1
    (no scaling), a positive number -> that number.
    """
    if scale is True:
        return 1.0 / np.sqrt(d_k)
    if scale is False or scale is None:
        return 1.0
    if isinstance(scale, numbers.Real) and np.isfinite(scale) and scale > 0:
        return float(scale)
    raise ValueError(f"scale must be True, False or a finite number > 0, got {scale!r}")


def _check_qkv(q, k, v):
    q = as_array("q", q, min_ndim=2)
    k = as_array("k", k, min_ndim=2)
    v = as_array("v", v, min_ndim=2)
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"q and k must share d_k (last axis) for the dot product: "
            f"q has shape {q.shape}, k has shape {k.shape}")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(
            f"k and v must have the same number of positions (axis -2): "
            f"k has shape {k.shape}, v has shape {v.shape}")
    try:
        np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except ValueError:
        raise ValueError(
            f"leading (batch/head) dimensions of q {q.shape}, k {k.shape} and v {v.shape} "
            f"do not broadcast") from None
    return q, k, v


def check_mask(mask, scores_shape: tuple) -> np.ndarray:
    """Validate a boolean mask against scores of shape (..., T, S)."""
    mask = np.asarray(mask)
    if mask.dtype != bool:
        raise TypeError(f"mask must be boolean (True = may attend), got dtype {mask.dtype}")
    try:
        np.broadcast_shapes(mask.shape, scores_shape)
    except ValueError:
        raise ValueError(
            f"mask of shape {mask.shape} does not broadcast to the scores' shape "
            f"{scores_shape} (queries x keys)") from None
    if mask.ndim < 1:
        raise ValueError(f"mask must have at least 1 dimension, got shape {mask.shape}")
    return mask


def attention_scores(q, k, scale=True) -> np.ndarray:
    """Scores ``scale * q @ k^T`` before softmax.

    Shapes: q (..., T, d_k), k (..., S, d_k) -> (..., T, S).
    """
    q = as_array("q", q, min_ndim=2)
    k = as_array("k", k, min_ndim=2)
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q and k must share d_k: q has shape {q.shape}, k has shape {k.shape}")
    factor = resolve_scale(scale, q.shape[-1])
    return (q @ k.swapaxes(-1, -2)) * factor  # (..., T, d_k) @ (..., d_k, S) -> (..., T, S)


def masked_softmax(scores, mask=None, temperature: float = 1.0) -> np.ndarray:
    """Softmax over the last axis, giving weight 0 to masked-out keys.

    A row whose keys are *all* masked has nothing to attend to; it gets all
    zero weights (and so a zero output), never NaN. torch 2.13's
    ``scaled_dot_product_attention`` gives the same zero output
    (tests/test_attention.py checks it).
    """
    if mask is None:
        return softmax(scores, axis=-1, temperature=temperature)
    temperature = positive_number("temperature", temperature)
    scores = as_array("scores", scores)
    mask = np.broadcast_to(check_mask(mask, scores.shape), scores.shape)
    filled = np.where(mask, scores, -np.inf)
    row_max = filled.max(axis=-1, keepdims=True)
    any_key = np.isfinite(row_max)  # False where the whole row is masked
    shifted = np.where(mask, (scores - np.where(any_key, row_max, 0.0)) / temperature, -np.inf)
    e = np.exp(shifted)  # exp(-inf) = 0 for masked keys
    total = e.sum(axis=-1, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


def scaled_dot_product_attention(q, k, v, mask=None, scale=True, temperature: float = 1.0):
    """Attention(Q, K, V) = softmax(scale * Q K^T / temperature) V.

    Shapes: q (..., T, d_k), k (..., S, d_k), v (..., S, d_v),
    mask broadcastable to (..., T, S), True = may attend.
    Returns ``(output, weights)``: (..., T, d_v) and (..., T, S).
    A fully masked query row gets zero weights and a zero output.
    """
    q, k, v = _check_qkv(q, k, v)
    scores = attention_scores(q, k, scale)  # (..., T, S)
    weights = masked_softmax(scores, mask, temperature)  # checks the mask against (..., T, S)
    output = weights @ v  # (..., T, S) @ (..., S, d_v) -> (..., T, d_v)
    return output, weights


def causal_mask(T: int, S: int | None = None) -> np.ndarray:
    """Lower-triangular mask: query i may attend to keys 0..i (+ S - T offset).

    Shape (T, S), S defaults to T. With S > T the queries are taken to be the
    last T positions (as when decoding with a cache).
    """
    T = positive_int("T", T)
    S = T if S is None else positive_int("S", S)
    return np.tril(np.ones((T, S), dtype=bool), k=S - T)


def padding_mask(lengths, S: int) -> np.ndarray:
    """Key-padding mask from true sequence lengths.

    ``lengths`` (B,) of ints in 0..S -> mask (B, 1, S), True for real tokens;
    the middle axis broadcasts over queries.
    """
    S = positive_int("S", S)
    lengths = np.asarray(lengths)
    if lengths.ndim != 1 or not np.issubdtype(lengths.dtype, np.integer):
        raise ValueError(f"lengths must be a 1-D array of ints, got shape {lengths.shape}, dtype {lengths.dtype}")
    if np.any(lengths < 0) or np.any(lengths > S):
        raise ValueError(f"lengths must lie in 0..S={S}, got {lengths.tolist()}")
    return (np.arange(S)[None, :] < lengths[:, None])[:, None, :]  # (B, S) -> (B, 1, S)
