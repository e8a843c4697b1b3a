"""Worked solutions to chapter 8's exercises (outside the reading flow; tests run each one
through its checker)."""
from __future__ import annotations

import numpy as np


# 1. The columns are (H, 3, d_head) per token: reshape to say so, then move the role axis
#    first (to unpack q, k, v) and the head axis before the tokens.
def split_per_head(qkv, n_heads):
    """qkv (n, 3 H d_head), laid out (n, H, 3, d_head) -> q, k, v each (H, n, d_head)."""
    n = qkv.shape[0]
    d_head = qkv.shape[1] // (3 * n_heads)
    per_head = qkv.reshape(n, n_heads, 3, d_head)    # (n, 3 H d_head) -> (n, H, 3, d_head)
    q, k, v = per_head.transpose(2, 1, 0, 3)         # (n, H, 3, d_head) -> (3, H, n, d_head)
    return q, k, v


# 2. Two bugs: ``d_k = q.shape[0]`` reads T, not d_k (q is (T, d_k)), so the scores are scaled by
#    the wrong size; and ``scores.max()`` is one max for the whole matrix: a row far below it
#    underflows to 0/0.
def attention_fixed(q, k, v):
    """q (T, d_k), k (S, d_k), v (S, d_v) -> (T, d_v)."""
    d_k = q.shape[-1]  # q is (T, d_k)
    scores = q @ k.T / np.sqrt(d_k)  # (T, d_k) @ (d_k, S) -> (T, S)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))  # (T, S) - (T, 1): each row's own max
    weights = weights / weights.sum(axis=-1, keepdims=True)  # (T, S) / (T, 1): rows sum to 1
    return weights @ v  # (T, S) @ (S, d_v) -> (T, d_v)


# 3. log(softmax(s)) = s - log(sum exp(s)); subtract the row's max m inside the log, so no exp
#    overflows, and never form the weight itself, which can underflow to 0 (log 0 = -inf).
def log_softmax(scores):
    """scores (..., S) -> log of the softmax along the last axis, (..., S)."""
    m = scores.max(axis=-1, keepdims=True)  # (..., S) -> (..., 1)
    return scores - m - np.log(np.exp(scores - m).sum(axis=-1, keepdims=True))  # (..., S) - (..., 1)
