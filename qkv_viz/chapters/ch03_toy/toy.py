"""A toy attention row you can check by hand: every intermediate number.

Chapter 3 uses source article 1's example: n = 3 tokens, d_k = 2, and token 0's (the article's token 1)
scores q0 . k_j = [2.0, 5.0, 1.0]. ``toy_steps`` returns each stage of
softmax(scale * scores) @ V so the editable widget and the exercises can
use them one by one; ``compare_with_claim`` checks a weight row an article
printed. numpy only.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from qkv_viz.core.validate import as_array, positive_int
from qkv_viz.core.attention import resolve_scale
from qkv_viz.core.softmax import softmax

# Concrete vectors in d_k = 2 that give the articles' scores for token 0:
# q0 . k0 = 1*0 + 2*1 = 2,  q0 . k1 = 1*3 + 2*1 = 5,  q0 . k2 = 1*1 + 2*0 = 1.
# No query equals a key; k0 is nearer q0 in direction, k1 wins by its length; each token reads
# another key most (token 0 k1, token 1 k0, token 2 k2).
TOY_Q = np.array([[1.0, 2.0],    # token 0 (the query we follow)
                  [-1.0, 1.0],   # token 1
                  [0.0, -2.0]])  # token 2
TOY_K = np.array([[0.0, 1.0],
                  [3.0, 1.0],
                  [1.0, 0.0]])
# Small values (d_v = 2) whose mixtures are easy to add up by hand.
TOY_V = np.array([[1.0, 0.0],
                  [0.0, 1.0],
                  [1.0, 1.0]])
TOY_SCORES = (2.0, 5.0, 1.0)
# Three token vectors (d_model = 3) for exercise 1, which finds the W_q and W_k that project them onto TOY_Q, TOY_K.
TOY_X = np.array([[1.0, 0.0, 1.0],
                  [0.0, 1.0, 1.0],
                  [1.0, 1.0, 0.0]])

# What article 1 prints for token 1's weights: in its text and in its table.
ARTICLE1_TEXT_WEIGHTS = (0.10, 0.85, 0.05)
ARTICLE1_TABLE_WEIGHTS = (0.06, 0.87, 0.07)


@dataclass(frozen=True)
class ToySteps:
    """Every stage of one attention row. S keys, d_v value width.

    scores (S,) raw q.k; factor the scale applied; scaled (S,) = factor * scores;
    shifted (S,) = scaled - max (what a stable softmax exponentiates);
    exp (S,) = exp(scaled); total = exp.sum(); weights (S,) = exp / total;
    contributions (S, d_v) = weights[:, None] * V; output (d_v,) their sum.
    """

    scores: np.ndarray
    factor: float
    scaled: np.ndarray
    shifted: np.ndarray
    exp: np.ndarray
    total: float
    weights: np.ndarray
    contributions: np.ndarray
    output: np.ndarray


def toy_steps(scores=TOY_SCORES, v=TOY_V, d_k: int = 2, scale=True) -> ToySteps:
    """All intermediates of ``softmax(scale * scores) @ v`` for one query.

    Shapes: scores (S,), v (S, d_v). ``scale`` as in
    ``scaled_dot_product_attention``: True -> 1/sqrt(d_k), False -> 1, or a number.
    ``exp`` is computed unshifted (as written on paper); the weights come from
    the package's stable softmax, and the two must agree.
    """
    scores = as_array("scores", scores, ndim=1)
    v = as_array("v", v, ndim=2)
    if v.shape[0] != scores.shape[0]:
        raise ValueError(f"v needs one row per score: scores has shape {scores.shape}, v has shape {v.shape}")
    factor = resolve_scale(scale, positive_int("d_k", d_k))
    scaled = scores * factor
    with np.errstate(over="ignore"):
        exp = np.exp(scaled)  # by hand; may overflow for huge scores, the weights below do not
    weights = softmax(scaled)
    contributions = weights[:, None] * v  # (S, 1) * (S, d_v) -> (S, d_v)
    return ToySteps(scores=scores, factor=float(factor), scaled=scaled,
                    shifted=scaled - scaled.max(), exp=exp, total=float(exp.sum()),
                    weights=weights, contributions=contributions,
                    output=contributions.sum(axis=0))


def compare_with_claim(weights, claimed, decimals: int = 2) -> dict:
    """How a claimed weight row compares with computed ``weights`` (both (S,)).

    Returns rounded computed weights, the claim, the largest absolute gap, and
    whether the claim matches the computation after rounding to ``decimals``.
    """
    weights = as_array("weights", weights, ndim=1)
    claimed = as_array("claimed", claimed, ndim=1)
    if weights.shape != claimed.shape:
        raise ValueError(f"weights {weights.shape} and claimed {claimed.shape} must have the same shape")
    rounded = np.round(weights, decimals)
    return {"computed": rounded.tolist(), "claimed": claimed.tolist(),
            "max_gap": round(float(np.abs(weights - claimed).max()), 3),
            "matches": bool(np.allclose(rounded, claimed, atol=0.5 * 10.0 ** -decimals))}
