"""Worked solutions to chapter 5's exercises (outside the reading flow; the tests run each
one through its checker)."""
from __future__ import annotations

import numpy as np


def query_grad_norms(x_q, k, d_scores, c):
    """1. Each query's |d loss_i / d W_q| in closed form, (T,)."""
    d_q = c * (d_scores @ k)                 # (T, S) @ (S, d_k) -> (T, d_k): d loss_i / d q_i
    x_norm = np.linalg.norm(x_q, axis=-1)    # (T,)
    # q_i = x_i W_q, so d loss_i / d W_q = outer(x_i, d_q_i), and |outer(a, b)| = |a| |b|
    return x_norm * np.linalg.norm(d_q, axis=-1)


def control_std(d_model, d_k, x_std):
    """2. Var(q entry) = d_model x_std^2 std^2 and Var(q . k) = d_k Var(q entry)^2 = 1."""
    var_q = 1 / np.sqrt(d_k)                 # the variance each q and k entry must have
    return np.sqrt(var_q / (d_model * x_std ** 2))


ANSWER_3 = """3. The batch gradient is the mean of 128 per-query gradients. Unscaled, about half of them are
nearly zero (one-hot rows), but the queries near a tie send back gradients that, without the factor c,
are sqrt(d_k) times larger on W_q and W_k. Their mean is therefore not small, and a gradient-norm check
looks healthy while most queries learn almost nothing. Only the per-query picture (or the spread of
the scores before softmax) shows the saturation."""
