"""Chapter 1 exercises: code the page has not written, then a question on the page's library.

Every checker takes the reader's answer; ``None`` (or a stub that raises
``NotImplementedError``) means "no answer yet" and is never reported as an
error. Wrong answers get a hint, never the answer. Worked solutions are in
``qkv_viz.chapters.ch01_library.solutions`` (outside the reading flow).

1. ``check_lookup_many(fn)``: ``fn(queries, keys, values, temperature) -> (output, weights)``
   for a batch of libraries and many queries at once: queries (B, T, d_k), keys (B, S, d_k),
   values (B, S, d_v) -> output (B, T, d_v), weights (B, T, S), with T != S.
2. ``check_lookup_available(fn)``: ``fn(query, keys, values, available, temperature) -> (output, weights)``:
   a soft lookup in which the books with ``available == False`` get weight exactly 0 (a mask).
3. ``check_longer_query_temperature(answer, w_3)``: the temperature at which the tripled query
   ``3 * DEMO_QUERY`` against every key halved gives back the demo query's weights at temperature 1,
   and ``w_3`` (5,), those weights as the reader computed them at that temperature.
"""
from __future__ import annotations

import numpy as np

from qkv_viz.chapters.ch01_library.library import Library, demo_library, soft_lookup
from qkv_viz.chapters.ch01_library.library import DEMO_QUERY
from qkv_viz.chapters.feedback import Feedback, as_array, check_function, no_answer
from qkv_viz.core.attention import scaled_dot_product_attention
from qkv_viz.core.softmax import softmax


# ---------------------------------------------------------------- exercise 1: many queries at once
def reference_lookup_many(queries, keys, values, temperature):
    """softmax(queries @ keys^T / temperature) @ values over the last two axes (no 1/sqrt(d_k))."""
    return scaled_dot_product_attention(queries, keys, values, scale=False, temperature=temperature)


def lookup_many_cases(seed=None, n_cases: int = 6) -> list:
    """Fresh ``(queries (B, T, d_k), keys (B, S, d_k), values (B, S, d_v), temperature)``.

    B 1..3, T != S (so normalising over the wrong axis or mixing T and S shows), d_v != d_k,
    temperatures 0.2..5 never 1, and the last case has a score of 3000 (a naive exp overflows).
    """
    rng = np.random.default_rng(seed)
    cases = []
    for i in range(n_cases):
        B, T = int(rng.integers(1, 4)), int(rng.integers(2, 5))
        S = T + int(rng.integers(1, 4))
        d_k = int(rng.integers(2, 5))
        d_v = d_k + int(rng.integers(1, 3))
        queries = rng.normal(size=(B, T, d_k))
        keys = rng.normal(size=(B, S, d_k))
        values = rng.normal(size=(B, S, d_v))
        temperature = float(np.exp(rng.uniform(np.log(0.2), np.log(5.0))))
        if abs(temperature - 1.0) < 0.1:
            temperature = 2.5
        if i == n_cases - 1:  # one query scores 3000 on one key: exp(3000 / 2) overflows
            queries[0, 0] = 30.0 * queries[0, 0] / np.linalg.norm(queries[0, 0])
            keys[0, 0] = 100.0 * queries[0, 0] / np.linalg.norm(queries[0, 0])
            temperature = min(temperature, 2.0)
        cases.append((queries, keys, values, temperature))
    return cases


def _stable(s, axis=-1):
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _diagnose_lookup_many(got, want, case):
    """A sentence naming the mistake, or None to let the generic comparison speak."""
    queries, keys, values, temperature = case
    out, w = got
    want_out, want_w = want
    if w.shape != want_w.shape:
        if w.shape == want_w.shape[:-2] + want_w.shape[-1:] + want_w.shape[-2:-1]:
            return (f"your weights have shape {w.shape}, that is shape (B, S, T): one row per key. Expected "
                    f"{want_w.shape}, (B, T, S): one row per query, its dot products with its batch entry's keys.")
        return None
    if not np.all(np.isfinite(w)) or not np.all(np.isfinite(out)):
        return ("your result contains NaN or inf. One score here is 3000, and exp of anything above "
                "about 709 overflows: subtract each row's largest score before exp.")
    s = queries @ keys.swapaxes(-1, -2)  # (B, T, d_k) @ (B, d_k, S) -> (B, T, S)
    if np.allclose(w.sum(axis=-2), 1.0, atol=1e-6) and not np.allclose(w.sum(axis=-1), 1.0, atol=1e-6):
        return ("each *column* of your weights sums to 1: softmax ran over the queries. Each query's "
                "row must sum to 1: take the softmax along the last axis (the S keys).")
    if not np.allclose(w.sum(axis=-1), 1.0, atol=1e-6):
        return "the rows of your weights do not sum to 1: divide each row's exponentials by that row's sum."
    if np.allclose(w, want_w, atol=1e-6):
        return "your weights are right but the output is not: output = weights @ values, (B, T, S) @ (B, S, d_v)."
    if np.allclose(w, _stable(s), atol=1e-6):
        return (f"your weights are those of temperature 1, but this case has temperature {temperature:.3g}: "
                "divide the scores by it.")
    if np.allclose(w, _stable(s * temperature), atol=1e-6):
        return "you multiplied the scores by the temperature; divide them by it."
    if np.allclose(w, _stable(s / (temperature * np.sqrt(queries.shape[-1]))), atol=1e-6):
        return "you divided by sqrt(d_k) as well: in this chapter's lookup the temperature alone scales the scores."
    return None


