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


# Exercise 3: the condition the exercise states (derived in Going further). Book j gains from warming while d_j is below the weighted mean sum_i w_i d_i.
def gains_when_warmer(dots, tau):
    """dots (S,): the dot products q . k_j; tau > 0 -> (S,) bool: True where the weight rises as tau rises."""
    dots = np.asarray(dots, dtype=float)
    s = dots / tau                                           # (S,): the scores at this temperature
    e = np.exp(s - s.max())
    w = e / e.sum()                                          # (S,): the weights at tau
    mean = w @ dots                                          # (S,) @ (S,) -> (): the weighted mean of the dots
    return dots < mean                                       # below the weighted mean: warming gives weight
