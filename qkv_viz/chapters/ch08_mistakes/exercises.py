"""Chapter 8 exercises: name the bug behind an unlabelled weight map, find the two bugs in a given
attention function, and write a log-softmax that does not underflow.

Every checker takes the reader's answer (``None`` until they give one) and
returns a :class:`~qkv_viz.chapters.feedback.Feedback` that never reveals the answer.
"""
from __future__ import annotations

import numpy as np

from qkv_viz.chapters.feedback import NOT_IMPLEMENTED, RETURNS_NONE, Feedback, check_function, no_answer
from qkv_viz.core.attention import scaled_dot_product_attention

# ---------------------------------------------------------------- 1. diagnose a weight map

BUG_NAMES = ("right", "softmax over axis 0", "mask after softmax", "no mask", "mask inverted")
_LOOK_ALIKE = {"no mask": {"no mask", "scores * mask"}}   # hidden scores 0 or kept: the same symptom

_HINTS = {
    "right": "it is right: every row sums to 1 and the hidden keys get nothing. Which of your tests misfired?",
    "softmax over axis 0": "compare its row sums with the sums of its columns.",
    "mask after softmax": "look at its row sums.",
    "no mask": "look at the weight on the hidden keys (where mask is False).",
    "mask inverted": "look at the weight on the keys the mask lets each query see.",
}


def bug_map(bug: str, scores: np.ndarray, causal: np.ndarray) -> np.ndarray:
    """Section 5's maps from (T, T) ``scores`` and a causal ``causal`` mask (True = may look):
    the weights ``bug`` makes, (T, T). ``bug``: a name in BUG_NAMES, or "scores * mask"."""
    from qkv_viz import masked_softmax, softmax

    if bug == "right":
        return masked_softmax(scores, causal)
    if bug == "softmax over axis 0":
        filled = np.where(causal, scores, -np.inf)
        e = np.exp(filled - filled.max(axis=0))
        return e / e.sum(axis=0)
    if bug == "mask after softmax":
        return np.where(causal, softmax(scores), 0.0)
    if bug == "no mask":
        return softmax(scores)
    if bug == "scores * mask":
        return softmax(scores * causal)
    if bug == "mask inverted":
        return masked_softmax(scores, ~causal)
    raise ValueError(f"unknown bug {bug!r}: one of {BUG_NAMES + ('scores * mask',)}")


def mystery_map():
    """The map drawn above the exercise: (weights (5, 5), causal mask (5, 5)), its bug unnamed."""
    scores = np.random.default_rng(8).normal(size=(5, 5))
    causal = np.tril(np.ones((5, 5), dtype=bool))
    return bug_map("mask after softmax", scores, causal), causal


def diagnose_cases(seed=None) -> list:
    """(weights, mask, bug) triples: the mystery map first, then every bug (and ``scores * mask``)
    on random scores of 3 to 7 tokens, in a shuffled order."""
    rng = np.random.default_rng(seed)
    cases = []
    for T in (3, 4, 5, 7):
        causal = np.tril(np.ones((T, T), dtype=bool))
        for bug in BUG_NAMES + ("scores * mask",):
            cases.append((bug_map(bug, rng.normal(size=(T, T)), causal), causal, bug))
    order = rng.permutation(len(cases))
    w, mask = mystery_map()
    return [(w, mask, "mask after softmax")] + [cases[i] for i in order]


def check_diagnose(fn, seed=None) -> Feedback:
    """Exercise 1: ``fn(weights, mask)`` -> the name (in BUG_NAMES) of the bug that made the causal
    weights map; ``scores * mask`` counts as ``"no mask"`` and the other way round."""
    if fn is None:
        return no_answer()
    if not callable(fn):
        return Feedback(False, f"diagnose should be a function (def ...), got {type(fn).__name__}.")
    cases = diagnose_cases(seed)
    for i, (w, mask, bug) in enumerate(cases):
        T = w.shape[0]
        what = "the mystery map" if i == 0 else f"map {i + 1} of {len(cases)} ({T} tokens)"
        try:
            got = fn(w.copy(), mask.copy())
        except NotImplementedError:
            return Feedback(False, NOT_IMPLEMENTED, pending=True)
        except Exception as exc:  # the reader's code: any error is feedback, not a crash
            return Feedback(False, f"On {what}, diagnose raised {type(exc).__name__}: {exc}")
        if got is None:
            if i == 0:
                return Feedback(False, RETURNS_NONE, pending=True)
            return Feedback(False, f"On {what}, diagnose returned None: did you forget `return`?")
        got = np.asarray(got).tolist() if not isinstance(got, str) else got
        if not isinstance(got, str) or got not in BUG_NAMES + ("scores * mask",):
            return Feedback(False, f"On {what}, diagnose returned {got!r}, which is not one of the names "
                                   f"{', '.join(repr(n) for n in BUG_NAMES)}.")
        named = "no mask" if bug == "scores * mask" else bug
        if got not in _LOOK_ALIKE.get(named, {named}):
            return Feedback(False, f"On {what}, diagnose said {got!r}, but that is not the bug that made it. "
                                   f"Hint: {_HINTS[named]}")
    return Feedback(True, f"All {len(cases)} maps named right, the mystery map too: row sums, column sums and "
                          f"the weight on hidden keys tell these bugs apart.")


# ---------------------------------------------------------------- 2. find the two bugs


def attention_buggy(q, k, v):
    """Attention with TWO bugs (the exercise). q (T, d_k), k (S, d_k), v (S, d_v) -> (T, d_v)."""
    d_k = q.shape[0]
    scores = q @ k.T / np.sqrt(d_k)                        # (T, d_k) @ (d_k, S) -> (T, S)
    weights = np.exp(scores - scores.max())                # (T, S), every exponent <= 0
    weights = weights / weights.sum(axis=-1, keepdims=True)   # (T, S) / (T, 1): rows sum to 1
    return weights @ v                                     # (T, S) @ (S, d_v) -> (T, d_v)


