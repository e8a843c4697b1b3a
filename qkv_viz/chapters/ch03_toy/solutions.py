"""Worked solutions to chapter 3's exercises (kept out of the reading flow).

Try the exercises first; each answer below shows the work.
"""
from __future__ import annotations

import numpy as np


# Exercise 1: a batch axis in front, T queries against S keys. K.T would reverse all three
# axes of K; swapaxes(-1, -2) turns only the last two, so each batch element gets its own K^T.
def attention(Q, K, V):
    """Q (B, T, d_k), K (B, S, d_k), V (B, S, d_v) -> output (B, T, d_v), weights (B, T, S)."""
    d_k = Q.shape[-1]
    scores = Q @ K.swapaxes(-1, -2) / np.sqrt(d_k)      # (B, T, d_k) @ (B, d_k, S) -> (B, T, S)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights = e / e.sum(axis=-1, keepdims=True)         # (B, T, S), each row (one query) sums to 1
    return weights @ V, weights                         # (B, T, S) @ (B, S, d_v) -> (B, T, d_v)


# Exercise 2: output = w0 v0 + w1 v1 + w2 v2 and w0 + w1 + w2 = 1: three linear equations.
def weights_from_output(V, output):
    """V (3, 2) values, output (2,) a point mixed from them -> weights (3,)."""
    A = np.vstack([V.T, np.ones(3)])                    # (3, 3): rows x-coordinates, y-coordinates, ones
    b = np.append(output, 1.0)                          # (3,): the point, and "the weights sum to 1"
    return np.linalg.solve(A, b)                        # (3, 3) x = (3,) -> (3,)


# Exercise 3: k0 = (0, 1), k2 = (1, 0), so q = (a, a) ties them (q.k0 = q.k2 = a); k1 = (1, 2) gives
# q.k1 = 3a, below a exactly when a < 0.
TIE_QUERY = np.array([-1.0, -1.0])   # weights [0.446, 0.108, 0.446]
