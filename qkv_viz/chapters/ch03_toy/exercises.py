"""Chapter 3 exercises: attention with a batch axis and T != S, the weights back from an output, a query that ties two keys.

Each ``check_*`` returns a ``Feedback`` (``qkv_viz.chapters.feedback``): right or
wrong with a hint that never gives the answer away; ``None`` means "no answer yet".
Worked solutions: ``qkv_viz.chapters.ch03_toy.solutions``.
"""
from __future__ import annotations

import numpy as np

from qkv_viz.core.attention import scaled_dot_product_attention
from qkv_viz.core.softmax import softmax
from qkv_viz.chapters.feedback import AnswerError, Feedback, as_array, check_function, no_answer
from qkv_viz.chapters.ch03_toy.figures import barycentric
from qkv_viz.chapters.ch03_toy.toy import TOY_K



def attention_cases(seed=None, n_cases: int = 6) -> list:
    """Fresh random (Q, K, V) with a batch axis and T != S.

    Q (B, T, d_k), K (B, S, d_k), V (B, S, d_v) with B in 2..3, T and S different
    in 2..6, d_k in 2..6 and different from B and S, so that ``Q @ K.T`` (all of K's
    axes reversed) raises on every case and its hint can be given. Entries have
    standard deviation 1.5 so scaled and unscaled weights differ clearly.
    ``seed=None`` draws new cases on every call.
    """
    rng = np.random.default_rng(seed)
    cases = []
    while len(cases) < n_cases:
        B, d_k, d_v = int(rng.integers(2, 4)), int(rng.integers(2, 7)), int(rng.integers(2, 5))
        T, S = (int(x) for x in rng.choice(np.arange(2, 7), size=2, replace=False))
        if d_k in (B, S):
            continue  # K.T's batch axis would broadcast, or its inner axis would fit: no clean error
        cases.append(tuple(1.5 * rng.standard_normal(shape) for shape in ((B, T, d_k), (B, S, d_k), (B, S, d_v))))
    return cases


def _reference(Q, K, V):
    return scaled_dot_product_attention(Q, K, V)  # (output (B, T, d_v), weights (B, T, S))


def _diagnose_attention(gots, wants, case) -> str | None:
    """Name the usual mistakes: softmax on the wrong axis, scaling forgotten or wrong,
    K.T on a 3-D array, the wrong matrix mixed. None when nothing specific is found."""
    Q, K, V = case
    out, w = (np.asarray(g, dtype=float) for g in gots)
    want_out, want_w = wants
    if w.shape != want_w.shape:
        return None  # the generic shape message says it
    d_k = Q.shape[-1]
    scores = Q @ K.swapaxes(-1, -2)  # (B, T, d_k) @ (B, d_k, S) -> (B, T, S)
    if not np.allclose(w.sum(axis=-1), 1.0):
        if w.shape[-1] == w.shape[-2] or np.allclose(w.sum(axis=-2), 1.0):
            return ("each query's row of weights must sum to 1: take the softmax along the LAST axis "
                    "(axis=-1, with keepdims=True), over the keys.")
        return "the rows of your weights do not sum to 1: divide each row of exp(...) by that row's sum."
    suspects = {
        "your weights equal softmax(Q @ K^T) WITHOUT the scaling: divide the scores by "
        f"np.sqrt(d_k) (d_k = {d_k} in this case) before the softmax.": scores,
        f"your weights equal softmax(Q @ K^T / d_k): divide by the SQUARE ROOT of d_k = {d_k}.": scores / d_k,
        "your weights equal softmax(Q @ K^T * sqrt(d_k)): divide by sqrt(d_k), do not multiply.":
            scores * np.sqrt(d_k),
    }
    for message, wrong_scores in suspects.items():
        if np.allclose(w, softmax(wrong_scores)) and not np.allclose(w, want_w):
            return message
    if np.allclose(w, want_w) and out.shape == want_out.shape and not np.allclose(out, want_out):
        return "your weights are right but the output is not weights @ V."
    if np.allclose(w, want_w) and out.shape != want_out.shape:
        return (f"your weights are right but the output has shape {out.shape}; weights @ V has shape "
                f"{want_out.shape}: did you mix Q or K instead of V?")
    return None


K_T_HINT = ("K.T on a 3-D array reverses ALL its axes, (B, S, d_k) -> (d_k, S, B). Swap only the "
            "last two: K.swapaxes(-1, -2) has shape (B, d_k, S).")


