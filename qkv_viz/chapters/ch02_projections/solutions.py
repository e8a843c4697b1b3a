"""Worked solutions to chapter 2's exercises (kept out of the reading flow).

Try the exercises first; each answer below says why it is right.
"""
from __future__ import annotations


# Exercise 1: three matrix products, one per role.
def project(X, W_q, W_k, W_v):
    """X (T, d_model), W_q/W_k (d_model, d_k), W_v (d_model, d_v) -> Q, K (T, d_k), V (T, d_v)."""
    Q = X @ W_q  # (T, d_model) @ (d_model, d_k) -> (T, d_k)
    K = X @ W_k  # (T, d_model) @ (d_model, d_k) -> (T, d_k)
    V = X @ W_v  # (T, d_model) @ (d_model, d_v) -> (T, d_v)
    return Q, K, V


# Exercise 2: x1 . x2 = |x1| |x2| cos(60 deg) = 5 * |x2| / 2 beats x1 . x1 = |x1|^2 = 25
# as soon as |x2| > 10. Equal lengths (LayerNorm) make this impossible, since cos <= 1.
RIVAL_LENGTH = 10.0

# Exercise 3: W_q W_k^T = (512, 64) @ (64, 512). A product can have no larger rank than
# its narrowest factor, 64 (random matrices reach it), so at least 512 - 64 directions
# are sent to zero: the head's scores cannot see them.
BLIND_DIRECTIONS = 448
