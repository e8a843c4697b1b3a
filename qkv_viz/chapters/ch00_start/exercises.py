"""Chapter 0's exercises: predict what "bank" reads when a noun's query stops asking for money; write one query's attention.

``check_water_query`` and ``check_attend_one`` return a ``Feedback`` (``qkv_viz.chapters.feedback``); ``None`` means
"no answer yet". Worked solution: ``qkv_viz.chapters.ch00_start.solutions``.
"""
from __future__ import annotations

import numpy as np

from qkv_viz.core.attention import scaled_dot_product_attention
from qkv_viz.chapters.feedback import Feedback, as_array, check_function, no_answer

# The page's sentence and its rows of the page's table (features: water, money, noun).
RATES = ("the", "bank", "raised", "its", "rates")
RATES_X = np.array([[0, 0, 0], [0.3, 0.3, 1], [0, 0.5, 0], [0, 0, 0], [0, 1, 1]])  # (T, d_model) = (5, 3)
PAGE_W_K = np.array([[2, 0, 0], [0, 2, 0], [0, 0, 1]])  # (3, 3): offer your water, money and noun
PAGE_W_V = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 0]])  # (3, 3): hand over your water and money
PAGE_W_Q = np.array([[0, 0, 1], [0, 0, 1], [2, 2, 1]])  # (3, 3): water or money asks for a noun; a noun asks for all
WATER, MONEY, NOUN = 0, 1, 2


def bank_row(W_q):
    """What "bank" reads and gathers in "the bank raised its rates" with this ``W_q`` (3, 3):
    (weights (5,), output (3,))."""
    X = RATES_X
    out, w = scaled_dot_product_attention(X @ W_q, X @ PAGE_W_K, X @ PAGE_W_V)  # (5, 3), (5, 5)
    b = RATES.index("bank")
    return w[b], out[b]


def check_water_query(guess, W_q_no_money) -> Feedback:
    """``guess``: the word "bank" will read most; ``W_q_no_money`` (3, 3): the page's ``W_q`` with its
    noun row asking for water and a noun, not for money. Says whether the matrix is that; after a right guess,
    what "bank" reads and gathers; after a wrong one, only the guessed word's weight and a hint (not the answer)."""
    if guess is None or W_q_no_money is None:
        return no_answer()
    if not isinstance(guess, str) or guess.strip().strip('"\'').lower() not in RATES:
        return Feedback(False, f"guess should be one of the sentence's words {list(RATES)} as a string, "
                               f"got {guess!r}.")
    guess = guess.strip().strip('"\'').lower()
    try:
        W = as_array(W_q_no_money)[0].astype(float)
    except Exception as exc:  # noqa: BLE001
        return Feedback(False, f"W_q_no_money should be an array of numbers: {exc}")
    if W.shape != (3, 3):
        return Feedback(False, f"W_q_no_money must have the shape of W_q, (3, 3): one row per feature "
                               f"(water, money, noun), one column per query coordinate; got {W.shape}.")
    if not np.all(np.isfinite(W)):
        return Feedback(False, "W_q_no_money contains NaN or inf.")
    if np.any(W[[WATER, MONEY]] != PAGE_W_Q[[WATER, MONEY]]):
        return Feedback(False, "Change only the last row (the noun's): the water and money rows of W_q are "
                               "(0, 0, 1) each (a word about water or money asks for a noun), and stay so.")
    if W[NOUN, MONEY] != 0:
        return Feedback(False, f"The noun row is {W[NOUN].tolist()}: its second column asks for money. "
                               "A noun that does not ask for money leaves that column 0.")
    if W[NOUN, WATER] != PAGE_W_Q[NOUN, WATER]:
        return Feedback(False, f"The noun row is {W[NOUN].tolist()}: keep its water column 2, as on the page "
                               "(the task asks for the row (2, 0, 1)); change only the money column.")
    if W[NOUN, NOUN] != 1:
        return Feedback(False, f"The noun row is {W[NOUN].tolist()}: keep its last column 1, as on the page "
                               "(a noun still asks for a noun); change only the money column.")
    w, out = bank_row(W)
    top = RATES[int(w.argmax())]
    reads = ", ".join(f'"{t}" {x:.2f}' for t, x in zip(RATES, w))
    found = f'"bank" reads {reads}, and gathers water, money = {np.round(out, 2).tolist()}.'
    if guess == top:
        return Feedback(True, f'{found} Why does it still gather more money than water? Think, then open '
                              '"What happened".')
    return Feedback(False, f'Your matrix is right; your guess "{guess}" is not: "bank" gives it '
                           f'{w[RATES.index(guess)]:.2f} of its weight, and another word more. Hint: with the noun '
                           'row (2, 0, 1) the query of "bank" asks for water and for a noun, not for money. Look at '
                           'the water column of the sentence\'s rows, then at its noun column; then guess again.')


def _attend_reference(q, K, V):
    """One query ``q`` (d_k,) against keys ``K`` (S, d_k), values ``V`` (S, d_v):
    (output (d_v,), weights (S,), top: the index of the key it reads most)."""
    out, w = scaled_dot_product_attention(q[None, :], K, V)  # (1, d_v), (1, S)
    return out[0], w[0], int(np.argmax(w[0]))


def _attend_cases(seed=0):
    rng = np.random.default_rng(seed)
    b = RATES.index("bank")
    yield RATES_X[b] @ PAGE_W_Q, RATES_X @ PAGE_W_K, RATES_X @ PAGE_W_V  # the page's "bank"
    for S, d_k, d_v in ((1, 2, 2), (4, 3, 5), (7, 8, 1)):
        yield rng.normal(size=d_k), rng.normal(size=(S, d_k)), rng.normal(size=(S, d_v))


def _attend_diagnosis(result, expected, case):
    out, w = result[0], result[1]
    if len(result) == 3 and np.allclose(w, expected[1]) and np.allclose(out, expected[0]):
        return (f"output and weights are right; top should be {int(expected[2])}, the index (from 0) of the "
                f"largest weight, got {result[2]}.")
    if w.shape == expected[1].shape and not np.isclose(w.sum(), 1):
        return f"your weights sum to {w.sum():.3g}, not 1: softmax divides by the sum of the exponentials."
    if np.allclose(w, _attend_reference(case[0] * np.sqrt(case[0].shape[0]), case[1], case[2])[1]):
        return "your weights are those of the dot products unscaled: divide q . k by sqrt(d_k) first."
    return None


def check_attend_one(fn) -> Feedback:
    """``fn(q, K, V)`` -> (output (d_v,), weights (S,), top): one query's attention and the index of the key
    it reads most, checked on the page's "bank" and on random shapes."""
    return check_function(fn, _attend_reference, _attend_cases(), name="attend_one",
                          returns=("output", "weights", "top"),
                          diagnose=_attend_diagnosis,
                          praise='It agrees on the page\'s "bank" (top = 4: "rates") and on three random shapes, one key included.')
