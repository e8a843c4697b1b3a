"""Chapter 0's exercises: predict what "bank" reads when money stops making a token a topic; write one sentence
reading another.

``check_money_key`` and ``check_attend_other`` return a ``Feedback`` (``qkv_viz.chapters.feedback``); ``None`` means
"no answer yet". Worked solution: ``qkv_viz.chapters.ch00_start.solutions``.
"""
from __future__ import annotations

import numpy as np

from qkv_viz.core.attention import scaled_dot_product_attention
from qkv_viz.chapters.feedback import Feedback, as_array, check_function, no_answer

# The page's sentence and its rows of the page's table (features: water, money, noun).
RATES = ("the", "bank", "raised", "its", "rates")
RATES_X = np.array([[0, 0, 0], [0.3, 0.3, 1], [0, 0.5, 0], [0, 0, 0], [0, 1, 1]])  # (T, d_model) = (5, 3)
RIVER = ("the", "river", "bank", "flooded")
RIVER_X = np.array([[0, 0, 0], [1, 0, 1], [0.3, 0.3, 1], [1, 0, 0]])  # (S, d_model) = (4, 3)
PAGE_W_Q = np.array([[0, 0], [0, 0], [2, 1]])  # (3, 2): only a noun asks: for a topic, and a little for a noun
PAGE_W_K = np.array([[1, 0], [1, 0], [0, 1]])  # (3, 2): water or money makes a topic; a noun is a noun
PAGE_W_V = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 0]])  # (3, 3): hand over your water and money
WATER, MONEY, NOUN = 0, 1, 2


def bank_row(W_k):
    """What "bank" reads and gathers in "the bank raised its rates" with this ``W_k`` (3, 2):
    (weights (5,), output (3,))."""
    X = RATES_X
    out, w = scaled_dot_product_attention(X @ PAGE_W_Q, X @ W_k, X @ PAGE_W_V)  # (5, 3), (5, 5)
    b = RATES.index("bank")
    return w[b], out[b]


def check_money_key(guess, W_k_no_money) -> Feedback:
    """``guess``: the word "bank" will read most; ``W_k_no_money`` (3, 2): the page's ``W_k`` with its
    money row (0, 0), so money no longer makes a token a topic. Says whether the matrix is that; after a right
    guess, what "bank" reads and gathers; after a wrong one, only the guessed word's weight and a hint (not the
    answer)."""
    if guess is None or W_k_no_money is None:
        return no_answer()
    if not isinstance(guess, str) or guess.strip().strip('"\'').lower() not in RATES:
        return Feedback(False, f"guess should be one of the sentence's words {list(RATES)} as a string, "
                               f"got {guess!r}.")
    guess = guess.strip().strip('"\'').lower()
    try:
        W = as_array(W_k_no_money)[0].astype(float)
    except Exception as exc:  # noqa: BLE001
        return Feedback(False, f"W_k_no_money should be an array of numbers: {exc}")
    if W.shape != (3, 2):
        return Feedback(False, f"W_k_no_money must have the shape of W_k, (3, 2): one row per feature "
                               f"(water, money, noun), one column per key coordinate; got {W.shape}.")
    if not np.all(np.isfinite(W)):
        return Feedback(False, "W_k_no_money contains NaN or inf.")
    if np.any(W[[WATER, NOUN]] != PAGE_W_K[[WATER, NOUN]]):
        return Feedback(False, "Change only the money row: the water row of W_k stays (1, 0) (water makes a "
                               "topic) and the noun row (0, 1) (a noun is a noun).")
    if np.any(W[MONEY] != 0):
        return Feedback(False, f"The money row is {W[MONEY].tolist()}: money still counts in the key. "
                               "A money row that makes nothing is (0, 0).")
    w, out = bank_row(W)
    top = RATES[int(w.argmax())]
    reads = ", ".join(f'"{t}" {x:.2f}' for t, x in zip(RATES, w))
    found = f'"bank" reads {reads}, and gathers water, money = {np.round(out[:2], 2).tolist()}.'
    if guess == top:
        return Feedback(True, f'{found} Why does it still gather more money than water? Think, then open '
                              '"What happened".')
    return Feedback(False, f'Your matrix is right; your guess "{guess}" is not: "bank" gives it '
                           f'{w[RATES.index(guess)]:.2f} of its weight, and another word more. Hint: the query of '
                           '"bank" asks for a topic and a noun. Without money, which words of the sentence are still '
                           'a topic? Look at the water column of the sentence\'s rows; then guess again.')


def _other_reference(X_q, X_kv, W_q, W_k, W_v):
    """The queries of ``X_q`` (T, d_model) read the keys and values of ``X_kv`` (S, d_model):
    (output (T, d_v), weights (T, S))."""
    return scaled_dot_product_attention(X_q @ W_q, X_kv @ W_k, X_kv @ W_v)


