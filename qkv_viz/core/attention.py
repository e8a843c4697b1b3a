"""Scaled dot-product attention, masks included.

Notation: T queries, S keys/values, ``d_k`` the query/key width, ``d_v`` the
value width. Any number of leading batch/head dimensions (...) is allowed and
broadcast. Masks are boolean with True = "may attend", as in torch.
"""
from __future__ import annotations

import numbers

import numpy as np

from .validate import as_array, finite_result, positive_int, positive_number
from .softmax import softmax


def resolve_scale(scale, d_k: int) -> float:
    """Turn the ``scale`` argument into the factor applied to ``q . k``.

    This is the one place where ``scale`` is defined; every function taking a
    ``scale`` (``attention_scores``, ``scaled_dot_product_attention``,
    ``multi_head_attention``) follows it:

    - ``True`` (or ``np.True_``) -> ``1 / sqrt(d_k)``, the paper's scaling;
    - ``False``, ``np.False_`` or ``None`` -> ``1``, no scaling;
    - a finite real number > 0 (int, float, numpy scalar) -> that factor.
      So ``scale=1`` is a factor of one, the same as ``False``: only the bool
      ``True`` means "the paper's 1/sqrt(d_k)".

    Anything else is refused: 0, negatives, NaN and inf (``ValueError``: they
    would erase, flip or blow up the scores), strings, arrays and complex
    numbers (``TypeError``). ``d_k`` must be an integer >= 1.
    """
    d_k = positive_int("d_k", d_k)
    if isinstance(scale, (bool, np.bool_)):
        return 1.0 / np.sqrt(d_k) if scale else 1.0
    if scale is None:
        return 1.0
    if not isinstance(scale, numbers.Real):
        raise TypeError(
            f"scale must be True (1/sqrt(d_k)), False or None (no scaling) or a number > 0, "
            f"got {type(scale).__name__}: {scale!r}")
    if not (np.isfinite(scale) and scale > 0):
        raise ValueError(
            f"scale must be True (1/sqrt(d_k)), False or None (no scaling) or a finite number > 0, "
            f"got {scale!r}: 0 would erase the scores, a negative factor would flip them")
    return float(scale)


def _check_d_k(q, k):
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"q and k must share d_k (last axis) for the dot product: "
            f"q has shape {q.shape}, k has shape {k.shape}")


def _check_batch(*named) -> tuple:
    """Broadcast the leading (batch/head) axes of (name, array) pairs, or say which clash."""
    try:
        return np.broadcast_shapes(*(a.shape[:-2] for a in named[1::2]))
    except ValueError:
        shapes = ", ".join(f"{n} {a.shape}" for n, a in zip(named[::2], named[1::2]))
        raise ValueError(
            f"leading (batch/head) dimensions of {shapes} do not broadcast: each must be 1 or "
            f"equal, aligned from the right (the last two axes are positions and width)") from None


def _check_qkv(q, k, v):
    q = as_array("q", q, min_ndim=2)
    k = as_array("k", k, min_ndim=2)
    v = as_array("v", v, min_ndim=2)
    _check_d_k(q, k)
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(
            f"k and v must have the same number of positions (axis -2): "
            f"k has shape {k.shape}, v has shape {v.shape}")
    _check_batch("q", q, "k", k, "v", v)
    return q, k, v


def as_mask(mask) -> np.ndarray:
    """``mask`` as a boolean array (True = may attend), or a ``TypeError``."""
    try:
        mask = np.asarray(mask)
    except Exception as exc:  # ragged lists and the like
        raise TypeError(f"mask must be a boolean array, could not convert it: {exc}") from exc
    if mask.dtype != bool:
        raise TypeError(f"mask must be boolean (True = may attend), got dtype {mask.dtype}; "
                        f"build it with a comparison, e.g. np.arange(S) < length")
    return mask


