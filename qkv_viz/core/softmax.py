"""Softmax: the stable version the book uses, and the naive one it warns about."""
from __future__ import annotations

import numpy as np

from .validate import as_array, as_distribution, axis_index, positive_number


def softmax(x, axis: int = -1, temperature: float = 1.0) -> np.ndarray:
    """Numerically stable softmax of ``x / temperature`` along ``axis``.

    Subtracting the row maximum before ``exp`` changes nothing mathematically
    (softmax is shift-invariant) but keeps every exponent <= 0, so logits of
    1e6 give a finite one-hot row instead of ``inf / inf = NaN``.

    Shapes: ``x`` any shape (..., n); the result has the same shape and sums
    to 1 along ``axis``.
    """
    x = as_array("x", x)
    axis = axis_index("axis", axis, x.ndim)
    t = positive_number("temperature", temperature)
    # Shift first, then divide: (x - max) <= 0, so even a tiny temperature
    # only sends the others to -inf (weight 0), never inf - inf = NaN.
    with np.errstate(over="ignore"):
        z = (x - x.max(axis=axis, keepdims=True)) / t  # largest exponent is now exp(0) = 1
    e = np.exp(z)
    return e / e.sum(axis=axis, keepdims=True)


def naive_softmax(x, axis: int = -1) -> np.ndarray:
    """Textbook ``exp(x) / sum(exp(x))`` with no max-subtraction.

    For teaching only: it overflows to NaN once a logit passes about 709.
    Overflow warnings are silenced so the NaN itself is what the reader sees.
    Shapes: ``x`` (..., n) -> same shape. Its input is checked like
    ``softmax``'s (finite numbers); only its output may hold NaN, on purpose.
    """
    x = as_array("x", x)
    axis = axis_index("axis", axis, x.ndim)
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(x)
        return e / e.sum(axis=axis, keepdims=True)


def softmax_jacobian(p) -> np.ndarray:
    """Jacobian of softmax at output ``p``: ``diag(p) - p p^T``.

    Shapes: ``p`` (..., n) -> (..., n, n). Entry [i, j] is d p_i / d s_j.
    Each row of ``p`` must be a probability distribution (>= 0, summing to 1):
    the formula only holds at an output of softmax.
    """
    p = as_distribution("p", p)
    eye = np.eye(p.shape[-1])
    outer = p[..., :, None] * p[..., None, :]  # (..., n, 1) * (..., 1, n) -> (..., n, n)
    return p[..., :, None] * eye - outer
