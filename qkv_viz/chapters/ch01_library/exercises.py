"""Chapter 1 exercises: write the soft lookup yourself, then use it on cases the page never printed.

Every checker takes the reader's answer; ``None`` (or a stub that raises
``NotImplementedError``) means "no answer yet" and is never reported as an
error. Wrong answers get a hint, never the answer. Worked solutions are in
``qkv_viz.chapters.ch01_library.solutions`` (outside the reading flow).

1. ``check_soft_lookup(fn)``: ``fn(query, keys, values, temperature) -> (output, weights)``,
   run on fresh random libraries against the package's ``soft_lookup``.
2. ``check_new_query_weights(answer)``: the five weights at temperature 1 for the
   query ``NEW_QUERY`` ("mostly food, a little AI").
3. ``check_robot_chefs_weight(answer)``: the weight of *Robot Chefs* for the demo
   query at temperature ``NEW_TEMPERATURE``.
4. ``check_doubled_query_temperature(answer)``: the temperature at which the doubled
   query ``2 * DEMO_QUERY`` gives back the weights the demo query has at temperature 1.
5. ``check_determiner_key(answer)``: a new determiner row of the toy sentence's W_k
   (what "the" offers) that makes "cat" read "the" more than any other token.
"""
from __future__ import annotations

import numpy as np

from qkv_viz.chapters.ch01_library.library import (DEMO_QUERY, TOKEN_FEATURES, Library, demo_library,
                                                   soft_lookup as _package, toy_sentence)
from qkv_viz.chapters.feedback import Feedback, check_close, check_function, no_answer
from qkv_viz.core.attention import scaled_dot_product_attention
from qkv_viz.core.softmax import softmax

NEW_QUERY = np.array([0.5, 1.5])    # exercise 2: "mostly food, a little AI" (not shown on the page)
NEW_TEMPERATURE = 0.5               # exercise 3: not in the page's table (0.1, 0.3, 1, 3, 10, 1e6)
ROBOT_CHEFS = "Robot Chefs"


# ---------------------------------------------------------------- exercise 1: write the code
def reference_soft_lookup(query, keys, values, temperature):
    """The package's answer for the exercise's signature: ``(output (d_v,), weights (n_books,))``."""
    lib = Library(tuple(f"book {i}" for i in range(len(keys))), keys, values)
    return _package(query, lib, temperature)


def random_cases(seed=None, n_cases: int = 6) -> list:
    """Fresh random libraries ``(query, keys, values, temperature)``.

    Sizes vary (n_books 2..8, d_k 2..4, d_v differs from d_k so blending the
    keys cannot pass), temperatures span 0.2..5 and are never 1 (so ignoring
    the temperature cannot pass), and the last case has a score of 3000 (so an
    ``exp`` without subtracting the largest score overflows).
    """
    rng = np.random.default_rng(seed)
    cases = []
    for i in range(n_cases):
        n_books, d_k = int(rng.integers(2, 8)), int(rng.integers(2, 5))  # d_k >= 2: sqrt(d_k) != 1
        d_v = d_k + int(rng.integers(1, 3))
        if d_v == n_books:  # keep the two results' shapes distinguishable
            n_books += 1
        query = rng.normal(size=d_k)
        keys = rng.normal(size=(n_books, d_k))
        values = rng.normal(size=(n_books, d_v))
        temperature = float(np.exp(rng.uniform(np.log(0.2), np.log(5.0))))
        if abs(temperature - 1.0) < 0.1:
            temperature = 2.5
        if i == n_cases - 1:  # huge scores: the naive exp overflows, the stable one does not
            query, keys = 30.0 * query / np.linalg.norm(query), 30.0 * keys
            keys[0] = 100.0 * query / np.linalg.norm(query)  # one book scores 3000: a clear winner
            temperature = min(temperature, 2.0)  # 3000 / 2 = 1500 > 709, where exp overflows
        cases.append((query, keys, values, temperature))
    return cases


def _close(a, b) -> bool:
    return np.shape(a) == np.shape(b) and np.allclose(a, b, atol=1e-6)


