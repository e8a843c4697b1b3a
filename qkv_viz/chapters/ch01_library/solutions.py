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


# Exercise 2: the top weight falls steadily as the temperature rises, so bisect (on log t: from 1e-4 to 1e4).
def temperature_for(scores, top):
    """scores (n,), 1/n < top < 1 -> the temperature t at which max softmax(scores / t) = top."""
    def top_at(t):
        e = np.exp((scores - scores.max()) / t)
        return (e / e.sum()).max()

    lo, hi = np.log(1e-4), np.log(1e4)
    for _ in range(100):                   # each step halves the interval: 100 steps are plenty
        mid = (lo + hi) / 2
        if top_at(np.exp(mid)) > top:      # still too sharp: the answer is hotter
            lo = mid
        else:
            hi = mid
    return float(np.exp((lo + hi) / 2))


# Exercise 3: (2q) . k = 2 (q . k), and softmax((2 s) / 2) = softmax(s): temperature 2 undoes the doubling.
DOUBLED_QUERY_TEMPERATURE = 2.0
