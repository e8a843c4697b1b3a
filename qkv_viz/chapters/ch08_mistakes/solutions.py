"""Worked solutions to chapter 8's exercises (outside the reading flow; tests run each one
through its checker)."""
from __future__ import annotations

import numpy as np

# 1. d_model = 512 rows; Q, K and V each need n_heads * d_k = 8 * 64 = 512 columns, side by side.
FUSED_SHAPE = (512, 3 * 8 * 64)

# 2. exp(x) overflows once x > log(largest float16) = log(65504).
OVERFLOW_LIMIT_FLOAT16 = round(float(np.log(float(np.finfo(np.float16).max))), 2)


# 3. Subtract each row's max: the exponents are then <= 0, the largest is exp(0) = 1,
#    so the sum is >= 1 and nothing overflows or divides by 0.
def stable_softmax(s):
    """s (..., S) logits -> (..., S) weights, each row summing to 1."""
    s = np.asarray(s, dtype=float)
    e = np.exp(s - s.max(axis=-1, keepdims=True))  # (..., S) - (..., 1): every exponent <= 0
    return e / e.sum(axis=-1, keepdims=True)  # (..., S) / (..., 1)


# 4. The bug: ``weights.sum(axis=0)`` makes each KEY's column sum to 1. Each query's row must.
def attention_fixed(q, k, v):
    """q (T, d_k), k (S, d_k), v (S, d_v) -> (T, d_v)."""
    d_k = q.shape[-1]
    scores = q @ k.T / np.sqrt(d_k)  # (T, d_k) @ (d_k, S) -> (T, S)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))  # (T, S)
    weights = weights / weights.sum(axis=-1, keepdims=True)  # (T, S) / (T, 1): rows sum to 1
    return weights @ v  # (T, S) @ (S, d_v) -> (T, d_v)