def _diagnose_soft_lookup(got, want, case):
    """A sentence naming the mistake, or None to let the generic comparison speak."""
    query, keys, values, temperature = case
    try:
        out, w = (np.asarray(g, dtype=float) for g in got)
    except (TypeError, ValueError):
        return None  # check_function reports it
    if w.shape != want[1].shape or out.shape != want[0].shape:
        return None  # check_function reports the shapes
    if not np.all(np.isfinite(w)) or not np.all(np.isfinite(out)):
        return ("your result contains NaN or inf. One score here is 3000, and exp of anything above "
                "about 709 overflows: subtract the largest score before exp (softmax does not change).")
    s = keys @ query  # (n_books, d_k) @ (d_k,) -> (n_books,)
    if np.any(w < -1e-12):
        return "some weights are negative: weights come from exp(...), which is always positive."
    if not np.isclose(w.sum(), 1.0, atol=1e-6):
        return (f"your weights sum to {w.sum():.4g}, not 1: divide the exponentials "
                f"by their sum (over the books).")
    if _close(w, want[1]):
        if not _close(out, want[0]) and _close(out, values.mean(axis=0)):
            return "your output is the plain average of the values: weight them with your weights."
        if not _close(out, want[0]):
            return "your weights are right but the output is not: output = weights @ values."
        return None
    if _close(w, softmax(s)):
        return (f"your weights are those of temperature 1, but this case has temperature "
                f"{temperature:.3g}: the temperature is ignored. Divide the scores by it.")
    if _close(w, softmax(s * temperature)):
        return "you multiplied the scores by the temperature; divide them by it."
    if _close(w, softmax(s / (temperature * np.sqrt(len(query))))):
        return ("you divided by sqrt(d_k) as well: in this chapter's lookup the temperature "
                "alone scales the scores.")
    j = int(np.argmax(np.abs(w - want[1])))
    return (f"your weights are off (book {j}: yours {w[j]:.4g}, expected {want[1][j]:.4g}). "
            f"weights = softmax(scores / temperature) with scores = keys @ query.")


def _check_returns_a_pair(fn, case):
    """Feedback when ``fn`` does not return ``(output, weights)`` in that order, else None."""
    if not callable(fn):
        return None  # check_function says so
    try:
        got = fn(*case)
    except Exception:  # NotImplementedError and the reader's errors: check_function reports them
        return None
    want_out, want_w = reference_soft_lookup(*case)
    if not isinstance(got, tuple):
        if got is not None and np.shape(got) in (want_out.shape, want_w.shape):
            return Feedback(False, "soft_lookup returned one array; return both: "
                                   "`return output, weights`.")
        return None
    if len(got) == 2 and np.shape(got[0]) == want_w.shape and np.shape(got[1]) == want_out.shape:
        return Feedback(False, "the two results look swapped: return (output, weights), in that order.")
    return None


def check_soft_lookup(fn, seed=None) -> Feedback:
    """Run ``fn(query, keys, values, temperature)`` on fresh random libraries.

    Expected: ``(output, weights)`` with shapes (d_v,) and (n_books,), equal to
    the package's ``soft_lookup``. The first mistake found is named.
    """
    cases = random_cases(seed)
    early = _check_returns_a_pair(fn, cases[0])
    if early is not None:
        return early
    fb = check_function(fn, reference_soft_lookup, cases, name="soft_lookup",
                        diagnose=_diagnose_soft_lookup, atol=1e-8,
                        praise="It agrees with the package on every random library, "
                               "including one with a score of 3000.")
    if fb.pending and fn is not None:  # the stub still raises NotImplementedError
        return Feedback(False, "No answer yet: write your code in place of "
                               "`raise NotImplementedError`, then run the cell again.", pending=True)
    return fb


# ---------------------------------------------------------------- exercises 2-4: new cases
def check_new_query_weights(answer) -> Feedback:
    """The five weights (one per book, in the library's order) for ``NEW_QUERY`` at temperature 1."""
    lib = demo_library()
    expected = _package(NEW_QUERY, lib, 1.0)[1]
    return check_close(answer, expected, rtol=0, atol=5e-3,
                       hint="scores = keys @ NEW_QUERY (five numbers), then softmax; "
                            "your soft_lookup from exercise 1 does both. Give all five weights, "
                            "in the library's order.")