def attention_cases(seed=None) -> list:
    """Fresh (q, k, v) triples with T, S, d_k, d_v all different, so no bug hides behind equal sizes;
    the last has a query whose scores lie about 800 below another query's (one max for the
    whole matrix underflows that row to 0/0)."""
    rng = np.random.default_rng(seed)
    cases = []
    for T, S, d_k, d_v in [(3, 5, 4, 2), (6, 4, 8, 3), (2, 7, 16, 5)]:
        cases.append((rng.normal(size=(T, d_k)), rng.normal(size=(S, d_k)), rng.normal(size=(S, d_v))))
    k = rng.normal(size=(4, 2))
    q = rng.normal(size=(3, 2))
    q[0] = 800 * np.sqrt(2) * k[0] / (k[0] @ k[0])          # query 0 scores 800 on key 0
    cases.append((q, k, rng.normal(size=(4, 3))))
    return cases


def _reference_attention(q, k, v):
    return scaled_dot_product_attention(q, k, v)[0]


def _scaled_by(q, k, v, size):
    """Stable attention with the scores divided by sqrt(size) instead of sqrt(d_k)."""
    s = q @ k.T / np.sqrt(size)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)) @ v


def _diagnose_attention(got, want, case) -> str | None:
    q, k, v = case
    s = q @ k.T / np.sqrt(q.shape[-1])
    far = s.max() - s.max(axis=-1) > 700                    # rows whose exp(s - global max) underflows
    if np.allclose(got, attention_buggy(q, k, v)) or any(np.allclose(got, _scaled_by(q, k, v, n))
                                                         for n in (q.shape[0], k.shape[0])):
        return ("your scores are divided by the square root of the wrong size: T or S, not d_k. "
                "Look at which axis of q you read d_k from.")
    if np.any(far) and not np.allclose(got[far], want[far]):
        return ("a query whose scores all lie far below the largest score of the whole matrix comes out "
                "0/0 (or 0): every exp in its row underflows. Look at which maximum you subtract.")
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    if np.allclose(got, (e / e.sum(axis=0)) @ v):
        return "each KEY's weights add up to 1 in your function, not each query's: check which axis the sum runs over."
    if np.allclose(got, scaled_dot_product_attention(q, k, v, scale=False)[0]):
        return "you dropped the 1/sqrt(d_k) altogether: the scaling belongs there, only its size was wrong."
    return None


def check_attention_fixed(fn, seed=None) -> Feedback:
    """Exercise 2: the reader's corrected ``fn(q, k, v) -> (T, d_v)`` against the package's attention."""
    with np.errstate(all="ignore"):
        fb = check_function(fn, _reference_attention, attention_cases(seed), name="your attention",
                            diagnose=_diagnose_attention,
                            praise="Each query's weights sum to 1, every row stays finite, and the output "
                                   "matches the package.")
    if not fb and "could not be broadcast" in fb.message:
        return Feedback(False, fb.message.rstrip() + " Hint: a max or sum over the last axis drops that axis, "
                        "and (T, S) against (T,) lines up S with T, not T with T.")
    return fb


# ---------------------------------------------------------------- 3. a log-softmax that does not underflow


def _log_softmax(scores):
    m = scores.max(axis=-1, keepdims=True)                                 # (..., 1)
    return scores - m - np.log(np.exp(scores - m).sum(axis=-1, keepdims=True))


def log_softmax_cases(seed=None) -> list:
    """(scores,) cases, softmax along the last axis: ordinary random rows, a row whose spread is
    800 (its smallest weight underflows to 0, its log is about -800), a row near 1000 (exp
    overflows), and a (2, 3, 4) batch."""
    rng = np.random.default_rng(seed)
    return [(rng.normal(size=(3, 5)),),
            (np.array([[0.0, -800.0, -2.0], [1000.0, 999.0, 998.0]]),),
            (rng.normal(size=(2, 3, 4)) * 3,)]


def _diagnose_log_softmax(got, want, case) -> str | None:
    (scores,) = case
    big = scores.max(axis=-1) > np.log(np.finfo(float).max)                # rows where exp(score) overflows
    if not np.isfinite(got[big]).all():
        return ("the row [1000, 999, 998] comes out -inf or NaN: exp of a large score overflowed. "
                "Only differences within a row count.")
    if np.isneginf(got).any() and np.isfinite(want).all():
        return ("some of your values are -inf where the answer is finite (about -800): a weight that small "
                "underflows to 0 before its log is taken, and log(0) = -inf. Avoid forming the weight itself.")
    with np.errstate(all="ignore"):
        if np.allclose(got, scores - np.log(np.exp(scores).sum(axis=0, keepdims=True)), equal_nan=True) or \
                np.allclose(got, _log_softmax(scores.swapaxes(0, -1)).swapaxes(0, -1)):
            return "your values are normalised down the first axis: softmax runs along the last one (each row)."
    return None


def check_log_softmax(fn, seed=None) -> Feedback:
    """Exercise 3: ``fn(scores)`` -> log(softmax(scores)) along the last axis, finite for every finite
    score, also where the weight itself underflows to 0."""
    with np.errstate(all="ignore"):
        return check_function(fn, _log_softmax, log_softmax_cases(seed), name="your log-softmax",
                              diagnose=_diagnose_log_softmax, atol=1e-9,
                              praise="Finite everywhere, even at -800 where the weight itself is 0 in float64.")
