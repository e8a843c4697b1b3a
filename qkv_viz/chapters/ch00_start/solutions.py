"""Worked solution to chapter 0's exercise (kept out of the reading flow). Try it first."""
from __future__ import annotations

import numpy as np

# The noun row (2, 2, 1) becomes (2, 0, 1): a noun asks for water and for a noun, not for money.
# In "the bank raised its rates" only "bank" itself has water, so its query matches its own key
# best and it reads itself most (0.48). Softmax spends the rest on the others, most on "rates"
# (0.24, the other noun), and "raised" and "rates" hand over money, so "bank" still gathers more
# money (0.43) than water (0.14).
W_Q_NO_MONEY = np.array([[0, 0, 1], [0, 0, 1], [2, 0, 1]])
GUESS = "bank"


def attend_one(q, K, V):
    """One query q (d_k,) against keys K (S, d_k) and values V (S, d_v); top: the key it reads most."""
    scores = K @ q / np.sqrt(q.shape[0])   # (S, d_k) @ (d_k,) -> (S,): one score per key
    e = np.exp(scores - scores.max())      # (S,)
    weights = e / e.sum()                  # (S,): sums to 1
    top = int(np.argmax(weights))          # the index of the largest weight (= of the largest score)
    return weights @ V, weights, top       # (S,) @ (S, d_v) -> (d_v,)
