"""Chapter 4 exercises: the gradient that reaches the keys, why not divide by d_k; two numbers.

Each ``check_*`` returns a ``Feedback``: right or wrong plus a precise hint, never
the answer. Code checkers run the reader's function on fresh random cases (a new
generator each call unless ``seed`` is given) against the package. Answer cells
start with ``None`` ("no answer yet", not an error). Worked solutions:
``qkv_viz.chapters.ch04_scaling.solutions``.
"""
from __future__ import annotations

import numpy as np

from qkv_viz.chapters.feedback import (AnswerError, Feedback, as_array, check_close, check_function,
                                       no_answer)
from qkv_viz.core.softmax import softmax, softmax_jacobian

D_K_EX3, VAR_Q_EX3 = 48, 4.0  # exercise 3: a width and a query variance the page never prints
MAX_WEIGHT_EX4 = 0.99          # exercise 4: the max weight that counts as saturated (the chapter's threshold)


# ---------------------------------------------------------------- exercise 1: the gradient that reaches the keys
def key_grad_cases(n: int = 4, seed=None) -> list:
    """(q (T, d_k), k (S, d_k), grad_scores (T, S), scale): T != S, scaling on and off."""
    rng = np.random.default_rng(seed)
    cases = []
    for i in range(n):
        T, S = (int(v) for v in rng.choice(np.arange(2, 10), size=2, replace=False))
        d_k = int(rng.choice([3, 4, 16, 64]))
        cases.append((rng.normal(size=(T, d_k)), rng.normal(size=(S, d_k)), rng.normal(size=(T, S)),
                      i % 2 == 0))
    return cases


def _key_grad_reference(q, k, grad_scores, scale):
    factor = 1 / np.sqrt(q.shape[1]) if scale else 1.0
    return factor * grad_scores.T @ q  # (S, T) @ (T, d_k) -> (S, d_k)


def _diagnose_key_grad(got, want, case):
    q, k, grad_scores, scale = case
    if got.shape != want.shape:
        if got.shape == q.shape:
            return (f"your result has one row per query, {q.shape}; dL/dk has one row per key: "
                    f"{want.shape}, like k.")
        return None
    raw = grad_scores.T @ q
    if np.allclose(got, raw) and scale:
        return "this case has scale=True: the scores were divided by sqrt(d_k), and so is every derivative."
    if np.allclose(got, raw / np.sqrt(q.shape[1])) and not scale:
        return "this case has scale=False: nothing was divided, so no factor belongs in the gradient."
    if np.allclose(got, -want):
        return "the sign is flipped: a larger score s_ij grows with q_i . k_j, not against it."
    return ("score s_ij depends on key k_j through one query only, q_i: "
            "which query is it, and which index of grad_scores do you sum over?")


def check_key_grad(fn, seed=None) -> Feedback:
    """Exercise 1: ``fn(q, k, grad_scores, scale) -> (S, d_k)``, dL/dk for scores q k^T (divided by
    sqrt(d_k) when ``scale``), given grad_scores = dL/dscores (T, S)."""
    return check_function(fn, _key_grad_reference, key_grad_cases(seed=seed), name="your key_grad",
                          diagnose=_diagnose_key_grad, shape_hints=True,
                          praise="Your key_grad is the chain rule's: each key collects the queries that "
                                 "scored it, weighted by how much the loss cared about that score.")


# ---------------------------------------------------------------- exercise 2: why not divide by d_k?
TABLE_D_KS_EX2 = (4, 64, 1024)   # the widths the success message measures the reader's function at


def row_means_cases(n: int = 6, seed=None) -> list:
    """(q (T, d_k), k (S, d_k), factor): T != S; factors 1, 1/sqrt(d_k), 1/d_k and others."""
    rng = np.random.default_rng(seed)
    cases = []
    for i in range(n):
        T, S = (int(v) for v in rng.choice(np.arange(2, 12), size=2, replace=False))
        d_k = int(rng.choice([4, 16, 64, 256]))
        factor = (1.0, 1 / np.sqrt(d_k), 1 / d_k, 0.5, 3.0, 1 / np.sqrt(d_k))[i % 6]
        cases.append((rng.normal(size=(T, d_k)), rng.normal(size=(S, d_k)), float(factor)))
    return cases


def _row_means_from(weights):
    """(mean max weight, mean ||J||_F) over the rows of weights (T, S)."""
    J_norm = np.array([np.linalg.norm(softmax_jacobian(row)) for row in weights])   # (T,)
    return weights.max(axis=1).mean(), J_norm.mean()


def _row_means_reference(q, k, factor):
    return _row_means_from(softmax(factor * (q @ k.T)))          # (T, d_k) @ (d_k, S) -> (T, S)


