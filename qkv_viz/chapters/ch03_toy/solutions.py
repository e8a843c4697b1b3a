"""Worked solutions to chapter 3's exercises (kept out of the reading flow).

Try the exercises first; each answer below shows the work.
"""
from __future__ import annotations

import numpy as np

from qkv_viz.chapters.ch03_toy.toy import TOY_K


# Exercise 1: the new query q = (1, -1) against k0 = (0, 1), k1 = (3, 1), k2 = (1, 0).
# q . k_j = [0 - 1, 3 - 1, 1 - 0] = [-1, 2, 1]; divided by sqrt(2): [-0.707, 1.414, 0.707];
# e^score = [0.493, 4.113, 2.028], their sum 6.634; weights = [0.074, 0.620, 0.306]: k1 wins by its length,
# though k2 points more nearly along q.
def row_by_hand(q, K):
    """The row of weights of one query q (d_k,) against the keys K (S, d_k): (S,)."""
    dots = K @ q                                        # (S, d_k) @ (d_k,) -> (S,): one dot product per key
    e = np.exp(dots / np.sqrt(K.shape[1]))              # (S,): scale by 1/sqrt(d_k), then exponentiate
    return e / e.sum()                                  # (S,): normalise, the weights sum to 1


WEIGHTS_Q = row_by_hand(np.array([1.0, -1.0]), TOY_K)   # the answer to check_row_by_hand


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
