"""Worked solutions to chapter 9's exercises (outside the reading flow; tests run each one
through its checker)."""
from __future__ import annotations

import numpy as np


# 1. A row's entropy is -sum_j w_j ln w_j (0 ln 0 = 0: a causal row has exact zeros); e^entropy
#    is 1 for a one-hot row and S for a uniform one. Per head: the mean over its rows.
def effective_tokens(weights):
    """weights (..., T, S), rows summing to 1 -> (...,): e^entropy of each row, averaged over the T rows."""
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(weights > 0, weights * np.log(weights), 0.0)  # (..., T, S)
    entropy = -terms.sum(axis=-1)                                      # (..., T)
    return np.exp(entropy).mean(axis=-1)                               # (..., T) -> (...)


# 2. Head h adds sum_j w_ij (v_j W_o^h): its weights times its values, through its d_v rows of
#    W_o. The layer's output is the sum over the heads plus b_o (added once, to the sum).
def head_outputs(x, p, n_heads):
    """x (T, d_model), p: MultiHeadParams -> (H, T, d_model), each head's part of the output."""
    T, d_model = x.shape
    q = (x @ p.W_q + p.b_q).reshape(T, n_heads, -1).transpose(1, 0, 2)  # (T, H*d_k) -> (H, T, d_k)
    k = (x @ p.W_k + p.b_k).reshape(T, n_heads, -1).transpose(1, 0, 2)  # (H, T, d_k)
    v = (x @ p.W_v + p.b_v).reshape(T, n_heads, -1).transpose(1, 0, 2)  # (H, T, d_v)
    scores = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])  # (H, T, d_k) @ (H, d_k, T) -> (H, T, T)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights /= weights.sum(axis=-1, keepdims=True)  # softmax over the keys
    W_o = p.W_o.reshape(n_heads, -1, d_model)  # (H*d_v, d_model) -> (H, d_v, d_model)
    return weights @ v @ W_o  # (H, T, T) @ (H, T, d_v) @ (H, d_v, d_model) -> (H, T, d_model)