def check_mask(mask, scores_shape: tuple) -> np.ndarray:
    """Validate a boolean mask for scores of shape (..., T, S); return it as an array.

    The mask must broadcast *to* the scores' shape: each of its axes, aligned
    from the right, is 1 or equal to the scores' axis. A mask of 1 or 2
    dimensions, (S,) or (T, S), is shared by every batch item and head; a mask
    with leading (batch/head) axes must have as many dimensions as the scores,
    so that a batch axis can never silently line up with a head axis.
    """
    mask = as_mask(mask)
    shape, nd = tuple(scores_shape), len(scores_shape)
    if mask.ndim < 1:
        raise ValueError(f"mask must have at least 1 dimension (keys), got shape {mask.shape}")
    if mask.ndim > nd or (mask.ndim > 2 and mask.ndim != nd):
        raise ValueError(
            f"mask of shape {mask.shape} has {mask.ndim} dimensions, the scores have {nd} dimensions "
            f"(shape {shape}: ..., T queries, S keys). Give (T, S) or (S,) to share it, or spell out "
            f"every leading axis with 1 where it is shared: a key-padding mask for (B, H, T, S) "
            f"scores is (B, 1, 1, S), e.g. padding_mask(lengths, S, scores_ndim=4) or mask[:, None].")
    if any(m not in (1, s) for m, s in zip(mask.shape[::-1], shape[::-1])):
        raise ValueError(
            f"mask of shape {mask.shape} does not fit scores of shape {shape} (..., T queries, S keys): "
            f"each mask axis, aligned from the right, must be 1 or equal to the scores' axis")
    return mask


def attention_scores(q, k, scale=True) -> np.ndarray:
    """Scores ``scale * q @ k^T`` before softmax.

    Shapes: q (..., T, d_k), k (..., S, d_k) -> (..., T, S); leading axes broadcast.
    ``scale``: see ``resolve_scale`` (True = 1/sqrt(d_k)). Scores beyond float64's
    range are refused rather than returned as inf.
    """
    q = as_array("q", q, min_ndim=2)
    k = as_array("k", k, min_ndim=2)
    _check_d_k(q, k)
    _check_batch("q", q, "k", k)
    factor = resolve_scale(scale, q.shape[-1])
    with np.errstate(over="ignore", invalid="ignore"):
        scores = (q @ k.swapaxes(-1, -2)) * factor  # (..., T, d_k) @ (..., d_k, S) -> (..., T, S)
    return finite_result("scores = scale * q @ k^T", scores,
                         f"largest |q| is {np.abs(q).max():.3g}, largest |k| is {np.abs(k).max():.3g}")


