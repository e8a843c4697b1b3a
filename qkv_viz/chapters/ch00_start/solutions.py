"""Worked solution to chapter 0's exercise (kept out of the reading flow). Try it first."""
from __future__ import annotations

import numpy as np

# The noun row (2, 2) becomes (2, 0): a noun asks only for water. In "the bank raised its rates"
# only "bank" itself has water, so its query matches its own key best and it reads itself most
# (0.37). Softmax spends the rest equally on the four others (0.16 each), and "raised" and "rates"
# hand over money, so "bank" still gathers more money (0.35) than water (0.11).
W_Q_WATER = np.array([[0, 0], [0, 0], [2, 0]])
GUESS = "bank"


def attend(q, K, V):
    """One query q (d_k,) against keys K (S, d_k) and values V (S, d_v)."""
    scores = K @ q / np.sqrt(q.shape[0])   # (S, d_k) @ (d_k,) -> (S,): one score per key
    e = np.exp(scores - scores.max())      # (S,)
    weights = e / e.sum()                  # (S,): sums to 1
    return weights @ V, weights            # (S,) @ (S, d_v) -> (d_v,)
