"""Worked solutions of chapter 11's exercises, outside the reading flow.

``tests/chapters/ch11_generation/test_exercises.py`` checks that each one passes its checker.
"""
from __future__ import annotations

import numpy as np


def cached_step(q, k_new, v_new, K_cache, V_cache):
    """Exercise 1. Append the new token's row to each cache, then one query attends over all rows."""
    K = np.vstack([K_cache, k_new])                     # (t, d_k) -> (t+1, d_k): the new row last
    V = np.vstack([V_cache, v_new])                     # (t, d_v) -> (t+1, d_v)
    scores = K @ q / np.sqrt(len(q))                    # (t+1, d_k) @ (d_k,) -> (t+1,), no mask
    weights = np.exp(scores - scores.max())
    weights /= weights.sum()                            # softmax over tokens 0..t
    return weights @ V, K, V                            # (t+1,) @ (t+1, d_v) -> (d_v,)


def gqa(q, k, v):
    """Exercise 2. Repeat each K/V head for its group of query heads, then causal attention per head."""
    H, T, d_k = q.shape
    rep = H // k.shape[0]
    k = np.repeat(k, rep, axis=0)                       # (H_kv, T, d_k) -> (H, T, d_k): 0, 0, 1, 1, ...
    v = np.repeat(v, rep, axis=0)                       # (H_kv, T, d_v) -> (H, T, d_v)
    scores = q @ k.transpose(0, 2, 1) / np.sqrt(d_k)    # (H, T, d_k) @ (H, d_k, T) -> (H, T, T)
    scores = np.where(np.tril(np.ones((T, T), dtype=bool)), scores, -np.inf)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights /= weights.sum(axis=-1, keepdims=True)
    return weights @ v                                  # (H, T, T) @ (H, T, d_v) -> (H, T, d_v)


def llama2_70b_cache():
    """Exercise 3. 2 (K, V) x 80 layers x 8 K/V heads x 128 x 4,096 tokens x 2 bytes = 1.25 GiB."""
    return 2 * 80 * 8 * 128 * 4096 * 2


def bidirectional_cache():
    """Exercise 4. Only layer 1's: its K and V are projections of each token's own input vector.
    From layer 2 on they are projections of layer-1 outputs, and without a causal mask each old
    token's output is a weighted sum that now includes the new token."""
    return "b"