def _other_cases(seed=0):
    rng = np.random.default_rng(seed)
    yield RATES_X, RIVER_X, PAGE_W_Q, PAGE_W_K, PAGE_W_V  # "the bank raised its rates" reads "the river bank flooded"
    for T, S, d_model, d_k, d_v in ((2, 5, 3, 4, 2), (3, 1, 2, 5, 3), (4, 6, 4, 2, 3)):
        yield (rng.normal(size=(T, d_model)), rng.normal(size=(S, d_model)), rng.normal(size=(d_model, d_k)),
               rng.normal(size=(d_model, d_k)), rng.normal(size=(d_model, d_v)))


def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _slips(X_q, X_kv, W_q, W_k, W_v):
    """The usual slips, each as (what it returns: (output, weights), the sentence that names it)."""
    Q, K, V = X_q @ W_q, X_kv @ W_k, X_kv @ W_v
    d_k, d_v, d_model = K.shape[1], V.shape[1], X_q.shape[1]
    right = Q @ K.T / np.sqrt(d_k)  # (T, S)
    w = _softmax(right)
    yield (_other_reference(X_q, X_q, W_q, W_k, W_v),
           "your keys and values come from X_q, the sentence that asks. They come from X_kv, the sentence "
           "being read: K = X_kv @ W_k, V = X_kv @ W_v.")
    yield (_other_reference(X_kv, X_q, W_q, W_k, W_v),
           "the two sentences are swapped: the queries come from X_q (Q = X_q @ W_q), the keys and values "
           "from X_kv.")
    yield (_other_reference(X_kv, X_kv, W_q, W_k, W_v),
           "your queries come from X_kv: Q = X_q @ W_q, one row per token that asks (T rows).")
    yield ((_softmax(Q @ K.T) @ V, _softmax(Q @ K.T)),
           f"your weights are those of the dot products unscaled: divide Q @ K.T by sqrt(d_k) "
           f"(d_k = {d_k} here) before the softmax.")
    for wrong in sorted({d_v, d_model} - {d_k}):
        what = " = ".join(f"sqrt({n})" for n, v in (("d_v", d_v), ("d_model", d_model)) if v == wrong)
        ws = _softmax(Q @ K.T / np.sqrt(wrong))
        yield ((ws @ V, ws), f"you divide by {what} = sqrt({wrong}); the scores are divided by "
                             f"sqrt(d_k) = sqrt({d_k}), the width of the queries and keys.")
    w0 = _softmax(right, axis=0)
    yield ((w0 @ V, w0), "your softmax runs down the columns (axis 0): each query's row of weights must sum "
                         "to 1, over the S keys it reads (axis -1).")
    whole = np.exp(right - right.max()) / np.exp(right - right.max()).sum()
    yield ((whole @ V, whole), "your softmax divides by the sum over the whole table: each query's row of "
                               "weights must sum to 1 on its own (sum along axis -1, keepdims=True).")
    yield ((w @ X_kv, w), "your output mixes the rows of X_kv: it mixes the values, V = X_kv @ W_v.")
    e = np.exp(right)
    yield ((e @ V, e), "your weights do not sum to 1 along each row: softmax divides by the sum of the "
                       "exponentials.")


def _same(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return a.shape == b.shape and np.allclose(a, b)


def _other_diagnosis(result, expected, case):
    out, w = result
    T, S = case[0].shape[0], case[1].shape[0]
    for (o, ws), why in _slips(*case):
        if _same(w, ws) and _same(out, o):
            return why
    if _same(w, expected[1].T) or (w.shape == (S, T) != (T, S)):
        return f"your weights have shape {w.shape}: one row per query (T = {T}), one column per key (S = {S})."
    if _same(w, expected[1]) and not _same(out, expected[0]):
        return "your weights are right; the output is weights @ V, one mix of the values per query."
    return None


def check_attend_other(fn) -> Feedback:
    """``fn(X_q, X_kv, W_q, W_k, W_v)`` -> (output (T, d_v), weights (T, S)): the queries of one sentence
    read the keys and values of another; checked on the page's two sentences and on random shapes."""
    out, _ = _other_reference(*next(_other_cases()))
    b = RATES.index("bank")
    return check_function(fn, _other_reference, _other_cases(), name="attend_other",
                          returns=("output", "weights"), diagnose=_other_diagnosis, shape_hints=True,
                          praise=f'It agrees on the page\'s sentences and on three random shapes, one with S = 1. '
                                 f'Reading "the river bank flooded", the "bank" of "the bank raised its rates" '
                                 f'gathers water, money = {np.round(out[b, :2], 2).tolist()}: what it gathered '
                                 f'in the river sentence itself. Its query is the same; what it gathers comes '
                                 f'from the sentence it reads.')
