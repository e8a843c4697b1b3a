"""Chapter 1 exercises: code the page has not written: many readers at once, masks, the temperature.

Every checker takes the reader's answer; ``None`` (or a stub that raises
``NotImplementedError``) means "no answer yet" and is never reported as an
error. Wrong answers get a hint, never the answer. Worked solutions are in
``qkv_viz.chapters.ch01_library.solutions`` (outside the reading flow).

1. ``check_lookup_many(fn)``: ``fn(queries, keys, values, tau) -> (output, weights)``, the soft lookup for T
   readers at once: weights = softmax(queries @ keys.T / tau) along each row, output = weights @ values.
2. ``check_lookup_available(fn)``: ``fn(query, keys, values, available, temperature) -> (output, weights)``:
   a soft lookup in which the books with ``available == False`` get weight exactly 0 (a mask).
3. ``check_gains_when_warmer(fn)``: ``fn(dots, tau) -> (S,) bool``, True for each book whose weight
   ``softmax(dots / tau)[j]`` rises as the temperature rises (the rule the reader finds: d_j below the weighted mean).
"""
from __future__ import annotations

import numpy as np

from qkv_viz.chapters.ch01_library.library import demo_library
from qkv_viz.chapters.ch01_library.library import DEMO_QUERY
from qkv_viz.chapters.feedback import (NOT_IMPLEMENTED, RETURNS_NONE, TIME_LIMIT, Feedback, TimeLimitExceeded,
                                      check_function, no_answer, time_limit)
from qkv_viz.core.softmax import softmax


# ---------------------------------------------------------------- exercise 1: many readers at once
def reference_lookup_many(queries, keys, values, tau):
    """The page's soft lookup for T readers at once: weights = softmax(queries @ keys.T / tau) along each row,
    output = weights @ values. queries (T, d_k), keys (S, d_k), values (S, d_v) -> (output (T, d_v), weights (T, S))."""
    queries, keys, values = (np.asarray(a, dtype=float) for a in (queries, keys, values))
    weights = softmax(queries @ keys.T / tau)  # (T, d_k) @ (d_k, S) -> (T, S), each row sums to 1
    return weights @ values, weights           # (T, S) @ (S, d_v) -> (T, d_v)


def many_cases(seed=None):
    """(queries (T, d_k), keys (S, d_k), values (S, d_v), tau). First the page's library read by three readers (the
    page's query, the historian, the query doubled) at tau = sqrt(2); then random libraries with T != S, d_v != d_k,
    one with a single reader, one square (T = S, so a transposed table has the right shape), each tau away from 1
    and from sqrt(d_k), so a forgotten or wrong divisor shows."""
    lib = demo_library()
    readers = np.stack([DEMO_QUERY, [-1.5, 0.0], 2 * DEMO_QUERY])  # (3, 2)
    cases = [(readers, lib.keys, lib.values, float(np.sqrt(2)))]
    rng = np.random.default_rng(seed)
    for T, S, d_k, d_v in ((2, 5, 3, 4), (1, 4, 2, 3), (4, 4, 3, 2), (3, 6, 4, 5)):
        tau = float(rng.choice([0.5, 3.0, 4.0]))
        cases.append((rng.normal(size=(T, d_k)), rng.normal(size=(S, d_k)), rng.normal(size=(S, d_v)), tau))
    return cases


