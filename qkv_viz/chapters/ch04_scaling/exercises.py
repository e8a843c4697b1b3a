"""Chapter 4 exercises: the gradient that reaches the keys, the Jacobian norm of many rows; two numbers.

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


# ---------------------------------------------------------------- exercise 2: ||J||_F of many rows, no S x S matrix
def jacobian_norm_cases(n: int = 5, seed=None) -> list:
    """(weights (T, S),): rows of weights (soft, sharp, near one-hot), T != S."""
    rng = np.random.default_rng(seed)
    cases = []
    for i in range(n):
        T, S = (int(v) for v in rng.choice(np.arange(2, 12), size=2, replace=False))
        spread = (0.5, 2.0, 6.0, 0.1, 40.0)[i % 5]
        cases.append((softmax(spread * rng.normal(size=(T, S))),))
    return cases


def _jacobian_norms_reference(weights):
    return np.array([np.linalg.norm(softmax_jacobian(row)) for row in weights])  # (T,): one (S, S) J per row


def _diagnose_jacobian_norms(got, want, case):
    (weights,) = case
    if got.shape != want.shape:
        if got.shape == ():
            return (f"you returned one number; the answer has one per row of weights: shape {want.shape}. "
                    "Sum over the keys (axis=-1), not over everything.")
        if got.shape == weights.shape:
            return (f"you returned one number per weight, {weights.shape}; the answer has one per row: "
                    f"{want.shape}. Sum over the keys (axis=-1).")
        return None
    if np.isnan(got).any():
        return ("NaN on a near one-hot row: there the sums cancel, and rounding leaves a tiny negative number "
                "under the root. Clip it at 0 first: np.sqrt(np.maximum(..., 0)).")
    if np.allclose(got, want ** 2):
        return "these are the sums of squares: ||J||_F is their square root."
    return ("square an entry w_i [i = j] - w_i w_j and add over i and j: you get three sums, each a sum over "
            "one row of weights (powers 2 and 3 of w, and the square of a sum).")


def check_jacobian_norms(fn, seed=None) -> Feedback:
    """Exercise 2: ``fn(weights) -> (T,)``, ||diag(w) - w w^T||_F of each row of weights (T, S)."""
    return check_function(fn, _jacobian_norms_reference, jacobian_norm_cases(seed=seed),
                          name="your jacobian_norms", diagnose=_diagnose_jacobian_norms, shape_hints=True,
                          # near one-hot rows the three sums cancel: float32's rounding of w (~1e-7) leaves
                          # up to ~1e-7 in ||J||^2, so up to ~3e-4 in its root; every named mistake is far off
                          atol=5e-4,
                          praise="Your jacobian_norms needs no S x S matrix: for S = 32 keys that is "
                                 "32 numbers per row instead of 1,024.")


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
