"""Worked solutions to chapter 1's exercises (read them after trying; the notebook does not import them).

Each solution is written the way a reader would write it, in plain numpy, not by
calling the package; the tests check that every solution passes its checker.
"""
from __future__ import annotations

import numpy as np


# Exercise 1: the page's four lines, with a batch axis and T queries against S books.
def lookup_many(queries, keys, values, temperature):
    """queries (B, T, d_k), keys (B, S, d_k), values (B, S, d_v), temperature > 0
    -> (output (B, T, d_v), weights (B, T, S))."""
    scores = queries @ keys.swapaxes(-1, -2)                 # (B, T, d_k) @ (B, d_k, S) -> (B, T, S)
    scores = scores - scores.max(axis=-1, keepdims=True)     # each row's largest becomes 0: no overflow
    e = np.exp(scores / temperature)                         # (B, T, S)
    weights = e / e.sum(axis=-1, keepdims=True)              # each query's row sums to 1 (over the S books)
    output = weights @ values                                # (B, T, S) @ (B, S, d_v) -> (B, T, d_v)
    return output, weights


# Exercise 2: a checked-out book gets the score -inf, so exp gives it exactly 0 and the rest share the weight.
def lookup_available(query, keys, values, available, temperature):
    """query (d_k,), keys (S, d_k), values (S, d_v), available (S,) bool, temperature > 0
    -> (output (d_v,), weights (S,))."""
    scores = keys @ query / temperature                    # (S, d_k) @ (d_k,) -> (S,)
    scores = np.where(available, scores, -np.inf)          # (S,): checked-out books can never win
    e = np.exp(scores - scores.max())                      # exp(-inf) = 0; the max is an available book's
    weights = e / e.sum()                                  # (S,): sums to 1 over the available books
    return weights @ values, weights                       # (S,) @ (S, d_v) -> (d_v,)


# Exercise 3: a grid of temperatures much finer than the page's, then the argmax of book j's column.
def peak_temperature(dots, j):
    """dots (S,): the dot products q . k_j; j: a book -> the temperature in [0.01, 100] where its weight peaks."""
    taus = np.geomspace(0.01, 100, 100_001)[:, None]         # (100001, 1): neighbours 0.01 % apart
    scores = np.asarray(dots) / taus                         # (S,) / (100001, 1) -> (100001, S)
    e = np.exp(scores - scores.max(axis=1, keepdims=True))
    w = e / e.sum(axis=1, keepdims=True)                     # row i = the weights at taus[i]
    return float(taus[np.argmax(w[:, j]), 0])
