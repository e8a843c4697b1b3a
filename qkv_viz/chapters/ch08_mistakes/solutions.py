"""Worked solutions to chapter 8's exercises (outside the reading flow; tests run each one
through its checker)."""
from __future__ import annotations

import numpy as np


# 1. Three looks tell the bugs apart: weight only outside the mask (inverted), weight on hidden
#    keys (no mask, or scores * mask), and, with no weight hidden, whether the rows or only the
#    columns sum to 1.
def diagnose(w, mask):
    """w (T, T) weights of a causal head, mask (T, T) bool, True = may look -> the bug's name."""
    w, mask = np.asarray(w, dtype=float), np.asarray(mask, dtype=bool)
    if np.allclose(w[mask], 0, atol=1e-4):
        return "mask inverted"                           # nothing where the query may look
    if w[~mask].sum() > 1e-4:
        return "no mask"                                 # weight on hidden keys
    if np.allclose(w.sum(axis=-1), 1, atol=1e-4):
        return "right"                                   # each query's weights sum to 1
    if np.allclose(w.sum(axis=0), 1, atol=1e-4):
        return "softmax over axis 0"                     # each key's weights sum to 1
    return "mask after softmax"                          # rows below 1, nothing hidden


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