def _k_transposed_wholly(exc: Exception, Q, K) -> bool:
    """True when ``exc`` is the error that multiplying by K.T (all axes reversed) raises here."""
    attempts = (lambda: Q @ K.T, lambda: np.dot(Q, K.T), lambda: np.einsum("btd,dsb->bts", Q, K.T))
    for attempt in attempts:
        try:
            attempt()
        except Exception as mine:  # noqa: BLE001 - we compare error texts, whatever their type
            if type(mine) is type(exc) and str(mine) == str(exc):
                return True
    return False


def check_attention(fn, seed=None) -> Feedback:
    """Exercise 1: ``fn(Q, K, V) -> (output, weights)`` with a batch axis and T != S."""
    raised = []  # what the reader's function raised, with the inputs it got

    def watched(Q, K, V):
        try:
            return fn(Q, K, V)
        except Exception as exc:
            raised.append((exc, Q.copy(), K.copy()))
            raise

    fb = check_function(watched if callable(fn) else fn, _reference, attention_cases(seed), name="attention",
                        diagnose=_diagnose_attention, returns=("output", "weights"),
                        praise="Your attention(Q, K, V) gives the package's output and weights "
                               "on every batch: T queries, S keys, rows summing to 1, scaled by 1/sqrt(d_k).")
    if not fb.correct and raised and _k_transposed_wholly(*raised[-1]):
        return Feedback(False, K_T_HINT)
    return fb


def triangle_cases(seed=None, n_cases: int = 5) -> list:
    """(V (3, 2), output (2,)): a random triangle of values and a point mixed from it."""
    rng = np.random.default_rng(seed)
    cases = []
    while len(cases) < n_cases:
        V = rng.normal(size=(3, 2)) * 2
        if abs(np.linalg.det(np.vstack([V.T, np.ones(3)]))) < 0.5:
            continue  # nearly on one line: no unique answer
        w = softmax(rng.normal(size=3))
        cases.append((V, w @ V))  # (3,) @ (3, 2) -> (2,)
    return cases


def _diagnose_weights(got, want, case) -> str | None:
    V, output = case
    if np.allclose(got, want, atol=1e-8):
        return None
    if not np.isclose(got.sum(), 1.0):
        return (f"your weights add up to {got.sum():.3g}: a point mixed from the values has weights "
                "summing to 1; that is the third equation beside the two coordinates.")
    if np.allclose(got @ V, output):
        return None
    return f"your weights mix the values into {np.round(got @ V, 3).tolist()}, not into the output given."


def check_weights_from_output(fn, seed=None) -> Feedback:
    """Exercise 2: ``fn(V, output) -> weights`` (3,), the mix of the values V (3, 2) that gives ``output`` (2,)."""
    return check_function(fn, lambda V, output: barycentric(output, V), triangle_cases(seed), name="weights_from_output",
                          diagnose=_diagnose_weights,
                          praise="Your function finds the weights back from the output for every triangle: "
                                 "two coordinates and 'the weights sum to 1', three equations.")


def check_tie_query(answer) -> Feedback:
    """Exercise 3: a query q (2,) for which the toy's keys k0 and k2 get equal weight and k1 less than either."""
    if answer is None:
        return no_answer()
    try:
        q, _ = as_array(answer)
    except AnswerError as exc:
        return Feedback(False, f"your answer {exc}. Hint: give the query as two numbers, e.g. np.array([x, y]).")
    if q.shape != (2,):
        return Feedback(False, f"your query has shape {q.shape}; the toy's keys have d_k = 2, so q is (2,). Hint: "
                               "two numbers.")
    if not np.all(np.isfinite(q)):
        return Feedback(False, "your query holds NaN or inf. Hint: two finite numbers.")
    dots = TOY_K @ q                                 # (3, 2) @ (2,) -> (3,): q . k_j
    weights = softmax(dots / np.sqrt(2))
    if not np.isclose(weights[0], weights[2], atol=1e-6):
        return Feedback(False, f"your q gives q.k0 = {dots[0]:.3g} and q.k2 = {dots[2]:.3g}, weights "
                               f"{weights[0]:.3f} and {weights[2]:.3f}. Hint: k0 = (0, 1) and k2 = (1, 0); equal "
                               "weights need equal dot products.")
    if weights[1] >= weights[0] - 1e-9:
        return Feedback(False, f"k0 and k2 tie at {weights[0]:.3f} each, but k1 gets {weights[1]:.3f}, not less. "
                               "Hint: write q.k1 with k1 = (1, 2) in terms of q.k0 and q.k2; when is it the "
                               "smallest?")
    return Feedback(True, f"k0 and k2 get {weights[0]:.3f} each and k1 {weights[1]:.3f}. With q = (a, a), "
                          "q.k1 = 3a is below a exactly when a < 0: a query pointing away from all three keys "
                          "picks the shortest ones.")