def check_lookup_many(fn, seed=None) -> Feedback:
    """Run ``fn(queries, keys, values, temperature)`` on fresh batches of libraries.

    Expected: ``(output (B, T, d_v), weights (B, T, S))``, equal to
    ``softmax(queries @ keys^T / temperature) @ values`` batch by batch.
    """
    return check_function(fn, reference_lookup_many, lookup_many_cases(seed), name="lookup_many",
                          diagnose=_diagnose_lookup_many, shape_hints=True, atol=1e-8,
                          returns=("output", "weights"),
                          praise="Every batch, every query, T != S, and a score of 3000: all right. "
                                 "The Transformer's version fixes the temperature at sqrt(d_k), as the page showed.")


# ---------------------------------------------------------------- exercise 2: some books are checked out
def reference_lookup_available(query, keys, values, available, temperature):
    """A soft lookup over the available books only: the others get weight exactly 0."""
    scores = np.asarray(keys, dtype=float) @ np.asarray(query, dtype=float) / temperature  # (S,)
    available = np.asarray(available, dtype=bool)
    e = np.exp(np.where(available, scores - scores[available].max(), -np.inf))  # (S,): 0 when checked out
    weights = e / e.sum()                                                  # (S,): sums to 1 over the rest
    return weights @ np.asarray(values, dtype=float), weights             # (S,) @ (S, d_v) -> (d_v,)


def available_cases(seed=None, n_cases: int = 6) -> list:
    """Fresh ``(query (d_k,), keys (S, d_k), values (S, d_v), available (S,) bool, temperature)``.

    Every case has at least one book out and one in; one case has a single book in (its weight
    must be 1); the last gives a checked-out book a score of 3000 (weights computed first and
    masked afterwards come out 0 / 0 there).
    """
    rng = np.random.default_rng(seed)
    cases = []
    for i in range(n_cases):
        S, d_k = int(rng.integers(4, 8)), int(rng.integers(2, 4))
        d_v = d_k + 1
        query, keys = rng.normal(size=d_k), rng.normal(size=(S, d_k))
        values = rng.normal(size=(S, d_v))
        available = rng.random(S) < 0.6
        available[int(rng.integers(S))] = False
        if i == 2:  # one book left
            available[:] = False
        available[int(np.flatnonzero(~available)[0]) - 1] = True
        temperature = float(rng.choice([0.5, 2.0, 3.0]))
        if i == n_cases - 1:  # the best-matching book is out, with a score of 3000
            out = int(np.flatnonzero(~available)[0])
            query = 30.0 * query / np.linalg.norm(query)
            keys[out] = 100.0 * query / np.linalg.norm(query)
            temperature = 1.0
        cases.append((query, keys, values, available, temperature))
    return cases


def _diagnose_available(got, want, case):
    query, keys, values, available, temperature = case
    out, w = got
    if w.shape != (len(keys),):
        return None
    if not np.all(np.isfinite(w)) or not np.all(np.isfinite(out)):
        return ("your result contains NaN or inf. Here a checked-out book scores 3000: masking the weights "
                "after the softmax leaves 0 / 0. A checked-out book must drop out *before* "
                "the softmax, with a score whose exp is exactly 0.")
    if np.any(np.abs(w[~available]) > 1e-12):
        return ("a checked-out book got weight: every book with available == False must get exactly 0. "
                "Give its score -np.inf before the softmax (exp(-inf) = 0).")
    if not np.isclose(w.sum(), 1.0, atol=1e-6):
        return ("the weights of the available books do not sum to 1: you zeroed the checked-out books after "
                "the softmax and kept the others' old weights. Mask the scores before the softmax instead, "
                "so the available books share all of the weight.")
    if np.allclose(w, want[1], atol=1e-6):
        return "your weights are right but the output is not: output = weights @ values, (S,) @ (S, d_v)."
    if np.allclose(w, reference_lookup_available(query, keys, values, available, 1.0)[1], atol=1e-6):
        return f"your weights are those of temperature 1, but this case has temperature {temperature:g}: divide the scores by it."
    return None


