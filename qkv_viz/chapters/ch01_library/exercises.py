"""Chapter 1 exercises: code the page has not written, on the temperature dial and masks.

Every checker takes the reader's answer; ``None`` (or a stub that raises
``NotImplementedError``) means "no answer yet" and is never reported as an
error. Wrong answers get a hint, never the answer. Worked solutions are in
``qkv_viz.chapters.ch01_library.solutions`` (outside the reading flow).

1. ``check_temperature_for(fn)``: ``fn(dots, target) -> tau``, the temperature at which the top book's weight
   ``softmax(dots / tau).max()`` equals ``target`` (found by bisection: the top weight falls as tau rises).
2. ``check_lookup_available(fn)``: ``fn(query, keys, values, available, temperature) -> (output, weights)``:
   a soft lookup in which the books with ``available == False`` get weight exactly 0 (a mask).
3. ``check_gains_when_warmer(fn)``: ``fn(dots, tau) -> (S,) bool``, True for each book whose weight
   ``softmax(dots / tau)[j]`` rises as the temperature rises (the rule the reader finds: d_j below the weighted mean).
"""
from __future__ import annotations

import time

import numpy as np

from qkv_viz.chapters.ch01_library.library import demo_library
from qkv_viz.chapters.ch01_library.library import DEMO_QUERY
from qkv_viz.chapters.feedback import (NOT_IMPLEMENTED, RETURNS_NONE, TIME_LIMIT, AnswerError, Feedback,
                                      TimeLimitExceeded, as_array, check_function, no_answer, time_limit)
from qkv_viz.core.softmax import softmax


# ---------------------------------------------------------------- exercise 1: the temperature for a given share
TARGET_TOL = 1e-6  # the top book's weight at the reader's temperature must be this close to the target


def _top_weight(dots, tau):
    return float(softmax(np.asarray(dots, dtype=float) / tau).max())


def reference_temperature_for(dots, target):
    """The tau > 0 at which the top book's weight softmax(dots / tau).max() equals ``target`` (1/S < target < 1).

    The top weight falls strictly as tau rises (dw_top/dtau = -(w_top / tau^2)(d_top - dbar) < 0 when the top is
    unique), from 1 when cold to 1/S when hot, so bisection on log tau finds the one answer."""
    dots = np.asarray(dots, dtype=float)
    lo, hi = 1e-6, 1e6
    for _ in range(200):
        mid = np.sqrt(lo * hi)
        if _top_weight(dots, mid) > target:
            lo = mid
        else:
            hi = mid
    return float(np.sqrt(lo * hi))


def temperature_cases(seed=None):
    """(dots (S,), target): the page's dot products at targets 0.5, 0.9 and 0.25, then random dot products (a clear
    top book, no tie) with targets between 1/S and 1, the answers spread from cold to hot."""
    lib = demo_library()
    page = lib.keys @ DEMO_QUERY
    cases = [(page, t) for t in (0.5, 0.9, 0.25)]
    rng = np.random.default_rng(seed)
    while len(cases) < 7:
        S = int(rng.integers(3, 8))
        dots = rng.normal(scale=float(rng.choice([0.5, 2.0, 10.0])), size=S)
        top2 = np.sort(dots)[-2:]
        if top2[1] - top2[0] < 0.05 * (np.ptp(dots) + 1e-12):
            continue
        target = float(rng.uniform(1 / S + 0.05, 0.97))
        cases.append((dots, target))
    return cases


def check_temperature_for(fn, seed=None) -> Feedback:
    """``fn(dots, target)`` -> a temperature tau > 0 at which the top book's weight ``softmax(dots / tau).max()``
    equals ``target`` (within TARGET_TOL). Run on the page's dot products, then on random ones."""
    if fn is None:
        return no_answer()
    if not callable(fn):
        return Feedback(False, f"temperature_for should be a function (def ...), got {type(fn).__name__}.")
    cases = temperature_cases(seed)
    start = time.monotonic()
    for i, (dots, target) in enumerate(cases):
        where = (f"the page's dots with target {target:g}" if i < 3 else
                 f"case {i + 1} of {len(cases)} (dots {np.round(dots, 2).tolist()}, target {target:.3g})")
        try:
            with time_limit(max(TIME_LIMIT - (time.monotonic() - start), 0.5)):
                got = fn(dots.copy(), target)
        except TimeLimitExceeded:
            return Feedback(False, f"On {where}, temperature_for was still running after {TIME_LIMIT:g} s and was "
                                   "stopped. Halving an interval 100 times is plenty: does your loop end?")
        except NotImplementedError:
            return Feedback(False, NOT_IMPLEMENTED, pending=True)
        except Exception as exc:  # noqa: BLE001 - the reader's code: any error is feedback
            return Feedback(False, f"On {where}, temperature_for raised {type(exc).__name__}: {exc}")
        if got is None:
            return Feedback(False, RETURNS_NONE if i == 0 else f"On {where}, temperature_for returned None.",
                            pending=i == 0)
        try:
            tau = float(as_array(got)[0].reshape(()))
        except (AnswerError, TypeError, ValueError):
            return Feedback(False, f"On {where}, temperature_for returned {got!r}: return one number, the temperature.")
        if not np.isfinite(tau) or tau <= 0:
            return Feedback(False, f"On {where}, temperature_for returned tau = {tau!r}: a temperature is a finite "
                                   "number above 0.")
        w = _top_weight(dots, tau)
        if abs(w - target) <= TARGET_TOL:
            continue
        msg = (f"On {where}, at your tau = {tau:.6g} the top book's weight is {w:.6f}, not {target:g}: ")
        if abs(_top_weight(dots, 1 / tau) - target) <= 1e-4:
            return Feedback(False, msg + "your tau gives the target if the dot products are *multiplied* by it. "
                                         "The weights are softmax(dots / tau).")
        if w > target:
            return Feedback(False, msg + "too much for the top book, so this tau is too cold. The top weight falls as "
                                         "tau rises: search higher, and narrow the interval until the weight is within "
                                         f"{TARGET_TOL:g} of the target.")
        return Feedback(False, msg + "too little for the top book, so this tau is too hot. The top weight falls as tau "
                                     "rises: search lower, and narrow the interval until the weight is within "
                                     f"{TARGET_TOL:g} of the target.")
    page = cases[0][0]
    half = reference_temperature_for(page, 0.5)
    return Feedback(True, f"Right on every case. On the page, Attention Explained gets half the weight at tau = "
                          f"{half:.3f}, a little colder than the page's tau = 1 (0.46). One number, the temperature, "
                          "sets how much the best match takes; a model sets it through the lengths of its queries "
                          "and keys.")


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