def _diagnose_row_means(got, want, case):
    q, k, factor = case
    scores = factor * (q @ k.T)
    top, J_mean = (float(np.asarray(x).reshape(-1)[0]) if np.asarray(x).size == 1 else np.nan for x in got)
    def near(a, b):
        return np.isfinite(a) and np.isclose(a, b, rtol=1e-4, atol=1e-6)
    if factor != 1.0 and near(top, _row_means_reference(q, k, 1.0)[0]):
        return "the factor multiplies the scores before softmax: softmax(factor * (q @ k.T))."
    if factor != 1.0 and near(top, _row_means_reference(q, k, 1 / factor)[0]):
        return "multiply the scores by factor; you divided by it."
    by_column = softmax(scores, axis=0)                          # (T, S): columns sum to 1
    if near(top, by_column.max(axis=1).mean()) or near(top, by_column.max(axis=0).mean()):
        return "each query's row must sum to 1: take the softmax along the keys (axis=-1)."
    w = softmax(scores)
    if near(top, w.max(axis=0).mean()):
        return "a row's max weight is the max over the keys (axis=-1); then take the mean over the T rows."
    J_sq = np.array([(softmax_jacobian(row) ** 2).sum() for row in w])
    if near(J_mean, J_sq.mean()):
        return "||J||_F is the square root of the sum of the squared entries: np.linalg.norm(jacobian(row))."
    if near(top, want[0]):
        return "the max weight is right; ||J||_F is off: one Jacobian diag(w) - w w^T per row, its norm, the mean."
    return None


def _row_means_table(fn) -> str:
    """The reader's function at the page's widths on 16 x 16 random rows, for three factors."""
    lines = ["Your function on 16 x 16 random rows (max weight | ||J||_F):",
             "  d_k   factor 1        1/sqrt(d_k)     1/d_k"]
    for d_k in TABLE_D_KS_EX2:
        rng = np.random.default_rng(0)
        q, k = rng.normal(size=(16, d_k)), rng.normal(size=(16, d_k))
        cells = []
        for factor in (1.0, 1 / np.sqrt(d_k), 1 / d_k):
            top, J_mean = (float(as_array(x)[0]) for x in fn(q.copy(), k.copy(), float(factor)))
            cells.append(f"{top:.2f} | {J_mean:.2f}")
        lines.append(f"  {d_k:4d}  " + "    ".join(f"{c:12s}" for c in cells))
    lines.append("Which factor keeps both numbers the same at every width? Where do the rows go with 1/d_k "
                 "(a uniform row of 16 has max weight 1/16 = 0.06)?")
    return "\n".join(lines)


def check_row_means(fn, seed=None) -> Feedback:
    """Exercise 2: ``fn(q, k, factor) -> (max_weight, J_norm)``, the row means of the max weight and of
    ||J||_F of softmax(factor * q k^T). When it is right, the message measures it at three widths for the
    factors 1, 1/sqrt(d_k) and 1/d_k."""
    fb = check_function(fn, _row_means_reference, row_means_cases(seed=seed), name="your row_means",
                        diagnose=_diagnose_row_means, returns=("max_weight", "J_norm"), atol=1e-6,
                        praise="Your row_means agrees on every case.")
    if not fb.correct:
        return fb
    try:
        table = _row_means_table(fn)
    except Exception:  # noqa: BLE001 - the cases passed; the table is a bonus
        return fb
    return Feedback(True, fb.message + "\n" + table)


# ---------------------------------------------------------------- exercises 3 and 4: numbers
def check_new_width_std(answer) -> Feedback:
    """Exercise 3: std of q . k for d_k = 48, entries of q with variance 4, of k with variance 1."""
    return check_close(answer, float(np.sqrt(D_K_EX3 * VAR_Q_EX3)), rtol=0.01, atol=0.0,
                       hint="each product q_i k_i has variance Var(q_i) Var(k_i) (independent, mean 0); "
                            "d_k such terms add up; the std is the square root of the variance.")


def check_saturating_d_k(answer) -> Feedback:
    """Exercise 4: the smallest whole d_k at which std(q . (k_1 - k_0)) reaches ln(p / (1 - p)), p = 0.99
    (two keys, no factor). The crossing itself, ln(99)^2 / 2, is not a whole number: it gets its own hint."""
    if answer is None:
        return no_answer()
    gap = np.log(MAX_WEIGHT_EX4 / (1 - MAX_WEIGHT_EX4))        # sigma(gap) = 0.99
    crossing = gap ** 2 / 2                                     # std(gap) = sqrt(2 d_k) reaches gap here
    want = int(np.ceil(crossing))
    hint = ("sigma(D) = 0.99 gives D = ln(0.99 / 0.01); each term q_i (k_1i - k_0i) has "
            "variance 1 * (1 + 1), d_k such terms add up; set the std equal to D, solve, and take the "
            "smallest whole d_k at or above the result.")
    try:
        a, _ = as_array(answer)
    except AnswerError:
        return Feedback(False, f"Give one whole number, a width d_k. Hint: {hint}")
    if a.shape != ():
        return Feedback(False, f"Give one whole number, a width d_k; got shape {a.shape}. Hint: {hint}")
    x = float(a)
    if not np.isfinite(x):
        return Feedback(False, f"Your answer is NaN or inf. Hint: {hint}")
    if x == want:
        return Feedback(True, "Right: from this width on, a gap of one std already saturates a two-key row. "
                              "The page's heads of 64 and more are far past it.")
    if x != round(x) and abs(x - crossing) <= 0.02 * crossing:
        return Feedback(False, "That is where the gap's std equals D exactly. A width is a whole number: "
                               "which is the smallest whole d_k at or above it?")
    if x == want - 1:
        return Feedback(False, "At that width the gap's std is still just below D: round up, not down.")
    if abs(x - 2 * crossing) <= 0.02 * 2 * crossing or x == np.ceil(2 * crossing):
        return Feedback(False, "That would be right if each term had variance 1. A term q_i (k_1i - k_0i) "
                               "has the variances of both keys in it: Var(k_1i - k_0i) = 1 + 1.")
    return Feedback(False, f"Hint: {hint}")