def check_lookup_available(fn, seed=None) -> Feedback:
    """Run ``fn(query, keys, values, available, temperature)`` on fresh libraries with books checked out.

    Expected: ``(output (d_v,), weights (S,))``: a soft lookup in which every book with
    ``available == False`` gets weight exactly 0 and the available ones share all of it.
    """
    return check_function(fn, reference_lookup_available, available_cases(seed), name="lookup_available",
                          diagnose=_diagnose_available, shape_hints=True, atol=1e-8,
                          returns=("output", "weights"),
                          praise="Checked-out books get exactly 0, the others share all of the weight, even when "
                                 "the missing book would have scored 3000. That is a mask: chapter 7 uses it to stop "
                                 "a token from reading the future.")


# ---------------------------------------------------------------- exercise 3: longer queries, shorter keys
def _w3_diagnosis(w, t, lib):
    """Why ``w`` (5,) is not the weights of 3 * query against keys / 2 at temperature ``t``."""
    q, keys = DEMO_QUERY, lib.keys
    if not np.isclose(w.sum(), 1, atol=1e-6):
        return f"w_3 sums to {w.sum():.3f}, not 1: take the softmax of the scores."
    for wrong, why in ((softmax(keys @ (3 * q) / t), "uses the page's keys: halve them, keys / 2"),
                       (softmax((keys / 2) @ q / t), "uses the page's query: triple it, 3 * query"),
                       (softmax((keys / 2) @ (3 * q)), "is at temperature 1: divide the scores by answer_3"),
                       (softmax((keys / 2) @ (3 * q) * t), "multiplies the scores by answer_3: divide them")):
        if np.allclose(w, wrong, atol=1e-6):
            return f"w_3 {why}."
    return ("w_3 is not the softmax of (3 * query) . (k_j / 2) / answer_3 over the five books "
            "(one score per book, in the order of the page's keys).")


def check_longer_query_temperature(answer, w_3=None) -> Feedback:
    """Which temperature makes ``3 * DEMO_QUERY`` against every key halved give the weights
    ``DEMO_QUERY`` has against the page's keys at temperature 1? ``w_3`` (5,): the reader's own
    computation of those weights at that temperature, compared first with what it should be."""
    if answer is None or w_3 is None:
        return no_answer()
    lib = demo_library()
    target = soft_lookup(DEMO_QUERY, lib, 1.0)[1]
    try:
        t = float(answer)
    except (TypeError, ValueError):
        return Feedback(False, "answer_3: give one number (a temperature > 0).")
    if not np.isfinite(t) or t <= 0:
        return Feedback(False, "answer_3: a temperature must be a positive number.")
    try:
        w = as_array(w_3)[0]
    except Exception as exc:  # noqa: BLE001
        return Feedback(False, f"w_3 should be an array of numbers: {exc}")
    if w.ndim == 2 and 1 in w.shape:  # a (1, 5) or (5, 1) row of the right numbers is fine
        w = w.ravel()
    if w.shape != (lib.n_books,):
        return Feedback(False, f"w_3 should hold one weight per book, shape ({lib.n_books},); got {w.shape}.")
    halved = Library(lib.titles, lib.keys / 2, lib.values)
    got = soft_lookup(3 * DEMO_QUERY, halved, t)[1]
    if not np.allclose(w, got, atol=1e-6):
        return Feedback(False, _w3_diagnosis(w, t, lib))
    if np.allclose(got, target, atol=1e-4):
        return Feedback(True, "Your w_3 equals the page's weights. Every score is (3q) . (k / 2) = 1.5 (q . k); "
                              "dividing by 1.5 undoes it. The lengths of queries and keys turn the same dial as "
                              "the temperature.")
    direction = "sharper" if got.max() > target.max() else "flatter"
    return Feedback(False, f"Your w_3 is computed right, but at that temperature it is {direction} than the page's "
                           f"weights (top weight {got.max():.3f} vs {target.max():.3f}). "
                           "Hint: what do the two changes do, together, to each dot product q . k?")
