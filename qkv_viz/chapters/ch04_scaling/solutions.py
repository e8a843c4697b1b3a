"""Worked solutions to chapter 4's exercises (outside the reading flow; the tests run each
one through its checker)."""
from __future__ import annotations

import numpy as np


# 1. For each width: the first d_k columns, scores (scaled or not), a stable softmax, then the
#    row means of the largest weight and of ||diag(p) - p p^T||_F.
def sweep(q, k, d_ks, scale):
    """q (T, D), k (S, D), widths d_ks (each <= D) -> max_weight (K,), grad_norm (K,)."""
    top, norm = [], []
    for d_k in d_ks:
        scores = q[:, :d_k] @ k[:, :d_k].T                       # (T, d_k) @ (d_k, S) -> (T, S)
        if scale:
            scores = scores / np.sqrt(d_k)
        e = np.exp(scores - scores.max(axis=1, keepdims=True))
        p = e / e.sum(axis=1, keepdims=True)                     # (T, S) weights
        eye = np.eye(p.shape[1])
        J = p[:, :, None] * eye - p[:, :, None] * p[:, None, :]  # (T, S, S): one Jacobian per row
        top.append(p.max(axis=1).mean())
        norm.append(np.sqrt((J ** 2).sum(axis=(1, 2))).mean())
    return np.array(top), np.array(norm)


# 2. (J^T g)_j = sum_i g_i (p_i delta_ij - p_i p_j) = p_j g_j - p_j (p . g) = p_j (g_j - p . g).
#    A one-hot row gives 0 whatever g is: nothing reaches the scores.
def softmax_backward(p, grad):
    """p (S,) weights, grad (S,) d loss / d weights -> (S,) d loss / d scores."""
    return p * (grad - p @ grad)                                 # (S,) * ((S,) - ()) -> (S,)


# 3. Var(q . k) = d_k Var(q_i) Var(k_i) = 48 * 4 * 1 = 192, so the std is sqrt(192) ~ 13.86.
NEW_WIDTH_STD = float(np.sqrt(48 * 4.0 * 1.0))

# 4. p = [1/2, 1/4, 1/4]: J = [[ 1/4,   -1/8,   -1/8 ],
#                             [-1/8,    3/16,  -1/16],
#                             [-1/8,   -1/16,   3/16]]
#    sum of squares = 1/16 + 4/64 + 2 * 9/256 + 2/256 = 52/256, so ||J||_F = sqrt(52) / 16 ~ 0.451.
ROW_GRAD_NORM = float(np.sqrt(52) / 16)
