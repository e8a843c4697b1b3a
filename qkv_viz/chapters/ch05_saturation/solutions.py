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


def batch_grad_norm(x_q, k, d_scores, c):
    """3. The mean loss's gradient on W_q: the mean of the per-query outer products, then its norm."""
    d_q = c * (d_scores @ k)                 # (T, S) @ (S, d_k) -> (T, d_k): d loss_i / d q_i
    grad_W_q = x_q.T @ d_q / x_q.shape[0]    # (d_model, T) @ (T, d_k) -> (d_model, d_k): sum of outer(x_i, d_q_i) / T
    return np.linalg.norm(grad_W_q)


ANSWER_3 = """3. The batch gradient is the mean of the per-query gradients on W_q. They point in different directions, so
added up they partly cancel: the norm of a sum is at most the sum of the norms, and the batch norm comes out
smaller than the mean of exercise 1's norms (the checker's feedback says this once the function is right)."""
