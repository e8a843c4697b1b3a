"""Worked solutions of chapter 6's exercises, outside the reading flow.

``tests/chapters/ch06_multi_head/test_exercises.py`` checks that each one passes its
checker. Read them after trying: each exercise's cell in the notebook says which.
"""
from __future__ import annotations

import numpy as np


def split_heads(x, n_heads):
    """Exercise 1. x (T, H*d_k) -> (H, T, d_k)."""
    T, width = x.shape
    d_k = width // n_heads
    x = x.reshape(T, n_heads, d_k)  # (T, H*d_k) -> (T, H, d_k): cut each row into H blocks
    return x.transpose(1, 0, 2)     # (T, H, d_k) -> (H, T, d_k): heads first


def merge_heads(heads):
    """Helper for exercise 3. heads (H, T, d_k) -> (T, H*d_k), the heads side by side."""
    H, T, d_k = heads.shape
    x = heads.transpose(1, 0, 2)   # (H, T, d_k) -> (T, H, d_k)
    return x.reshape(T, H * d_k)   # (T, H, d_k) -> (T, H*d_k)


def head_contributions(heads, W_o):
    """Exercise 2. heads (H, T, d_v), W_o (H*d_v, d_model) -> (H, T, d_model)."""
    H, T, d_v = heads.shape
    parts = []
    for h in range(H):
        rows = W_o[h * d_v:(h + 1) * d_v]    # head h's row block of W_o: (d_v, d_model)
        parts.append(heads[h] @ rows)         # (T, d_v) @ (d_v, d_model) -> (T, d_model)
    return np.stack(parts)                    # (H, T, d_model); summed over h: merge_heads(heads) @ W_o


def multi_head_forward(x, params, n_heads):
    """Exercise 3. Multi-head self-attention of x (T, d_model) -> (T, d_model)."""
    p = params
    q = split_heads(x @ p.W_q + p.b_q, n_heads)          # (T, H*d_k) -> (H, T, d_k)
    k = split_heads(x @ p.W_k + p.b_k, n_heads)          # (H, T, d_k)
    v = split_heads(x @ p.W_v + p.b_v, n_heads)          # (H, T, d_v)
    d_k = q.shape[-1]
    scores = q @ k.transpose(0, 2, 1) / np.sqrt(d_k)      # (H, T, d_k) @ (H, d_k, T) -> (H, T, T)
    scores = scores - scores.max(axis=-1, keepdims=True)  # shift for a stable exp
    weights = np.exp(scores) / np.exp(scores).sum(axis=-1, keepdims=True)
    heads = weights @ v                                   # (H, T, T) @ (H, T, d_v) -> (H, T, d_v)
    return merge_heads(heads) @ p.W_o + p.b_o            # (T, H*d_v) @ (H*d_v, d_model)


def head_columns():
    """Exercise 4. d_k = 1024 / 16 = 64; head 9 owns columns 9*64 .. 10*64 - 1."""
    d_k = 1024 // 16
    return (9 * d_k, 10 * d_k)


def in_proj_params():
    """Exercise 5. in_proj_weight (3*1024, 1024) plus in_proj_bias (3*1024,)."""
    return 3 * 1024 * 1024 + 3 * 1024
