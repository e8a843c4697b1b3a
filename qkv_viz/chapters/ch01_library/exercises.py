"""Chapter 1 exercises: code the page has not written, then a question on the page's library.

Every checker takes the reader's answer; ``None`` (or a stub that raises
``NotImplementedError``) means "no answer yet" and is never reported as an
error. Wrong answers get a hint, never the answer. Worked solutions are in
``qkv_viz.chapters.ch01_library.solutions`` (outside the reading flow).

1. ``check_lookup_many(fn)``: ``fn(queries, keys, values, temperature) -> (output, weights)``
   for a batch of libraries and many queries at once: queries (B, T, d_k), keys (B, S, d_k),
   values (B, S, d_v) -> output (B, T, d_v), weights (B, T, S), with T != S.
2. ``check_temperature_for(fn)``: ``fn(scores, top) -> temperature``: the temperature at
   which the largest weight of softmax(scores / temperature) equals ``top``.
3. ``check_doubled_query_temperature(answer)``: the temperature at which the doubled
   query ``2 * DEMO_QUERY`` gives back the weights the demo query has at temperature 1.
"""
from __future__ import annotations

import numpy as np

from qkv_viz.chapters.ch01_library.library import demo_library, soft_lookup
from qkv_viz.chapters.ch01_library.library import DEMO_QUERY
from qkv_viz.chapters.feedback import Feedback, check_function, no_answer
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
            return ("your weights have shape (B, S, T): one row per key. Put the queries first: "
                    "queries @ keys.swapaxes(-1, -2) is (B, T, d_k) @ (B, d_k, S) -> (B, T, S).")
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


# ---------------------------------------------------------------- exercise 2: a temperature for a top weight
def top_weight(scores, temperature) -> float:
    """The largest weight of softmax(scores / temperature)."""
    return float(softmax(np.asarray(scores, dtype=float) / temperature).max())


def reference_temperature_for(scores, top):
    """Bisection on log(temperature): the top weight falls as the temperature rises."""
    lo, hi = np.log(1e-4), np.log(1e4)
    for _ in range(200):
        mid = (lo + hi) / 2
        if top_weight(scores, np.exp(mid)) > top:
            lo = mid  # still too sharp: hotter
        else:
            hi = mid
    return float(np.exp((lo + hi) / 2))


def temperature_cases(seed=None, n_cases: int = 6) -> list:
    """``(scores (n,), top)`` with one clear best score and 1/n < top < 1, so one temperature answers."""
    rng = np.random.default_rng(seed)
    cases = []
    for _ in range(n_cases):
        n = int(rng.integers(3, 9))
        scores = rng.normal(scale=2.0, size=n)
        scores[int(rng.integers(n))] = scores.max() + rng.uniform(0.5, 2.0)  # one clear winner
        top = float(rng.uniform(1.0 / n + 0.1, 0.95))
        cases.append((scores, top))
    return cases


def _diagnose_temperature(got, want, case):
    scores, top = case
    t = float(np.ravel(got)[0])
    if not np.isfinite(t) or t <= 0:
        return "a temperature must be a finite number > 0."
    reached = top_weight(scores, t)
    way = "too cold (too sharp): go hotter" if reached > top else "too hot (too flat): go colder"
    return (f"at your temperature {t:.4g} the top weight is {reached:.4f}, not {top:.4f}: {way}. "
            "The top weight falls steadily as the temperature rises, so halving an interval "
            "(bisection) closes in on the answer.")


def check_temperature_for(fn, seed=None) -> Feedback:
    """Run ``fn(scores, top)`` on fresh rows of scores; the temperature must be right to 6 digits."""
    return check_function(fn, reference_temperature_for, temperature_cases(seed), name="temperature_for",
                          diagnose=_diagnose_temperature, atol=1e-5,
                          praise="Every row of scores gets the temperature that gives it that top weight.")


# ---------------------------------------------------------------- exercise 3: a longer query
def check_doubled_query_temperature(answer) -> Feedback:
    """Which temperature makes ``2 * DEMO_QUERY`` give the weights ``DEMO_QUERY`` has at temperature 1?"""
    if answer is None:
        return no_answer()
    lib = demo_library()
    target = soft_lookup(DEMO_QUERY, lib, 1.0)[1]
    try:
        t = float(answer)
    except (TypeError, ValueError):
        return Feedback(False, "Give one number (a temperature > 0).")
    if not np.isfinite(t) or t <= 0:
        return Feedback(False, "A temperature must be a positive number.")
    got = soft_lookup(2 * DEMO_QUERY, lib, t)[1]
    if np.allclose(got, target, atol=1e-4):
        return Feedback(True, "Doubling the query doubles every score; dividing by 2 undoes it. "
                              "A longer query acts like a colder temperature.")
    direction = "sharper" if got.max() > target.max() else "flatter"
    return Feedback(False, f"At that temperature the doubled query's weights are {direction} than "
                           f"the original's (top weight {got.max():.3f} vs {target.max():.3f}). "
                           "Hint: what does doubling the query do to each score q . k?")
