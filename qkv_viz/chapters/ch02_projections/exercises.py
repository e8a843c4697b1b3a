"""Chapter 2 exercises: design a head (a determiner finds its noun), who prefers itself, the page's
gradients checked by finite differences.

Each ``check_*`` returns a ``Feedback`` (``qkv_viz.chapters.feedback``): right or
wrong with a hint that never gives the answer away; ``None`` means "no answer yet".
Worked solutions: ``qkv_viz.chapters.ch02_projections.solutions``.
"""
from __future__ import annotations

import numpy as np

from qkv_viz.chapters.feedback import Feedback, as_array, check_function, no_answer



# ---------------------------------------------------------------- exercise 1: design a head
PAGE_TOKENS = ("the", "dog", "chased", "a", "ball")
PAGE_X = np.array([[0, 0, 0, 1], [1, 0, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1], [0, 1, 0, 0]], dtype=float)
#                  features: animate, thing, action, determiner        (T, d_model) = (5, 4)


def page_weights(W_q, W_k, X=PAGE_X):
    """softmax((X W_q)(X W_k)^T / sqrt(d_k)) on the page's sentence: (T, T) = (5, 5)."""
    scores = (X @ W_q) @ (X @ W_k).T / np.sqrt(W_k.shape[1])  # (5, d_k) @ (d_k, 5) -> (5, 5)
    return _softmax(scores)


def check_determiner_head(W_q, W_k) -> Feedback:
    """Exercise 1: hand-built ``W_q``, ``W_k``, each (4, d_k), such that on the page's sentence
    "a" reads "ball" most with a weight above 0.5 and "chased" still reads "dog" most.
    (Matrices, not a function: a design has many right answers.)"""
    if W_q is None or W_k is None:
        return no_answer()
    result = (W_q, W_k)
    try:
        W_q, W_k = (as_array(m)[0].astype(float) for m in result)
    except Exception as exc:  # noqa: BLE001
        return Feedback(False, f"W_q and W_k should be arrays of numbers: {exc}")
    if W_q.ndim != 2 or W_k.ndim != 2 or W_q.shape[0] != 4 or W_k.shape[0] != 4 or W_q.shape[1] != W_k.shape[1]:
        return Feedback(False, f"W_q and W_k must both have shape (4, d_k), one row per feature and the same d_k; "
                               f"got {W_q.shape} and {W_k.shape}.")
    if not (np.all(np.isfinite(W_q)) and np.all(np.isfinite(W_k))):
        return Feedback(False, "W_q or W_k contains NaN or inf.")
    w = page_weights(W_q, W_k)
    t = PAGE_TOKENS.index

    def reads(row):  # what a row of weights reads most, in words
        if np.ptp(row) < 1e-9:
            return "every token equally"
        return f'"{PAGE_TOKENS[int(row.argmax())]}" most'

    a_row, verb_row = w[t("a")], w[t("chased")]
    if a_row.argmax() != t("ball") or a_row[t("ball")] <= 0.5:
        return Feedback(False, f'"a" reads "ball" with weight {a_row[t("ball")]:.2f}, and reads {reads(a_row)}. '
                               "Its query comes from the determiner row of W_q; it must point along a key "
                               "coordinate that only a thing (a noun that cannot act) offers.")
    if verb_row.argmax() != t("dog"):
        return Feedback(False, f'"a" finds "ball" ({a_row[t("ball")]:.2f}), but "chased" now reads '
                               f'{reads(verb_row)}, not "dog" most: keep the verb\'s rule too.')
    return Feedback(True, f'"a" reads "ball" with weight {a_row[t("ball")]:.2f} and "chased" still reads "dog" '
                          f'({verb_row[t("dog")]:.2f}). Note that "the" now reads "ball" too: with the same features, '
                          "a head cannot tell the two determiners apart (chapter 10 adds positions).")


def _softmax(s):
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


# ---------------------------------------------------------------- exercise 2: who prefers itself?
PAGE_W_Q = np.array([[0, 2], [0, 2], [2, 0], [0, 0.]])  # the page's hand-built W_q, (4, 2)
PAGE_W_K = np.array([[2, 0], [0, 0], [0, 2], [0, 0.]])  # the page's hand-built W_k, (4, 2)


def reference_self_preference(X, W_q, W_k):
    """The fraction of tokens that no other token beats: q_i . k_i >= q_i . k_j for every j (a tie counts
    as preferring itself). X (T, d_model), W_q/W_k (d_model, d_k)."""
    scores = (X @ W_q) @ (X @ W_k).T  # (T, d_k) @ (d_k, T) -> (T, T)
    return float(np.mean(scores.diagonal() >= scores.max(axis=1)))


def self_preference_cases(seed=None, n_cases: int = 6) -> list:
    """``(X (T, d_model), W_q, W_k)``: first the page's X with no projection (W_q = W_k = I: "the" and "a"
    tie, fraction 1) and with the page's W_q, W_k (fraction 0.4: "the" and "a" tie with everyone); then
    fresh random cases, the first two of them with no projection."""
    rng = np.random.default_rng(seed)
    cases = [(PAGE_X.copy(), np.eye(4), np.eye(4)), (PAGE_X.copy(), PAGE_W_Q.copy(), PAGE_W_K.copy())]
    for i in range(n_cases):
        T, d_model = int(rng.integers(4, 9)), int(rng.integers(3, 7))
        X = rng.standard_normal((T, d_model))
        X = X / np.linalg.norm(X, axis=1, keepdims=True)  # equal lengths: the case where a token is its own best match
        if i < 2:
            W_q = W_k = np.eye(d_model)
        else:
            d_k = int(rng.integers(2, d_model + 1))
            W_q, W_k = rng.standard_normal((d_model, d_k)), rng.standard_normal((d_model, d_k))
        cases.append((X, W_q, W_k))
    return cases


