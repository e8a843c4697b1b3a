"""Chapter 8 exercises: split a per-head fused QKV result, find the two bugs in a given
attention function, and write a log-softmax that does not underflow.

Every checker takes the reader's answer (``None`` until they give one) and
returns a :class:`~qkv_viz.chapters.feedback.Feedback` that never reveals the answer.
"""
from __future__ import annotations

import numpy as np

from qkv_viz.chapters.ch08_mistakes.mistakes import split_per_head, split_per_head_as_blocks
from qkv_viz.chapters.feedback import Feedback, check_function
from qkv_viz.core.attention import scaled_dot_product_attention

# ---------------------------------------------------------------- 1. split the per-head layout


def split_cases(seed=None) -> list:
    """(qkv, n_heads) pairs: fused results laid out (n, H, 3, d_head), with n, H, d_head all
    different so a swapped axis shows in the shape or the numbers."""
    rng = np.random.default_rng(seed)
    return [(rng.normal(size=(n, 3 * H * d_head)), H) for n, H, d_head in [(5, 2, 3), (4, 3, 2), (7, 4, 5)]]


def _eq(a, b) -> bool:
    return np.shape(a) == np.shape(b) and np.allclose(a, b)


def _diagnose_split(got, want, case) -> str | None:
    qkv, n_heads = case
    if not isinstance(got, tuple) or len(got) != 3:
        return None
    n, width = qkv.shape
    d_head = width // (3 * n_heads)
    blocks = split_per_head_as_blocks(qkv, n_heads)
    if all(_eq(g, b) for g, b in zip(got, blocks)):
        return ("you split the columns into three blocks [Q | K | V], but this layout is not blocks: "
                "it is (n, H, 3, d_head), head 0's q, k, v first, then head 1's.")
    if got[0].shape == (n_heads, n, d_head) and _eq(got[0].reshape(n, n_heads, d_head), want[0].swapaxes(0, 1)):
        return ("the numbers are right but in the wrong order: your (H, n, d_head) came from a reshape, "
                "not a transpose, and a reshape keeps the memory order (tokens first), so it mixes tokens and heads.")
    if _eq(got[0], want[1]) or _eq(got[1], want[0]):
        return "q and k are swapped: in each head the order is q, then k, then v."
    return None


def check_split_per_head(fn, seed=None) -> Feedback:
    """Exercise 1: ``fn(qkv, n_heads)`` -> ``(q, k, v)``, each (H, n, d_head), from a fused
    result (n, 3 H d_head) laid out (n, H, 3, d_head)."""
    return check_function(fn, split_per_head, split_cases(seed), name="your split", diagnose=_diagnose_split,
                          returns=("q", "k", "v"), shape_hints=True,
                          praise="Every head gets its own q, k and v: the per-head layout read right.")


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
