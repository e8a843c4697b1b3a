"""Worked solutions of chapter 7's exercises, outside the reading flow.

``tests/chapters/ch07_masks/test_exercises.py`` checks that each one passes its checker.
"""
from __future__ import annotations

import numpy as np


def masked_softmax(scores, mask):
    """Exercise 1. softmax over the last axis where mask is True; 0 on hidden keys; a fully
    hidden row -> zeros. scores (..., T, S), mask broadcasting to it."""
    filled = np.where(mask, scores, -np.inf)                       # (..., T, S): hidden keys -> -inf
    row_max = filled.max(axis=-1, keepdims=True)                   # (..., 1); -inf for a fully hidden row
    e = np.exp(filled - np.where(np.isfinite(row_max), row_max, 0.0))   # exp(-inf) = 0
    total = e.sum(axis=-1, keepdims=True)                          # (..., 1); 0 for a fully hidden row
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


def cross_attention(y, x, W_q, W_k, W_v, lengths):
    """Exercise 2. y (B, T, d_model), x (B, S, d_model), lengths (B,) -> (B, T, d_v), (B, T, S)."""
    q = y @ W_q                                                    # (B, T, d_model) @ (d_model, d_k) -> (B, T, d_k)
    k = x @ W_k                                                    # (B, S, d_model) @ (d_model, d_k) -> (B, S, d_k)
    v = x @ W_v                                                    # (B, S, d_model) @ (d_model, d_v) -> (B, S, d_v)
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])     # (B, T, d_k) @ (B, d_k, S) -> (B, T, S)
    S = x.shape[1]
    real = np.arange(S)[None, :] < np.asarray(lengths)[:, None]    # (1, S) < (B, 1) -> (B, S)
    weights = masked_softmax(scores, real[:, None, :])            # mask (B, 1, S) broadcasts over queries
    return weights @ v, weights                                    # (B, T, S) @ (B, S, d_v) -> (B, T, d_v)


def decoder_mask(lengths, T):
    """Exercise 3. lengths (B,) -> (B, T, T) for a left-padded batch: key j <= query i, and key j
    one of the last lengths[b] positions."""
    causal = np.tril(np.ones((T, T), dtype=bool))                      # (T, T) lower triangle
    real = np.arange(T)[None, :] >= T - np.asarray(lengths)[:, None]   # (B, T): the last lengths[b] keys
    return causal[None, :, :] & real[:, None, :]                       # (1, T, T) & (B, 1, T) -> (B, T, T)


def key_padding_mask(lengths, S):
    """Exercise 4. torch: (B, S), True = padding (ignore); the book's padding mask, inverted."""
    return np.arange(S)[None, :] >= np.asarray(lengths)[:, None]     # (1, S) >= (B, 1) -> (B, S)