def masked_softmax(scores, mask=None, temperature: float = 1.0) -> np.ndarray:
    """Softmax over the last axis, giving weight 0 to masked-out keys.

    Shapes: scores (..., T, S) (any shape with at least one axis), mask
    boolean, broadcastable *to* scores' shape (see ``check_mask``), True = may
    attend -> weights of scores' shape, each row summing to 1.

    A row whose keys are *all* masked has nothing to attend to; it gets all
    zero weights (and so a zero output), never NaN. torch 2.13's
    ``scaled_dot_product_attention`` gives the same zero output
    (tests/test_attention.py checks it).
    """
    scores = as_array("scores", scores)  # checked here so the message is the same with or without mask
    temperature = positive_number("temperature", temperature)
    if mask is None:
        return softmax(scores, axis=-1, temperature=temperature)
    mask = np.broadcast_to(check_mask(mask, scores.shape), scores.shape)
    filled = np.where(mask, scores, -np.inf)
    row_max = filled.max(axis=-1, keepdims=True)
    any_key = np.isfinite(row_max)  # False where the whole row is masked
    with np.errstate(over="ignore"):  # a difference beyond -1.8e308 is -inf: weight 0, as it should
        shifted = np.where(mask, (scores - np.where(any_key, row_max, 0.0)) / temperature, -np.inf)
    e = np.exp(shifted)  # exp(-inf) = 0 for masked keys
    total = e.sum(axis=-1, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


def scaled_dot_product_attention(q, k, v, mask=None, scale=True, temperature: float = 1.0):
    """Attention(Q, K, V) = softmax(scale * Q K^T / temperature) V.

    Shapes: q (..., T, d_k), k (..., S, d_k), v (..., S, d_v); the leading
    (batch/head) axes broadcast. mask: boolean, True = may attend, of shape
    (S,), (T, S) or with every leading axis of the scores spelled out, e.g.
    (B, 1, S) for (B, T, S) scores and (B, 1, 1, S) for (B, H, T, S) ones
    (see ``check_mask``). ``scale``: see ``resolve_scale``.
    Returns ``(output, weights)``: (..., T, d_v) and (..., T, S).
    A fully masked query row gets zero weights and a zero output.
    """
    q, k, v = _check_qkv(q, k, v)
    scores = attention_scores(q, k, scale)  # (..., T, S)
    weights = masked_softmax(scores, mask, temperature)  # checks the mask against (..., T, S)
    with np.errstate(over="ignore", invalid="ignore"):
        output = weights @ v  # (..., T, S) @ (..., S, d_v) -> (..., T, d_v)
    return finite_result("output = weights @ v", output, f"largest |v| is {np.abs(v).max():.3g}"), weights


def causal_mask(T: int, S: int | None = None) -> np.ndarray:
    """Lower-triangular mask: query i may attend to keys 0..i (+ S - T offset).

    Shape (T, S), S defaults to T; True = may attend. The T queries are taken
    to be the *last* T of the S positions (as when decoding with a cache), so
    S >= T is required: with S < T the first T - S queries would have no key
    at all, and that is refused rather than returned as empty rows.
    """
    T = positive_int("T", T)
    S = T if S is None else positive_int("S", S)
    if S < T:
        raise ValueError(
            f"causal_mask needs at least as many keys as queries: S={S} keys, T={T} queries. "
            f"The queries are the last T of the S positions, so the first {T - S} of them would "
            f"see no key at all. Use S >= T (or build that mask yourself with np.tril).")
    return np.tril(np.ones((T, S), dtype=bool), k=S - T)


def padding_mask(lengths, S: int, *, scores_ndim: int = 3) -> np.ndarray:
    """Key-padding mask from true sequence lengths: True for real tokens.

    ``lengths`` (B,) of ints in 0..S. The mask is shaped for scores with
    ``scores_ndim`` dimensions, 1 on every axis between batch and keys:
    3 (default) -> (B, 1, S) for (B, T, S) scores;
    4 -> (B, 1, 1, S) for multi-head (B, H, T, S) scores.
    """
    S = positive_int("S", S)
    scores_ndim = positive_int("scores_ndim", scores_ndim)
    if scores_ndim < 3:
        raise ValueError(f"scores_ndim must be >= 3 (batch, ..., T queries, S keys), got {scores_ndim}")
    try:
        lengths = np.asarray(lengths)
    except Exception as exc:
        raise TypeError(f"lengths must be a 1-D array of ints, could not convert it: {exc}") from exc
    if lengths.dtype == bool or not np.issubdtype(lengths.dtype, np.integer):
        raise TypeError(f"lengths must be a 1-D array of ints, got dtype {lengths.dtype}")
    if lengths.ndim != 1 or lengths.size == 0:
        raise ValueError(f"lengths must be a 1-D array with one length per sequence, got shape {lengths.shape}")
    if np.any(lengths < 0) or np.any(lengths > S):
        raise ValueError(f"lengths must lie in 0..S={S}, got {lengths.tolist()}")
    mask = np.arange(S)[None, :] < lengths[:, None]  # (1, S) < (B, 1) -> (B, S)
    return mask.reshape(len(lengths), *(1,) * (scores_ndim - 2), S)  # (B, S) -> (B, 1, .., 1, S)
