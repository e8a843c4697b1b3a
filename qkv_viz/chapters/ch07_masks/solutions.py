"""Worked solutions of chapter 7's exercises, outside the reading flow.

``tests/chapters/ch07_masks/test_exercises.py`` checks that each one passes its checker.
"""
from __future__ import annotations

import numpy as np


def masked_softmax(scores, mask):
    """Exercise 1. scores (T, S), mask (T, S) with True = may attend -> weights (T, S)."""
    filled = np.where(mask, scores, -np.inf)                # hidden keys -> -inf
    row_max = filled.max(axis=-1, keepdims=True)            # (T, 1); -inf for a fully masked row
    row_max = np.where(np.isfinite(row_max), row_max, 0.0)  # avoid -inf - (-inf) = NaN
    e = np.exp(filled - row_max)                            # exp(-inf) = 0 for hidden keys
    total = e.sum(axis=-1, keepdims=True)                   # (T, 1); 0 for a fully masked row
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)   # 0/0 -> 0, the book's convention


def cross_weights_shape():
    """Exercise 2. One (T, S) map per head: (heads, decoder tokens, encoder tokens)."""
    return (4, 5, 9)


def causal_allowed():
    """Exercise 3. Row i sees i + 1 keys: 1 + 2 + ... + 9 = 9 * 10 / 2."""
    return 9 * 10 // 2


def key_padding_mask():
    """Exercise 4. torch: (B, S), True = padding (ignore)."""
    return [[False, False, False, True, True],
            [False, False, False, False, False]]


def padded_weights():
    """Exercise 5. softmax([1, 2]) = [1, e] / (1 + e) on the real keys, 0 on the padding."""
    e = np.e
    return [1 / (1 + e), e / (1 + e), 0.0, 0.0]
