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


# Exercise 2: the projections, then the page's lines with swapaxes in place of .T, so a batch axis rides along.
def attend(X, W_q, W_k, W_v):
    """X (B, T, d_model), W_q/W_k (d_model, d_k), W_v (d_model, d_v)
    -> (output (B, T, d_v), weights (B, T, T))."""
    Q, K, V = X @ W_q, X @ W_k, X @ W_v                      # (B, T, d_model) @ (d_model, d) -> (B, T, d)
    scores = Q @ K.swapaxes(-1, -2) / np.sqrt(W_k.shape[1])  # (B, T, d_k) @ (B, d_k, T) -> (B, T, T)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))  # each row's largest exponent is 0
    weights = e / e.sum(axis=-1, keepdims=True)              # each row sums to 1
    return weights @ V, weights                              # (B, T, T) @ (B, T, d_v) -> (B, T, d_v)


# Exercise 3: each row's best key, compared with the row's own index.
def self_preference(X, W_q, W_k):
    """X (T, d_model), W_q/W_k (d_model, d_k) -> the fraction of tokens whose best key is their own."""
    scores = (X @ W_q) @ (X @ W_k).T                         # (T, d_k) @ (d_k, T) -> (T, T)
    return float(np.mean(scores.argmax(axis=1) == np.arange(len(X))))


# Exercise 4: x0 . x1 = |x0| |x1| cos(60 deg) = 5 * |x1| / 2 beats x0 . x0 = |x0|^2 = 25
# as soon as |x1| > 10. Only equal lengths make this impossible, since cos <= 1.
RIVAL_LENGTH = 10.0

# Exercise 5: W_q W_k^T = (512, 64) @ (64, 512). A product can have no larger rank than
# its narrowest factor, 64 (random matrices reach it), so at least 512 - 64 directions
# are sent to zero: the head's scores cannot see them.
BLIND_DIRECTIONS = 448


# Exercise 6: nudge one entry at a time up and down by eps; the central difference is accurate to
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
