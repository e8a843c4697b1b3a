"""Positions for attention: sinusoids added to X, and rotary positions (RoPE) on q and k.

Attention alone does not see order: permute the tokens and the outputs are the
same rows, permuted. Two ways to tell it where each token is:

* :func:`sinusoidal_positions` (the original Transformer): a vector ``P[m]`` of
  sines and cosines per position ``m``, added to the token's vector, ``X + P``.
* :func:`apply_rope` (rotary positions): each 2-D pair of a query's (or key's)
  coordinates is turned by the angle ``m * theta_i`` with
  ``theta_i = base ** (-2 i / d_k)``, so ``q_m . k_n`` depends on ``n - m`` only.

Two pairings are in use and give different numbers for the same vector:
``"adjacent"`` rotates coordinates ``(0, 1), (2, 3), ...`` (the RoPE paper,
GPT-J, Meta's original Llama code), ``"half"`` rotates ``(i, i + d_k/2)``
(GPT-NeoX and Hugging Face's Llama, ``rotate_half``). Shapes: ``T`` positions,
``d_k`` the query/key width (even), ``d_model`` the token width (even).
"""
from __future__ import annotations

import numpy as np

from .validate import as_array, positive_int, positive_number

PAIRINGS = ("adjacent", "half")


def _even_width(name: str, d: int, shape=None) -> int:
    if d % 2:
        where = f" (shape {tuple(shape)})" if shape is not None else ""
        raise ValueError(f"{name} must be even (coordinates are rotated in pairs), got {d}{where}")
    return d


def _base(base) -> float:
    return positive_number("base", base)


def rope_frequencies(d_k: int, base: float = 10000.0) -> np.ndarray:
    """The angle per position of each pair: ``theta_i = base ** (-2 i / d_k)``, shape (d_k/2,)."""
    d_k = _even_width("d_k", positive_int("d_k", d_k))
    return _base(base) ** (-np.arange(0, d_k, 2) / d_k)  # (d_k/2,): 1, ..., close to 1/base


def sinusoidal_positions(T: int, d_model: int, base: float = 10000.0) -> np.ndarray:
    """The original Transformer's position vectors, shape (T, d_model).

    ``P[m, 2i] = sin(m * w_i)`` and ``P[m, 2i + 1] = cos(m * w_i)`` with
    ``w_i = base ** (-2 i / d_model)``: pair ``i`` is a point on the unit circle
    turning with position at its own speed.
    """
    T = positive_int("T", T)
    d_model = _even_width("d_model", positive_int("d_model", d_model))
    w = _base(base) ** (-np.arange(0, d_model, 2) / d_model)  # (d_model/2,)
    angle = np.arange(T)[:, None] * w[None, :]                 # (T, 1) * (1, d_model/2) -> (T, d_model/2)
    P = np.empty((T, d_model))
    P[:, 0::2], P[:, 1::2] = np.sin(angle), np.cos(angle)
    return P


def _positions(positions, x: np.ndarray) -> np.ndarray:
    T = x.shape[-2]
    if positions is None:
        return np.arange(T, dtype=float)
    pos = as_array("positions", positions, ndim=1)
    if pos.shape[0] != T:
        raise ValueError(f"positions must have one entry per row of x: positions has shape {pos.shape}, "
                         f"x has shape {x.shape} ({T} rows)")
    return pos


def _pairing(pairing) -> str:
    if pairing not in PAIRINGS:
        raise ValueError(f"pairing must be one of {PAIRINGS}, got {pairing!r}")
    return pairing


def rope_cos_sin(positions, d_k: int, base: float = 10000.0):
    """``cos`` and ``sin`` of the angles ``m * theta_i``, each of shape (T, d_k/2)."""
    pos = as_array("positions", positions, ndim=1)
    angle = pos[:, None] * rope_frequencies(d_k, base)[None, :]  # (T, 1) * (1, d_k/2) -> (T, d_k/2)
    return np.cos(angle), np.sin(angle)


