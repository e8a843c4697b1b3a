"""Worked solutions to chapter 3's exercises (kept out of the reading flow).

Try the exercises first; each answer below shows the work.
"""
from __future__ import annotations

import numpy as np



# Exercise 1: X W_q = Q is a linear system for W_q, one column of Q at a time. For a square X with independent rows
# (the page's TOY_X), W_q = X^{-1} Q, which np.linalg.solve(X, Q) finds without forming the inverse. With more
# features than tokens, X has no inverse and many W's work; np.linalg.lstsq returns the smallest one, which fits
# exactly because X's rows are independent. lstsq also handles the square case, so one line does both.
def projections(X, Q, K):
    """X (T, d_model) token vectors, Q and K (T, d_k) the wanted queries and keys -> (W_q, W_k), each (d_model, d_k),
    with X @ W_q = Q and X @ W_k = K."""
    W_q = np.linalg.lstsq(X, Q, rcond=None)[0]          # (T, d_model) W = (T, d_k) -> W: (d_model, d_k)
    W_k = np.linalg.lstsq(X, K, rcond=None)[0]          # (d_model, d_k)
    return W_q, W_k


# Exercise 2: scaling k_j by c multiplies q . k_j by c (and its score by the same c: the 1/sqrt(d_k) cancels in
# the tie), so c q . k_j = best, the largest of the other keys' q . k_i, and c = best / q . k_j, which must be
# positive. Key j loses, so q . k_j < best. If q . k_j > 0, then best > 0 and c > 1: a longer key ties. If q . k_j < 0
# and every other key points away too (best < 0), then 0 < c < 1: a shorter key ties. Otherwise (q . k_j <= 0 and
# best >= 0) no positive length ties. On the page (q0, key 0): dots [2, 5, 1], c = 5 / 2 = 2.5.
def winning_scale(q, K, j):
    """q (d_k,) a query, K (S, d_k) keys, j the index of a key that does not win -> the factor c > 0 (a float) at
    which c k_j ties the best other key, or np.inf when no positive factor does."""
    dots = K @ q                                        # (S, d_k) @ (d_k,) -> (S,): q . k_i, one per key
    best = np.delete(dots, j).max()                     # the best of the other keys
    if dots[j] > 0 or (dots[j] < 0 and best < 0):       # best / dots[j] is then positive
        return best / dots[j]
    return np.inf


# Exercise 3: output = w0 v0 + w1 v1 + w2 v2 and w0 + w1 + w2 = 1: three linear equations.
def weights_from_output(V, output):
    """V (3, 2) values, output (2,) a point mixed from them -> weights (3,)."""
    A = np.vstack([V.T, np.ones(3)])                    # (3, 3): rows x-coordinates, y-coordinates, ones
    b = np.append(output, 1.0)                          # (3,): the point, and "the weights sum to 1"
    return np.linalg.solve(A, b)                        # (3, 3) x = (3,) -> (3,)


# Exercise 4: q . k_a = q . k_b means q . (k_a - k_b) = 0, so q is at right angles to d = k_a - k_b:
# n = (-d_y, d_x) or -n. Both tie the two keys; the one whose score for k_a beats every other key's wins.
# On the page's keys (a, b = 0, 2): d = (-1, 1), n = (-1, -1), q . k = [-1, -4, -1]: weights 0.472, 0.057, 0.472.
def tie_query(K, a, b):
    """K (S, 2) keys, a and b two indices -> q (2,) giving keys a and b equal weight, every other key less."""
    d = K[a] - K[b]                                     # (2,)
    n = np.array([-d[1], d[0]])                         # (2,): n . d = 0
    others = np.delete(K, [a, b], axis=0)               # (S - 2, 2)
    return n if np.all(others @ n < K[a] @ n) else -n
