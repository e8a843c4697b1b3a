"""Worked solutions to chapter 2's exercises (kept out of the reading flow).

Try the exercises first; each answer below says why it is right.
"""
from __future__ import annotations

import numpy as np


# Exercise 1: three matrix products, one per role.
def project(X, W_q, W_k, W_v):
    """X (T, d_model), W_q/W_k (d_model, d_k), W_v (d_model, d_v) -> Q, K (T, d_k), V (T, d_v)."""
    Q = X @ W_q  # (T, d_model) @ (d_model, d_k) -> (T, d_k)
    K = X @ W_k  # (T, d_model) @ (d_model, d_k) -> (T, d_k)
    V = X @ W_v  # (T, d_model) @ (d_model, d_v) -> (T, d_v)
    return Q, K, V


# Exercise 2: x1 . x2 = |x1| |x2| cos(angle) beats x1 . x1 = |x1|^2 as soon as
# |x2| cos(angle) > |x1|: token 2 points roughly the same way and is longer.
LONGER_TOKEN_X = np.array([[1.0, 0.0],    # token 1: length 1
                           [3.0, 0.5]])   # token 2: x1 . x2 = 3 > x1 . x1 = 1

# Exercise 3: W_q W_k^T = (512, 32) @ (32, 512). A product can have no larger rank
# than its narrowest factor, so at most d_k = 32 (random matrices reach it).
MAX_RANK = 32
