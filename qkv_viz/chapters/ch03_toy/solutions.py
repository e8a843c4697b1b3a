"""Worked solutions to chapter 3's exercises (kept out of the reading flow).

Try the exercises first; each answer below shows the work.
"""
from __future__ import annotations

import numpy as np


# Exercise 1: the whole matrix at once.
def attention(Q, K, V):
    """Q, K (3, d_k), V (3, d_v) -> output (3, d_v), weights (3, 3)."""
    d_k = Q.shape[-1]
    scores = Q @ K.T / np.sqrt(d_k)                     # (3, d_k) @ (d_k, 3) -> (3, 3)
    e = np.exp(scores - scores.max(axis=1, keepdims=True))  # shift each row: no overflow
    weights = e / e.sum(axis=1, keepdims=True)          # (3, 3), each ROW sums to 1
    return weights @ V, weights                         # (3, 3) @ (3, d_v) -> (3, d_v)


# Exercise 2: same scores, d_k = 8, so divide by sqrt(8) ~ 2.83 instead of sqrt(2).
_scaled = np.array([2.0, 5.0, 1.0]) / np.sqrt(8)         # [0.71, 1.77, 0.35]
WEIGHTS_D_K_8 = np.exp(_scaled) / np.exp(_scaled).sum()  # about [0.22, 0.63, 0.15]: flatter

# Exercise 3: the weights stay those of d_k = 2; only the values change.
_scaled2 = np.array([2.0, 5.0, 1.0]) / np.sqrt(2)
_w2 = np.exp(_scaled2) / np.exp(_scaled2).sum()          # about [0.10, 0.85, 0.05]
OUTPUT_NEW_V = _w2 @ np.array([[2.0, 0.0], [0.0, 2.0], [4.0, 4.0]])  # (3,) @ (3, 2) -> (2,)

# Exercise 4: w1 (1, 0) + w2 (0, 1) + w3 (1, 1) = (0.6, 0.7) and w1 + w2 + w3 = 1:
#   x: w1 + w3 = 0.6,  y: w2 + w3 = 0.7,  sum: w1 + w2 + w3 = 1
#   add x and y: w1 + w2 + 2 w3 = 1.3, subtract the sum: w3 = 0.3, so w1 = 0.3, w2 = 0.4.
WEIGHTS_FOR_OUTPUT = np.array([0.3, 0.4, 0.3])