def _diagnose_self_preference(got, want, case):
    X, W_q, W_k = case
    g = float(np.ravel(got)[0])
    T = X.shape[0]
    if g > 1 or g < 0:
        return f"a fraction lies between 0 and 1; you returned {g:.4g}. Divide the count by T = {T}."
    scores = (X @ W_q) @ (X @ W_k).T
    if np.isclose(g, np.mean(scores.argmax(axis=1) == np.arange(T))):
        return ("this case has ties: a row whose largest score appears more than once (on the page's sentence "
                "\"the\" and \"a\" have the same features). argmax picks only the first of tied entries; here a "
                "token prefers itself when no score in its row is larger than its own, ties included.")
    if np.isclose(g, np.mean(scores.diagonal() > np.delete(scores, np.s_[::T + 1]).reshape(T, T - 1).max(axis=1))):
        return ("you counted only strict wins; here a tie counts as preferring itself (no score in the row "
                "larger than its own).")
    if np.isclose(g, np.mean(scores.diagonal() >= scores.max(axis=0))) or \
            np.isclose(g, np.mean(scores.argmax(axis=0) == np.arange(T))):
        return ("you compared each key with the best query for it (axis 0); the question is each token's "
                "best key: along each row, axis 1.")
    return (f"on this case {round(want * T)} of the {T} tokens have no score in their row larger than their "
            "own. Compute the (T, T) scores (X W_q)(X W_k)^T and compare each row's diagonal entry with the "
            "row's largest entry.")


def check_self_preference(fn, seed=None) -> Feedback:
    """Exercise 2: ``fn(X, W_q, W_k) -> fraction`` of tokens that no other token beats (ties count)."""
    return check_function(fn, reference_self_preference, self_preference_cases(seed), name="self_preference",
                          diagnose=_diagnose_self_preference, atol=1e-9,
                          praise="Without projections no token of equal length is beaten by another (fraction "
                                 "1, the page's twins \"the\" and \"a\" by a tie); the page's projections give "
                                 "0.4 (only \"the\" and \"a\", which score everyone 0), random ones mostly less.")


# ---------------------------------------------------------------- exercise 3: the page's gradients, checked
class PageLoss:
    """The page's loss -log w[chased, dog] as a function of one matrix (``"W_q"`` or ``"W_k"``), the other held
    fixed. ``loss(W)`` -> a float; ``loss.grad(W)`` -> the page's two gradient lines, (d_model, d_k)."""

    def __init__(self, which: str, other, X=PAGE_X, query_row: int = 2, target: int = 1):
        if which not in ("W_q", "W_k"):
            raise ValueError(f"which must be 'W_q' or 'W_k', got {which!r}")
        self.which, self.other, self.X = which, np.asarray(other, dtype=float), np.asarray(X, dtype=float)
        self.query_row, self.target = query_row, target

    def _parts(self, W):
        W = np.asarray(W, dtype=float)
        W_q, W_k = (W, self.other) if self.which == "W_q" else (self.other, W)
        x = self.X[self.query_row]                           # (d_model,)
        q, K = x @ W_q, self.X @ W_k                         # (d_k,), (T, d_k)
        d_k = W_q.shape[1]
        w = _softmax(K @ q / np.sqrt(d_k))                   # (T,)
        return x, q, K, w, d_k

    def __call__(self, W) -> float:
        w = self._parts(W)[3]
        return float(-np.log(w[self.target]))

    def grad(self, W) -> np.ndarray:
        x, q, K, w, d_k = self._parts(W)
        g = (w - np.eye(len(w))[self.target]) / np.sqrt(d_k)  # (T,): slope with respect to the scores
        if self.which == "W_q":
            return np.outer(x, g @ K)                          # (d_model,) outer (d_k,)
        return self.X.T @ np.outer(g, q)                       # (d_model, T) @ (T, d_k)


def gradient_cases(seed=None, n_cases: int = 4) -> list:
    """``(loss, W)`` pairs at fresh random matrices (scale 0.5), for W_q and for W_k in turn."""
    rng = np.random.default_rng(seed)
    cases = []
    for i in range(n_cases):
        d_k = int(rng.integers(2, 4))
        W, other = 0.5 * rng.standard_normal((2, 4, d_k))
        cases.append((PageLoss("W_q" if i % 2 == 0 else "W_k", other), W))
    return cases


def _diagnose_gradient(got, want, case):
    if np.allclose(got, -want, atol=1e-5):
        return "your gradient has the wrong sign: (loss(W + eps) - loss(W - eps)) / (2 eps), not the other way."
    if np.allclose(got, 2 * want, atol=1e-5):
        return "your gradient is twice too large: a central difference divides by 2 * eps."
    return None


def check_numerical_gradient(fn, seed=None) -> Feedback:
    """Exercise 3: ``fn(loss, W) -> (d_model, d_k)`` finite differences, compared with the page's gradient lines."""
    return check_function(fn, lambda loss, W: loss.grad(W), gradient_cases(seed), name="numerical_gradient",
                          diagnose=_diagnose_gradient, atol=1e-6,
                          praise="Finite differences agree with the page's two gradient lines, for W_q "
                                 "and for W_k: the chain rule on the page was right.")
