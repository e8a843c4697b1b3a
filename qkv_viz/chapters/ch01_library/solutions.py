"""Worked solutions to chapter 1's exercises (read them after trying; the notebook does not import them).

Each solution is written the way a reader would write it, in plain numpy, not by
calling the package; the tests check that every solution passes its checker.
"""
from __future__ import annotations

import numpy as np


# Exercise 1: the page's lookup with the one query replaced by a table of queries, one row per reader.
def lookup_many(queries, keys, values, tau):
    """queries (T, d_k), keys (S, d_k), values (S, d_v), tau > 0 -> (output (T, d_v), weights (T, S))."""
    scores = queries @ keys.T / tau                          # (T, d_k) @ (d_k, S) -> (T, S): row i = reader i
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))  # minus each row's max: no overflow
    weights = e / e.sum(axis=-1, keepdims=True)              # (T, S): each reader's row sums to 1
    return weights @ values, weights                         # (T, S) @ (S, d_v) -> (T, d_v)


# Exercise 2: a checked-out book gets the score -inf, so exp gives it exactly 0 and the rest share the weight.
def lookup_available(query, keys, values, available, temperature):
    """query (d_k,), keys (S, d_k), values (S, d_v), available (S,) bool, temperature > 0
    -> (output (d_v,), weights (S,))."""
    scores = keys @ query / temperature                    # (S, d_k) @ (d_k,) -> (S,)
    scores = np.where(available, scores, -np.inf)          # (S,): checked-out books can never win
    e = np.exp(scores - scores.max())                      # exp(-inf) = 0; the max is an available book's
    weights = e / e.sum()                                  # (S,): sums to 1 over the available books
    return weights @ values, weights                       # (S,) @ (S, d_v) -> (d_v,)


# Exercise 3: the condition the exercise hints at (derived in the fold after the exercise). Book j gains from warming while d_j is below the weighted mean sum_i w_i d_i.
def gains_when_warmer(dots, tau):
    """dots (S,): the dot products q . k_j; tau > 0 -> (S,) bool: True where the weight rises as tau rises."""
    dots = np.asarray(dots, dtype=float)
    s = dots / tau                                           # (S,): the scores at this temperature
    e = np.exp(s - s.max())
    w = e / e.sum()                                          # (S,): the weights at tau
    mean = w @ dots                                          # (S,) @ (S,) -> (): the weighted mean of the dots
    return dots < mean                                       # below the weighted mean: warming gives weight
