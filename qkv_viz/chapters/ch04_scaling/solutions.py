"""Worked solutions to chapter 4's exercises (outside the reading flow; the tests run each
one through its checker)."""
from __future__ import annotations

import numpy as np


# 1. The scores of the paper: every query against every key, then divide by sqrt(d_k).
def scaled_scores(q, k):
    """q (T, d_k), k (S, d_k) -> scores (T, S) = q k^T / sqrt(d_k)."""
    d_k = q.shape[-1]
    return q @ k.T / np.sqrt(d_k)  # (T, d_k) @ (d_k, S) -> (T, S)


# 2. d p_i / d s_j = p_i (delta_ij - p_j): the diagonal p_i (1 - p_i), the rest -p_i p_j.
def softmax_jacobian(p):
    """p (S,) one row of weights -> J (S, S) with J[i, j] = d p_i / d s_j."""
    return np.diag(p) - np.outer(p, p)  # (S, S) - (S, 1) (1, S)


# 3. Var(q . k) = d_k Var(q_i) Var(k_i) = 48 * 4 * 1 = 192, so the std is sqrt(192) ~ 13.86.
NEW_WIDTH_STD = float(np.sqrt(48 * 4.0 * 1.0))

# 4. p = [1/2, 1/4, 1/4]: J = [[ 1/4,   -1/8,   -1/8 ],
#                             [-1/8,    3/16,  -1/16],
#                             [-1/8,   -1/16,   3/16]]
#    sum of squares = 1/16 + 4/64 + 2 * 9/256 + 2/256 = 52/256, so ||J||_F = sqrt(52) / 16 ~ 0.451.
ROW_GRAD_NORM = float(np.sqrt(52) / 16)
