"""Worked solutions of chapter 6's exercises, outside the reading flow.

``tests/chapters/ch06_multi_head/test_exercises.py`` checks that each one passes its
checker. Read them after trying: each exercise's cell in the notebook says which.
"""
from __future__ import annotations

import numpy as np


def batched_mha(x, W_q, W_k, W_v, W_o, n_heads):
    """Exercise 1. x (B, T, d_model) -> (B, T, d_model), torch's (B, H, T, d_k) layout inside."""
    B, T, d_model = x.shape
    d_k = d_model // n_heads

    def split(a):   # (B, T, H*d_k) -> (B, T, H, d_k) -> (B, H, T, d_k)
        return a.reshape(B, T, n_heads, d_k).transpose(0, 2, 1, 3)

    q, k, v = split(x @ W_q), split(x @ W_k), split(x @ W_v)     # (B, H, T, d_k) each
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d_k)         # (B, H, T, d_k) @ (B, H, d_k, T) -> (B, H, T, T)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)                   # softmax over the keys
    heads = weights @ v                                         # (B, H, T, T) @ (B, H, T, d_k) -> (B, H, T, d_k)
    concat = heads.transpose(0, 2, 1, 3).reshape(B, T, d_model) # (B, H, T, d_k) -> (B, T, H, d_k) -> (B, T, d_model)
    return concat @ W_o                                         # (B, T, d_model) @ (d_model, d_model)


def head_contributions(heads, W_o):
    """Exercise 2. heads (H, T, d_v), W_o (H*d_v, d_model) -> (H, T, d_model)."""
    H, T, d_v = heads.shape
    parts = []
    for h in range(H):
        rows = W_o[h * d_v:(h + 1) * d_v]    # head h's row block of W_o: (d_v, d_model)
        parts.append(heads[h] @ rows)         # (T, d_v) @ (d_v, d_model) -> (T, d_model)
    return np.stack(parts)                    # (H, T, d_model); summed over h: merge_heads(heads) @ W_o


def fold_ov(W_v, W_o, n_heads):
    """Exercise 3. W_v (d_model, H*d_v), W_o (H*d_v, d_model) -> (H, d_model, d_model)."""
    d_v = W_v.shape[1] // n_heads
    folded = []
    for h in range(n_heads):
        block = slice(h * d_v, (h + 1) * d_v)
        folded.append(W_v[:, block] @ W_o[block])   # (d_model, d_v) @ (d_v, d_model) -> (d_model, d_model)
    return np.stack(folded)                          # (H, d_model, d_model); summed over h: W_v @ W_o


def head_from_in_proj(in_proj_weight, n_heads, h):
    """Exercise 4. in_proj_weight (3*d_model, d_model) stacks W_q, W_k, W_v in torch's (out, in) layout."""
    d_model = in_proj_weight.shape[1]
    d_k = d_model // n_heads
    picked = []
    for start in (0, d_model, 2 * d_model):                       # W_q's rows, then W_k's, then W_v's
        rows = in_proj_weight[start + h * d_k: start + (h + 1) * d_k]   # head h's d_k output rows: (d_k, d_model)
        picked.append(rows.T)                                     # our layout: (d_model, d_k), used as x @ W
    return tuple(picked)


def one_head_for_the_cat():
    """Exercise 5. "sat"'s query is row 2 of W_q (its only feature, verb): ask for an animal only.
    Scores: cat 5/sqrt(2) = 3.5, the others 0, so the cat gets e^3.5 / (e^3.5 + 2), about 0.94."""
    W_q = np.zeros((6, 2))
    W_q[2, 0] = 5
    return W_q
