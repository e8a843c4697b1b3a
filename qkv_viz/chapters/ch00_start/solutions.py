"""Worked solutions to chapter 0's exercises (kept out of the reading flow). Try it first."""
from __future__ import annotations

import numpy as np

# The money row of W_k (1, 0) becomes (0, 0): money no longer makes a token a topic. In "the bank
# raised its rates" only "bank" is still a topic (by its bit of water), so the query of "bank" (a topic
# and a noun) matches its own key best and it reads itself most (0.38). Softmax spends the rest on the
# others, most on "rates" (0.25, the other noun), and "raised" and "rates" still hand over money (W_v is
# unchanged), so "bank" still gathers more money (0.43) than water (0.11).
W_K_NO_MONEY = np.array([[1, 0], [0, 0], [0, 1]])
GUESS = "bank"


def attend_other(X_q, X_kv, W_q, W_k, W_v):
    """The queries of X_q (T, d_model) read the keys and values of X_kv (S, d_model)."""
    Q, K, V = X_q @ W_q, X_kv @ W_k, X_kv @ W_v       # (T, d_k), (S, d_k), (S, d_v)
    scores = Q @ K.T / np.sqrt(K.shape[1])            # (T, d_k) @ (d_k, S) -> (T, S)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights = e / e.sum(axis=-1, keepdims=True)       # (T, S): each row sums to 1
    return weights @ V, weights                       # (T, S) @ (S, d_v) -> (T, d_v)