def check_robot_chefs_weight(answer) -> Feedback:
    """The weight of *Robot Chefs* for the demo query at temperature ``NEW_TEMPERATURE``."""
    lib = demo_library()
    expected = _package(DEMO_QUERY, lib, NEW_TEMPERATURE)[1][lib.titles.index(ROBOT_CHEFS)]
    return check_close(answer, expected, rtol=0, atol=2e-3,
                       hint=f"divide the five scores by {NEW_TEMPERATURE}, softmax them, and read "
                            f"the entry of book 4. One number between 0 and 1.")


def check_doubled_query_temperature(answer) -> Feedback:
    """Which temperature makes ``2 * DEMO_QUERY`` give the weights ``DEMO_QUERY`` has at temperature 1?"""
    lib = demo_library()
    target = _package(DEMO_QUERY, lib, 1.0)[1]
    if answer is not None:
        try:
            t = float(answer)
        except (TypeError, ValueError):
            return Feedback(False, "Give one number (a temperature > 0).")
        if not np.isfinite(t) or t <= 0:
            return Feedback(False, "A temperature must be a positive number.")
        if np.allclose(_package(2 * DEMO_QUERY, lib, t)[1], target, atol=1e-4):
            return Feedback(True, "Doubling the query doubles every score; dividing by 2 undoes it. "
                                  "A longer query acts like a colder temperature.")
        guess = _package(2 * DEMO_QUERY, lib, t)[1].max()
        direction = "sharper" if guess > target.max() else "flatter"
        return Feedback(False, f"At that temperature the doubled query's weights are {direction} than "
                               f"the original's (top weight {guess:.3f} vs {target.max():.3f}). "
                               "Hint: what does doubling the query do to each score q . k?")
    return check_close(None, 0.0, hint="")


# ---------------------------------------------------------------- exercise 5: what "the" offers
def toy_weights_with_determiner_key(key) -> np.ndarray:
    """The toy sentence's (4, 4) weights when W_k's determiner row is ``key`` (2,)."""
    tokens, X, W_q, W_k, W_v = toy_sentence()
    W_k = W_k.copy()
    W_k[TOKEN_FEATURES.index("determiner")] = key
    _, w = scaled_dot_product_attention(X @ W_q, X @ W_k, X @ W_v)  # (4, 3) @ (3, d) -> (4, d); w (4, 4)
    return w


def check_determiner_key(answer) -> Feedback:
    """Two numbers, the determiner's row of W_k ("I am a noun", "I am a verb"), that make
    "cat" give "the" a larger weight than any other token (strictly: a tie is not enough)."""
    if answer is None:
        return no_answer()
    try:
        key = np.asarray(answer, dtype=float)
    except (TypeError, ValueError):
        return Feedback(False, "Give two numbers: the determiner's row of W_k.")
    if key.shape != (2,):
        return Feedback(False, f"Give two numbers (the determiner's row of W_k, shape (2,)); "
                               f"got shape {key.shape}.")
    if not np.all(np.isfinite(key)):
        return Feedback(False, "Your key contains NaN or inf.")
    tokens = toy_sentence()[0]
    cat, the = tokens.index("cat"), tokens.index("the")
    row = toy_weights_with_determiner_key(key)[cat]  # (4,): what "cat" reads
    rival = max((j for j in range(len(tokens)) if j != the), key=lambda j: row[j])
    if row[the] > row[rival] + 1e-6:
        return Feedback(True, f'"cat" now gives "the" {row[the]:.2f} of its attention, more than any other '
                              'token. Only the key changed, so only how "the" is *read* changed; '
                              'what "the" asks for (its query) is set by W_q.')
    return Feedback(False, f'"cat" still reads "{tokens[rival]}" at least as much as "the" '
                           f'(weights {row[rival]:.2f} and {row[the]:.2f}). Hint: work out what "cat" '
                           'asks for (its row of X @ W_q), then give "the" a key whose dot product with it '
                           f'beats that of "{tokens[rival]}".')
