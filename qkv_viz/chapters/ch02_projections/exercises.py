"""Chapter 2 exercises: design a head (a determiner finds its noun), who prefers itself, the gradients
of a loss over several (reader, target) pairs, used to train exercise 1's head.

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
                          f'({verb_row[t("dog")]:.2f}). Your head finds "a thing", not "a determiner\'s own noun": "the" '
                          f'reads "ball" too ({w[t("the"), t("ball")]:.2f}), since it has the same features as "a" and '
                          "a head sees features, not positions (chapter 10 adds them).")


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


# ---------------------------------------------------------------- exercise 3: train the determiner too
PAGE_PAIRS = ((2, 1), (3, 4))  # ("chased", "dog") and ("a", "ball"): (reader, token it should read)


def reference_pair_gradients(X, W_q, W_k, pairs):
    """The slopes of l = sum over (i, t) in ``pairs`` of -log w[i, t], w = softmax((X W_q)(X W_k)^T / sqrt(d_k))
    row by row. X (T, d_model), W_q/W_k (d_model, d_k), pairs (n, 2) of token indices -> (dW_q, dW_k)."""
    X, W_q, W_k = (np.asarray(a, dtype=float) for a in (X, W_q, W_k))
    Q, K = X @ W_q, X @ W_k                                  # (T, d_k) each
    d_k = W_k.shape[1]
    w = _softmax(Q @ K.T / np.sqrt(d_k))                     # (T, T)
    dW_q, dW_k = np.zeros_like(W_q), np.zeros_like(W_k)
    for i, t in np.asarray(pairs, dtype=int).reshape(-1, 2):
        g = (w[i] - np.eye(len(X))[t]) / np.sqrt(d_k)        # (T,): slope in row i's dot products
        dW_q += np.outer(X[i], g @ K)                        # x_i^T (sum_j g_j k_j)
        dW_k += X.T @ np.outer(g, Q[i])                      # sum_j x_j^T g_j q_i
    return dW_q, dW_k


def page_start(d_k: int = 2):
    """The page's random start: W_q, W_k = 0.1 * standard normal draws from default_rng(0), each (4, d_k)."""
    rng = np.random.default_rng(0)
    return 0.1 * rng.standard_normal((4, d_k)), 0.1 * rng.standard_normal((4, d_k))


def pair_gradient_cases(seed=None, n_cases: int = 4) -> list:
    """``(X, W_q, W_k, pairs)``: the page's sentence at the page's start with the page's one pair, then with
    both pairs; then fresh random cases (one of them with a reader that appears in two pairs)."""
    W_q, W_k = page_start()
    cases = [(PAGE_X.copy(), W_q.copy(), W_k.copy(), np.array(PAGE_PAIRS[:1])),
             (PAGE_X.copy(), W_q.copy(), W_k.copy(), np.array(PAGE_PAIRS))]
    rng = np.random.default_rng(seed)
    for i in range(n_cases):
        T, d_model, d_k = int(rng.integers(4, 8)), int(rng.integers(3, 6)), int(rng.integers(2, 4))
        X = rng.standard_normal((T, d_model))
        W_q, W_k = 0.5 * rng.standard_normal((2, d_model, d_k))
        readers = rng.choice(T, size=3, replace=False)
        if i == 0:
            readers[1] = readers[0]  # one token asked to read two others
        pairs = np.stack([readers, rng.integers(0, T, size=3)], axis=1)
        cases.append((X, W_q, W_k, pairs))
    return cases


def _diagnose_pair_gradients(got, want, case):
    X, W_q, W_k, pairs = case
    g_q, g_k = got
    w_q, w_k = want
    close = lambda a, b: np.allclose(a, b, rtol=1e-4, atol=1e-6)  # noqa: E731
    if close(g_q, -w_q) and close(g_k, -w_k):
        return "both slopes have the wrong sign: the slope of -log w[i, t] in row i's scores is w - y, not y - w."
    d_k = np.shape(W_k)[1]
    if close(g_q, np.sqrt(d_k) * w_q) and close(g_k, np.sqrt(d_k) * w_k):
        return (f"both slopes are sqrt(d_k) = {np.sqrt(d_k):.3g} times too large: the scores are the dot "
                "products divided by sqrt(d_k), so g = (w - y) / sqrt(d_k).")
    pairs = np.asarray(pairs).reshape(-1, 2)
    if len(pairs) > 1:
        for one in (pairs[:1], pairs[-1:]):
            o_q, o_k = reference_pair_gradients(X, W_q, W_k, one)
            if close(g_q, o_q) and close(g_k, o_k):
                return (f"these are the slopes of one pair's loss only, here of pair {tuple(int(v) for v in one[0])}, "
                        f"but this case has {len(pairs)} pairs. The loss is a sum, so its slope is the sum of "
                        "each pair's slopes: add each pair's contribution (+=), do not overwrite it.")
    if close(g_q, w_q):
        return "dW_q is right, dW_k is not: W_k makes every token's key, so dW_k = sum_j x_j^T (g_j q_i) = X^T (g^T q_i)."
    if close(g_k, w_k):
        return "dW_k is right, dW_q is not: q_i = x_i W_q, so dW_q = x_i^T (sum_j g_j k_j), an outer product."
    return None


def check_pair_gradients(fn, seed=None) -> Feedback:
    """Exercise 3: ``fn(X, W_q, W_k, pairs) -> (dW_q, dW_k)``, the slopes of sum -log w[i, t] over the pairs.
    When it is right, trains the page's start with it on the page's two pairs and reports what it learned."""
    fb = check_function(fn, reference_pair_gradients, pair_gradient_cases(seed), name="pair_gradients",
                        diagnose=_diagnose_pair_gradients, atol=1e-6, returns=("dW_q", "dW_k"))
    if not fb.correct:
        return fb
    W_q, W_k = page_start()
    try:
        for _ in range(TRAIN_STEPS):
            dW_q, dW_k = (as_array(v)[0] for v in fn(PAGE_X.copy(), W_q.copy(), W_k.copy(), np.array(PAGE_PAIRS)))
            W_q, W_k = W_q - TRAIN_LR * dW_q, W_k - TRAIN_LR * dW_k
    except Exception as exc:  # noqa: BLE001 - the reader's code
        return Feedback(False, f"pair_gradients passed every case but then raised {type(exc).__name__} "
                               f"while training: {exc}")
    w = page_weights(W_q, W_k)
    t = PAGE_TOKENS.index
    return Feedback(True, f"Your slopes match, for one pair and for several. Trained with them for {TRAIN_STEPS} "
                          f"steps from the page's start (step size {TRAIN_LR}), \"chased\" reads \"dog\" "
                          f"{w[t('chased'), t('dog')]:.2f} and \"a\" reads \"ball\" {w[t('a'), t('ball')]:.2f}: "
                          f"exercise 1's head, learned instead of designed. \"the\" reads \"ball\" "
                          f"{w[t('the'), t('ball')]:.2f} too, although no pair asked for it: it has the features of \"a\".")


TRAIN_STEPS, TRAIN_LR = 100, 0.5  # the page's loop: 100 updates, step size 0.5
