"""Worked solutions to chapter 1's exercises (read them after trying; the notebook does not import them).

Each solution is written the way a reader would write it, in plain numpy from
the chapter's data, not by calling the package's ``soft_lookup``; the tests
check that every solution passes its checker.
"""
from __future__ import annotations

import numpy as np

from qkv_viz.chapters.ch01_library.exercises import NEW_QUERY, NEW_TEMPERATURE
from qkv_viz.chapters.ch01_library.library import DEMO_QUERY, demo_library


# Exercise 1: the soft lookup in four lines.
def soft_lookup(query, keys, values, temperature):
    """query (d_k,), keys (n_books, d_k), values (n_books, d_v), temperature > 0
    -> (output (d_v,), weights (n_books,))."""
    scores = keys @ query                      # (n_books, d_k) @ (d_k,) -> (n_books,)
    e = np.exp((scores - scores.max()) / temperature)  # largest exponent is exp(0): no overflow
    weights = e / e.sum()                      # (n_books,), positive, sums to 1
    output = weights @ values                  # (n_books,) @ (n_books, d_v) -> (d_v,)
    return output, weights


_lib = demo_library()

# Exercise 2: the new query "mostly food" now scores Kitchen Chemistry highest (0.5*0 + 1.5*2 = 3).
NEW_QUERY_WEIGHTS = soft_lookup(NEW_QUERY, _lib.keys, _lib.values, 1.0)[1]

# Exercise 3: at temperature 0.5 the scores are doubled before softmax; Robot Chefs is book 4 (index 3).
ROBOT_CHEFS_WEIGHT = soft_lookup(DEMO_QUERY, _lib.keys, _lib.values, NEW_TEMPERATURE)[1][3]

# Exercise 4: (2q) . k = 2 (q . k), and softmax((2 s) / 2) = softmax(s): temperature 2 undoes the doubling.
DOUBLED_QUERY_TEMPERATURE = 2.0

# Exercise 5: "cat" asks for a verb, its query is (0, 2); the key of "sat" is (0, 2), a dot product of 4.
# A determiner key (0, b) scores 2b against that query, more than 4 when b > 2. (A key (a, b) with
# a > 0 also works; it makes "the" more attractive to the tokens that ask for a noun as well.)
DETERMINER_KEY = np.array([0.0, 3.0])
