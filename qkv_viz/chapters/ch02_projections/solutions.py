"""Worked solutions to chapter 2's exercises (kept out of the reading flow).

Try the exercises first; each answer below says why it is right.
"""
from __future__ import annotations

import numpy as np


# Exercise 1: a third key coordinate, "I am a thing", offered by the thing row of W_k and asked
# for by the determiner row of W_q; the page's two coordinates (the verb's rule) stay as they were.
# Each (4, 3): rows animate, thing, action, determiner.
DETERMINER_W_Q = np.array([[0, 2, 0],      # animate: asks for an action
                           [0, 2, 0],      # thing: asks for an action
                           [2, 0, 0],      # action: asks for someone who can act
                           [0, 0, 3.]])    # determiner: asks for a thing
DETERMINER_W_K = np.array([[2, 0, 0],      # animate: I can act
                           [0, 0, 2],      # thing: I am a thing
                           [0, 2, 0],      # action: I am an action
                           [0, 0, 0.]])    # determiner: offers nothing


# Exercise 2: each row's own score (the diagonal) against the row's largest; ">=" counts a tie as
# preferring itself, as Cauchy-Schwarz does (x_i . x_j <= |x_i|^2 allows equality).
def self_preference(X, W_q, W_k):
    """X (T, d_model), W_q/W_k (d_model, d_k) -> the fraction of tokens no other token beats."""
    scores = (X @ W_q) @ (X @ W_k).T                         # (T, d_k) @ (d_k, T) -> (T, T)
    return float(np.mean(scores.diagonal() >= scores.max(axis=1)))


# Exercise 3: the page's lines once per pair, summed (the loss is a sum). For pair (i, t) only row i's
# weights enter: g = (w_i - y_t) / sqrt(d_k); q_i = x_i W_q is in every score of row i, so
# dl/dq_i = sum_j g_j k_j = g K; k_j is in one score of that row, so dl/dk_j = g_j q_i.
def pair_gradients(X, W_q, W_k, pairs):
    """X (T, d_model), W_q/W_k (d_model, d_k), pairs (n, 2) of (reader, target) -> (dW_q, dW_k)."""
    Q, K = X @ W_q, X @ W_k                                  # (T, d_k) each
    d_k = K.shape[1]
    scores = Q @ K.T / np.sqrt(d_k)                          # (T, T)
    e = np.exp(scores - scores.max(axis=1, keepdims=True))
    w = e / e.sum(axis=1, keepdims=True)                     # (T, T): each row sums to 1
    dW_q, dW_k = np.zeros(W_q.shape), np.zeros(W_k.shape)
    for i, t in pairs:
        g = (w[i] - np.eye(len(X))[t]) / np.sqrt(d_k)        # (T,)
        dW_q += np.outer(X[i], g @ K)                        # (d_model,) outer (d_k,)
        dW_k += X.T @ np.outer(g, Q[i])                      # (d_model, T) @ (T, d_k)
    return dW_q, dW_k