def _soft(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _many_slips(queries, keys, values, tau):
    """The usual slips, each as ((output, weights) it returns, the sentence that names it)."""
    d_k = keys.shape[1]
    dots = queries @ keys.T  # (T, S)
    yield ((_soft(dots) @ values, _soft(dots)),
           f"your weights are those of tau = 1: divide the dot products by tau (here {tau:g}) before the softmax.")
    yield ((_soft(dots * tau) @ values, _soft(dots * tau)),
           "you multiply the dot products by tau; divide them by it: softmax(queries @ keys.T / tau).")
    if not np.isclose(np.sqrt(d_k), tau):
        ws = _soft(dots / np.sqrt(d_k))
        yield ((ws @ values, ws), f"you divide by sqrt(d_k) = {np.sqrt(d_k):.3g}; this exercise divides by the "
                                  f"temperature tau it is given (here {tau:g}).")
    w0 = _soft(dots / tau, axis=0)
    yield ((w0 @ values, w0), "your softmax runs down the columns (axis 0), so each book's column sums to 1. "
                              "Each reader's row must sum to 1, over the S books it reads: softmax along axis -1.")
    s = dots / tau
    whole = np.exp(s - s.max()) / np.exp(s - s.max()).sum()
    yield ((whole @ values, whole), "your softmax divides by the sum over the whole table: each reader's row of "
                                    "weights must sum to 1 on its own (sum along axis -1, keepdims=True).")
    w = _soft(s)
    yield ((w @ keys, w), "your output blends the keys. The keys only decide how much to read; the output "
                          "blends the values: weights @ values.")
    wt = _soft(s.T)
    if wt.shape == w.shape:  # square: keys @ queries.T has the right shape and the wrong meaning
        yield ((wt @ values, wt), "your table is keys @ queries.T, the transpose: row i must hold reader i's dot "
                                  "products with every book, queries @ keys.T.")


def _many_diagnosis(result, expected, case):
    out, w = result
    queries, keys = np.asarray(case[0]), np.asarray(case[1])
    T, S = queries.shape[0], keys.shape[0]
    for (o, ws), why in _many_slips(*case):
        if w.shape == ws.shape and np.allclose(w, ws) and out.shape == o.shape and np.allclose(out, o):
            return why
    if w.shape == (S, T) != (T, S):
        return (f"your weights have shape {w.shape}: one row per reader (T = {T}), one column per book (S = {S}). "
                "The table is queries @ keys.T, not keys @ queries.T.")
    if w.shape == (T, S) and np.allclose(w, expected[1]) and not (out.shape == expected[0].shape
                                                               and np.allclose(out, expected[0])):
        return ("your weights are right; the output is not. It is weights @ values, (T, S) @ (S, d_v): one blend "
                "of the values per reader.")
    return None


def check_lookup_many(fn, seed=None) -> Feedback:
    """``fn(queries, keys, values, tau)`` -> ``(output (T, d_v), weights (T, S))``: the page's soft lookup for T
    readers at once, with weights softmax(queries @ keys.T / tau) along each row and output weights @ values.
    Run on the page's library with three readers, then on random libraries."""
    lib = demo_library()
    readers, _, _, tau = many_cases(seed)[0]
    out, w = reference_lookup_many(readers, lib.keys, lib.values, tau)
    home = "; ".join(", ".join(f"{x:.2f}" for x in row) for row in out)
    return check_function(fn, reference_lookup_many, many_cases(seed), name="lookup_many",
                          diagnose=_many_diagnosis, shape_hints=True, atol=1e-8, returns=("output", "weights"),
                          praise=f"It agrees on every case. At tau = sqrt(2) the page's reader, the historian and the "
                                 f"doubled query take home (AI facts, recipes, history) {home}. Each row is the "
                                 "page's one-query lookup; with the readers' queries Q and the books' keys K and "
                                 "values V, the same line is chapter 0's softmax(Q K^T / sqrt(d_k)) V, one output "
                                 "row per token.")


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


# ---------------------------------------------------------------- exercise 3: who gains when attention gets flatter
MARGIN = 1e-3  # every case keeps each |d_j - weighted mean| above this, so a right answer is never a coin toss


def reference_gains_when_warmer(dots, tau):
    """True for each book whose weight softmax(dots / tau)[j] rises as tau rises: dw_j/dtau = -(w_j / tau^2)(d_j - dbar),
    with dbar = sum_i w_i d_i, so book j gains exactly when d_j < dbar."""
    dots = np.asarray(dots, dtype=float)
    return dots < softmax(dots / tau) @ dots


def _rises(dots, j, tau, h=1e-4):
    """Book j's weight at tau (1 + h) minus at tau (1 - h): the finite-difference check the messages quote."""
    return _weight(dots, j, tau * (1 + h)) - _weight(dots, j, tau * (1 - h))


def _weight(dots, j, tau):
    return float(softmax(np.asarray(dots, dtype=float) / tau)[j])


def _clear(dots, tau):
    return np.abs(np.asarray(dots) - softmax(np.asarray(dots) / tau) @ dots).min() > MARGIN


def warmer_cases(seed=None):
    """(dots (S,), tau): the page's dot products at four temperatures (Robot Chefs gains at the first two, loses at
    the last two), then random dot products at random temperatures, each with a middle book that gains and one that
    loses, and no book within MARGIN of the weighted mean."""
    lib = demo_library()
    page = lib.keys @ DEMO_QUERY
    cases = [(page, tau) for tau in (0.3, 1.0, 3.0, 10.0)]
    rng = np.random.default_rng(seed)
    while len(cases) < 8:
        dots = rng.normal(scale=2.0, size=int(rng.integers(4, 8)))
        tau = float(np.exp(rng.uniform(np.log(0.3), np.log(5.0))))
        gains = reference_gains_when_warmer(dots, tau)
        if _clear(dots, tau) and 2 <= gains.sum() <= len(dots) - 2 and not np.isclose(tau, 1.0, atol=0.1):
            cases.append((dots, tau))
    return cases


def _as_booleans(got):
    a = np.asarray(got)
    if a.dtype == bool:
        return a
    if a.dtype.kind in "iuf" and np.all(np.isin(a, (0, 1))):
        return a.astype(bool)
    return None


_WARMER_MISTAKES = (  # (what the reader's function may have computed, the sentence that names it)
    (lambda d, t: ~reference_gains_when_warmer(d, t),
     "you returned the books whose weight falls. A book gains as tau rises while its dot product is below the "
     "weighted mean sum_i w_i d_i, and loses once it is above."),
    (lambda d, t: reference_gains_when_warmer(d, 1.0),
     "you answered for tau = 1 on every case: the weights w_i of the weighted mean are softmax(dots / tau)."),
    (lambda d, t: d < softmax(d * t) @ d,
     "your weights multiply the dot products by tau; divide them by it: w = softmax(dots / tau)."),
    (lambda d, t: d < d.mean(),
     "you compared each dot product with their plain mean. The condition uses the mean weighted by the weights at "
     "this temperature, sum_i w_i d_i with w = softmax(dots / tau)."),
    (lambda d, t: d < d.max(),
     "you marked every book but the top one. Only the books below the weighted mean sum_i w_i d_i gain; a runner-up "
     "above it loses weight too."),
)


def _diagnose_warmer(answers, cases):
    """The sentence of the one mistake that reproduces every one of the reader's answers, or None."""
    for mistake, sentence in _WARMER_MISTAKES:
        if all(np.array_equal(a, mistake(d, t)) for a, (d, t) in zip(answers, cases)):
            return sentence
    return None


def check_gains_when_warmer(fn, seed=None) -> Feedback:
    """``fn(dots, tau)`` -> a boolean array (S,): True for each book whose weight ``softmax(dots / tau)[j]`` rises as
    the temperature rises from ``tau``. Run on the page's dot products at four temperatures, then on random ones."""
    if fn is None:
        return no_answer()
    if not callable(fn):
        return Feedback(False, f"gains_when_warmer should be a function (def ...), got {type(fn).__name__}.")
    cases, answers = warmer_cases(seed), []
    for i, (dots, tau) in enumerate(cases):
        where = (f"the page's dots at tau = {tau:g}" if i < 4 else
                 f"case {i + 1} of {len(cases)} (dots {np.round(dots, 2).tolist()}, tau = {tau:.3g})")
        try:
            with time_limit(TIME_LIMIT):
                got = fn(dots.copy(), tau)
        except TimeLimitExceeded:
            return Feedback(False, f"On {where}, gains_when_warmer was still running after {TIME_LIMIT:g} s and was "
                                   "stopped. One softmax and one weighted mean are enough.")
        except NotImplementedError:
            return Feedback(False, NOT_IMPLEMENTED, pending=True)
        except Exception as exc:  # noqa: BLE001 - the reader's code: any error is feedback
            return Feedback(False, f"On {where}, gains_when_warmer raised {type(exc).__name__}: {exc}")
        if got is None:
            return Feedback(False, RETURNS_NONE if i == 0 else f"On {where}, gains_when_warmer returned None.",
                            pending=i == 0)
        a = _as_booleans(got)
        if a is None:
            return Feedback(False, f"On {where}, gains_when_warmer returned {np.asarray(got)!r}: return booleans, "
                                   "True for a book that gains weight, e.g. the result of a comparison with <.")
        if a.shape != dots.shape:
            return Feedback(False, f"On {where}, gains_when_warmer returned shape {a.shape}; expected {dots.shape}, "
                                   "one True or False per book.")
        answers.append(a)
    for i, (a, (dots, tau)) in enumerate(zip(answers, cases)):
        wrong = np.flatnonzero(a != reference_gains_when_warmer(dots, tau))
        if wrong.size:
            where = (f"the page's dots at tau = {tau:g}" if i < 4 else
                     f"case {i + 1} of {len(cases)} (dots {np.round(dots, 2).tolist()}, tau = {tau:.3g})")
            j = int(wrong[0])
            hint = _diagnose_warmer(answers, cases)
            return Feedback(False, f"On {where}, book {j}'s weight {'rises' if _rises(dots, j, tau) > 0 else 'falls'} "
                                   f"as tau rises a little, but you returned {bool(a[j])} for it."
                                   + (f" It looks as if {hint}" if hint else " Compare each dot product with the "
                                      "weighted mean sum_i w_i d_i at this temperature."))
    page = cases[0][0]
    robot = demo_library().titles.index("Robot Chefs")
    return Feedback(True, f"Right on every case. At tau = 0.3 and 1 Robot Chefs (dot product {page[robot]:.2f}) gains "
                          "from warming; at 3 and 10 it loses: it peaks in between, where its dot product equals the "
                          "weighted mean. The top book is always above the mean and only loses; the bottom book is "
                          "always below it and only gains. A model that shortens its queries warms the head, so it "
                          "moves weight to exactly the books your function marks.")
