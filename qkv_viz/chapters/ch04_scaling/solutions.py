"""Worked solutions to chapter 4's exercises (outside the reading flow; the tests run each
one through its checker)."""
from __future__ import annotations

import numpy as np


# 1. s_ij = factor * q_i . k_j, so dL/dk_j = factor * sum_i (dL/ds_ij) q_i: the keys collect the
#    queries, as the queries collected the keys on the page. Unscaled, |q_i| ~ sqrt(d_k) multiplies it.
def key_grad(q, k, grad_scores, scale):
    """q (T, d_k), k (S, d_k), grad_scores (T, S) -> dL/dk (S, d_k)."""
    factor = 1 / np.sqrt(q.shape[1]) if scale else 1.0
    return factor * grad_scores.T @ q                            # (S, T) @ (T, d_k) -> (S, d_k)


# 2. The page's lines, with the factor as an argument. Scaled by 1/sqrt(d_k) both numbers stay put at
#    every width; by 1/d_k the rows flatten towards uniform (max weight -> 1/S) as d_k grows.
def row_means(q, k, factor):
    """q (T, d_k), k (S, d_k), factor -> (mean max weight, mean ||J||_F) over the T rows."""
    scores = factor * (q @ k.T)                                  # (T, d_k) @ (d_k, S) -> (T, S)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))      # (T, S)
    w = e / e.sum(axis=-1, keepdims=True)                        # (T, S): rows sum to 1
    J_norm = [np.linalg.norm(np.diag(row) - np.outer(row, row)) for row in w]   # T norms of (S, S)
    return w.max(axis=-1).mean(), np.mean(J_norm)


# 3. Var(q . k) = d_k Var(q_i) Var(k_i) = 48 * 4 * 1 = 192, so the std is sqrt(192) ~ 13.86.
NEW_WIDTH_STD = float(np.sqrt(48 * 4.0 * 1.0))

# 4. Two keys saturate (max weight 0.99) when the gap D = s_1 - s_0 has sigma(D) = 0.99: D = ln(99) ~ 4.60.
#    Unscaled, D = q . (k_1 - k_0): d_k terms, each of variance Var(q_i) (Var(k_1i) + Var(k_0i)) = 2,
#    so std(D) = sqrt(2 d_k). sqrt(2 d_k) = ln(99) at d_k = ln(99)^2 / 2 ~ 10.6, so the smallest whole
#    width is 11: already at d_k = 16 a one-std gap saturates a two-key row.
SATURATING_D_K = int(np.ceil(np.log(99) ** 2 / 2))
