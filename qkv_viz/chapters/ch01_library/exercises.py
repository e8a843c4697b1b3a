"""Chapter 1 exercises: code the page has not written, on batches, masks and the temperature dial.

Every checker takes the reader's answer; ``None`` (or a stub that raises
``NotImplementedError``) means "no answer yet" and is never reported as an
error. Wrong answers get a hint, never the answer. Worked solutions are in
``qkv_viz.chapters.ch01_library.solutions`` (outside the reading flow).

1. ``check_lookup_many(fn)``: ``fn(queries, keys, values, temperature) -> (output, weights)``
   for a batch of libraries and many queries at once: queries (B, T, d_k), keys (B, S, d_k),
   values (B, S, d_v) -> output (B, T, d_v), weights (B, T, S), with T != S.
2. ``check_lookup_available(fn)``: ``fn(query, keys, values, available, temperature) -> (output, weights)``:
   a soft lookup in which the books with ``available == False`` get weight exactly 0 (a mask).
3. ``check_peak_temperature(fn)``: ``fn(dots, j) -> tau``, the temperature at which book ``j``'s weight
   ``softmax(dots / tau)[j]`` is largest, within 0.1 % (the page's grid of 200 temperatures is too coarse).
"""
from __future__ import annotations

import numpy as np

from qkv_viz.chapters.ch01_library.library import demo_library
from qkv_viz.chapters.ch01_library.library import DEMO_QUERY
from qkv_viz.chapters.feedback import (NOT_IMPLEMENTED, RETURNS_NONE, TIME_LIMIT, Feedback, TimeLimitExceeded,
                                      as_array, check_function, no_answer, time_limit)
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


# ---------------------------------------------------------------- exercise 3: where a middle book peaks
PEAK_RTOL = 1e-3  # the reader's temperature must be within 0.1 % of the peak's
PAGE_GRID_STEP = 100 ** (2 / 199) - 1  # neighbouring temperatures of the page's np.geomspace(0.01, 100, 200)


def _weight(dots, j, tau):
    return float(softmax(np.asarray(dots, dtype=float) / tau)[j])


def reference_peak_temperature(dots, j):
    """The temperature at which ``softmax(dots / tau)[j]`` is largest. d log w_j / d tau = (sum_i w_i d_i - d_j) / tau^2,
    and the weighted mean falls from max(dots) to mean(dots) as tau grows: bisect (in log tau) where it meets d_j."""
    dots = np.asarray(dots, dtype=float)
    lo, hi = np.log(1e-3), np.log(1e3)
    for _ in range(200):
        mid = (lo + hi) / 2
        w = softmax(dots / np.exp(mid))
        lo, hi = (mid, hi) if w @ dots > dots[j] else (lo, mid)
    return float(np.exp((lo + hi) / 2))


def peak_cases(seed=None):
    """(dots (S,), j): the page's dot products with Robot Chefs, then random books whose weight rises, then falls,
    peaking inside [0.01, 100]."""
    lib = demo_library()
    cases = [(lib.keys @ DEMO_QUERY, lib.titles.index("Robot Chefs"))]
    rng = np.random.default_rng(seed)
    while len(cases) < 4:
        dots = rng.normal(scale=2.0, size=int(rng.integers(3, 8)))
        j = int(np.argsort(dots)[-2])  # the runner-up
        if dots[j] > dots.mean() + 0.2 and dots.max() > dots[j] + 0.2 and 0.02 < reference_peak_temperature(dots, j) < 50:
            cases.append((dots, j))
    return cases


def check_peak_temperature(fn, seed=None) -> Feedback:
    """``fn(dots, j)`` -> the temperature in [0.01, 100] at which book ``j``'s weight ``softmax(dots / tau)[j]`` is
    largest, within 0.1 %: on the page's Robot Chefs, then on random runner-up books."""
    if fn is None:
        return no_answer()
    if not callable(fn):
        return Feedback(False, f"peak_temperature should be a function (def ...), got {type(fn).__name__}.")
    cases = peak_cases(seed)
    found = []
    for i, (dots, j) in enumerate(cases):
        where = "the page's dots, j = robot" if i == 0 else f"case {i + 1} of {len(cases)} (dots {np.round(dots, 2).tolist()}, j = {j})"
        try:
            with time_limit(TIME_LIMIT):
                got = fn(dots.copy(), j)
        except TimeLimitExceeded:
            return Feedback(False, f"On {where}, peak_temperature was still running after {TIME_LIMIT:g} s and was "
                                   "stopped. A grid of a million temperatures or fifty bisection steps is plenty.")
        except NotImplementedError:
            return Feedback(False, NOT_IMPLEMENTED, pending=True)
        except Exception as exc:  # noqa: BLE001 - the reader's code: any error is feedback
            return Feedback(False, f"On {where}, peak_temperature raised {type(exc).__name__}: {exc}")
        if got is None:
            return Feedback(False, RETURNS_NONE if i == 0 else f"On {where}, peak_temperature returned None.",
                            pending=i == 0)
        try:
            a = as_array(got)[0].astype(float)
        except Exception as exc:  # noqa: BLE001
            return Feedback(False, f"On {where}, peak_temperature should return one number: {exc}")
        if a.size != 1:
            return Feedback(False, f"On {where}, peak_temperature returned shape {a.shape}: return one number, "
                                   "the temperature (for a grid, the entry at the argmax).")
        t, want = float(a.ravel()[0]), reference_peak_temperature(dots, j)
        if not np.isfinite(t) or t <= 0:
            return Feedback(False, f"On {where}, peak_temperature returned {t}: a temperature is a positive number.")
        if abs(t - want) <= PEAK_RTOL * want:
            found.append(t)
            continue
        top = _weight(dots, j, want)
        if abs(t - top) <= 1e-3 * top:
            return Feedback(False, f"On {where}, you returned {t:.4f}, the largest weight itself: return the "
                                   "temperature at which it occurs.")
        if abs(np.log(t / want)) <= 1.5 * np.log1p(PAGE_GRID_STEP):
            return Feedback(False, f"On {where}, {t:.4g} is close but not within 0.1 % of the peak: a grid as "
                                   f"coarse as the page's (neighbours {100 * PAGE_GRID_STEP:.1f} % apart) is not "
                                   "fine enough. Use many more temperatures, or bisect.")
        side = "higher" if t < want else "lower"
        return Feedback(False, f"On {where}, at tau = {t:.4g} book j's weight is {_weight(dots, j, t):.4f}, but "
                               f"it is larger at a {side} temperature. Is it softmax(dots / tau)[j] you maximise, "
                               "over temperatures from 0.01 to 100?")
    return Feedback(True, f"Robot Chefs peaks at tau = {found[0]:.3f}, with weight {_weight(*cases[0], found[0]):.3f}; "
                          "the random runners-up agree too. At the peak, book j's dot product equals the weighted "
                          "mean of all of them, sum_i w_i d_i: while d_j is below that mean, warming gives book j "
                          "weight; once it is above, warming takes weight away.")