def pair_index(d_k: int, pairing: str = "adjacent"):
    """The coordinates of each rotated pair: ``(first, second)``, two int arrays of shape (d_k/2,).

    ``"adjacent"``: ``(0, 1), (2, 3), ...``; ``"half"``: ``(0, d_k/2), (1, d_k/2 + 1), ...``.
    Pair ``i`` turns at ``theta_i`` in both.
    """
    d_k = _even_width("d_k", positive_int("d_k", d_k))
    if _pairing(pairing) == "adjacent":
        return np.arange(0, d_k, 2), np.arange(1, d_k, 2)
    return np.arange(d_k // 2), np.arange(d_k // 2, d_k)


def apply_rope(x, positions=None, base: float = 10000.0, pairing: str = "adjacent") -> np.ndarray:
    """Rotate each pair of coordinates of ``x`` (..., T, d_k) by ``m * theta_i`` for row ``m``.

    ``positions`` (T,) gives each row's position (default ``0 .. T-1``; any real
    numbers). Pair ``i = (a, b)`` (see :func:`pair_index`) becomes
    ``(a cos - b sin, a sin + b cos)``. Lengths are kept; ``q_m . k_n`` of two
    rotated rows depends only on ``n - m``. Returns a new array of x's shape.
    """
    x = as_array("x", x, min_ndim=2)
    d_k = _even_width("x's last axis (d_k)", x.shape[-1], x.shape)
    pos = _positions(positions, x)
    first, second = pair_index(d_k, pairing)
    cos, sin = rope_cos_sin(pos, d_k, base)          # (T, d_k/2) each
    a, b = x[..., first], x[..., second]             # (..., T, d_k/2) each: the two halves of every pair
    out = np.empty_like(x)
    out[..., first] = a * cos - b * sin
    out[..., second] = a * sin + b * cos
    return out


def rope_matrix(position: float, d_k: int, base: float = 10000.0, pairing: str = "adjacent") -> np.ndarray:
    """The (d_k, d_k) rotation ``R_m`` with ``apply_rope(x)[m] == x[m] @ R_m.T`` (block rotations)."""
    pos = as_array("position", [position], ndim=1)
    first, second = pair_index(d_k, pairing)
    cos, sin = (c[0] for c in rope_cos_sin(pos, d_k, base))  # (d_k/2,) each
    R = np.zeros((d_k, d_k))
    R[first, first], R[first, second] = cos, -sin
    R[second, first], R[second, second] = sin, cos
    return R


def rope_dot(q, k, m: float, n: float, base: float = 10000.0, pairing: str = "adjacent") -> float:
    """``q_m . k_n``: the dot product of query ``q`` (d_k,) rotated to position m and key ``k`` to n."""
    q, k = as_array("q", q, ndim=1), as_array("k", k, ndim=1)
    if q.shape != k.shape:
        raise ValueError(f"q and k must have the same width d_k: q has shape {q.shape}, k has shape {k.shape}")
    qm = apply_rope(q[None, :], [m], base, pairing)[0]  # (d_k,)
    kn = apply_rope(k[None, :], [n], base, pairing)[0]  # (d_k,)
    return float(qm @ kn)


def rope_dots_by_offset(q, k, offsets, base: float = 10000.0, pairing: str = "adjacent") -> np.ndarray:
    """``q_0 . k_d`` for each offset ``d = n - m`` in ``offsets`` (D,), computed from the offset alone:
    pair i contributes ``|q_i| |k_i| cos(angle between them + d theta_i)``. Shape (D,)."""
    q, k = as_array("q", q, ndim=1), as_array("k", k, ndim=1)
    if q.shape != k.shape:
        raise ValueError(f"q and k must have the same width d_k: q has shape {q.shape}, k has shape {k.shape}")
    d = as_array("offsets", offsets, ndim=1)
    first, second = pair_index(q.shape[0], pairing)
    theta = rope_frequencies(q.shape[0], base)                      # (d_k/2,)
    dot = q[first] * k[first] + q[second] * k[second]               # (d_k/2,): pair by pair, q . k
    cross = q[first] * k[second] - q[second] * k[first]             # (d_k/2,): pair by pair, q x k
    angle = d[:, None] * theta[None, :]                             # (D, 1) * (1, d_k/2) -> (D, d_k/2)
    return np.cos(angle) @ dot - np.sin(angle) @ cross              # (D, d_k/2) @ (d_k/2,) -> (D,)
