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


# Exercise 3: nudge one entry at a time up and down by eps; the central difference is accurate to
# about eps**2, so eps = 1e-5 agrees with the page's lines to about 1e-9.
def numerical_gradient(loss, W, eps=1e-5):
    """loss: a function of a matrix W (d_model, d_k) -> a float. Returns the (d_model, d_k) slopes."""
    W = np.array(W, dtype=float)
    grad = np.zeros_like(W)
    for idx in np.ndindex(W.shape):
        up, down = W.copy(), W.copy()
        up[idx] += eps
        down[idx] -= eps
        grad[idx] = (loss(up) - loss(down)) / (2 * eps)
    return grad
