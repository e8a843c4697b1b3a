"""Chapter 3 exercises: a new query's row of weights by hand, attention with a batch axis and T != S (from given Q, K, V, or projected from X), the weights back from an output, a query that ties two keys
(for any keys).

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
from qkv_viz.chapters.ch03_toy.toy import TOY_K, TOY_Q




# ---------------------------------------------------------------- a new query's row, by hand
HAND_Q = np.array([1.0, -1.0])   # a fourth token's query, against the page's keys k0, k1, k2; no figure shows its row
HAND_ATOL = 0.006                # weights written to two decimals pass


def _softmax_row(x):
    e = np.exp(x - x.max())
    return e / e.sum()


def _hand_mistakes():
    """(message, wrong weights (3,)) for the usual slips on the new query's row, in the order tried."""
    q, K = HAND_Q, TOY_K
    d_k = K.shape[1]
    dots = K @ q                                         # (3, 2) @ (2,) -> (3,): q . k_j
    scores = dots / np.sqrt(d_k)
    Q4 = np.vstack([TOY_Q, q])                           # (4, 2): the page's three queries and the new one
    column = softmax((Q4 @ K.T / np.sqrt(d_k)).T)[:, -1]  # softmax down each column (over the queries), row q
    mistakes = [
        ("these are the weights of the dot products UNSCALED: divide each q . k_j by sqrt(d_k) = sqrt(2) "
         "before the exponential.", _softmax_row(dots)),
        ("these are softmax(q . k_j / d_k): divide by the SQUARE ROOT of d_k = 2, about 1.414, not by 2.",
         _softmax_row(dots / d_k)),
        ("these are softmax(q . k_j * sqrt(2)): divide by sqrt(d_k), do not multiply.",
         _softmax_row(dots * np.sqrt(d_k))),
        ("these are the exponentials e^score, not yet normalised: divide each by their sum, so the three "
         "weights add up to 1.", np.exp(scores)),
        ("these are the exponentials of the unscaled dot products, not normalised: divide each dot product by "
         "sqrt(2) first, then divide each exponential by their sum.", np.exp(dots)),
        ("you divided the scores by their sum without the exponential: softmax exponentiates first, "
         "w_j = e^score_j / (sum of the three e^score).", scores / scores.sum() if scores.sum() else scores),
        ("the softmax ran down a column (over the queries, the wrong axis), not along the row: q's row is "
         "q against every key k0, k1, k2, normalised over those three.", column),
    ]
    for token in range(len(TOY_Q)):
        signs = " (it is -q: check the signs)" if np.allclose(TOY_Q[token], -q) else ""
        mistakes.append((f"that is token {token}'s row (its query q{token} = {TOY_Q[token].tolist()}{signs}), "
                         f"already on the page. The new query is q = {q.tolist()}.",
                         softmax(TOY_Q[token] @ K.T / np.sqrt(d_k))))
    return mistakes


def check_row_by_hand(weights) -> Feedback:
    """``weights``: the three weights (3,) of the new query q = HAND_Q = (1, -1) against the page's keys, worked
    out by hand or with the reader's own numpy lines; two decimals are enough. Names the slip (scaling forgotten
    or wrong, not normalised, no exponential, softmax over the wrong axis, a sign, a page row) without giving
    the answer."""
    if weights is None:
        return no_answer()
    try:
        w = as_array(weights)[0].astype(float).ravel()
    except Exception as exc:  # noqa: BLE001 - as_array names what it could not read
        return Feedback(False, f"weights should be three numbers, e.g. [0.2, 0.3, 0.5]: it {exc}.")
    if w.shape != (3,):
        return Feedback(False, f"give three weights, one per key k0, k1, k2; got {w.size} number(s).")
    if not np.all(np.isfinite(w)):
        return Feedback(False, "weights contains NaN or inf.")
    want = softmax(HAND_Q @ TOY_K.T / np.sqrt(TOY_K.shape[1]))
    if np.allclose(w, want, atol=HAND_ATOL, rtol=0):
        return Feedback(True, f"q's weights are {np.round(want, 3).tolist()}. q = (1, -1) points more nearly "
                              "along k2 than along k1, yet k1 takes most of the weight: length beats "
                              "direction again.")
    for message, wrong in _hand_mistakes():
        if np.allclose(w, wrong, atol=HAND_ATOL, rtol=0):
            return Feedback(False, message)
    if not np.isclose(w.sum(), 1.0, atol=0.02):
        return Feedback(False, f"your weights add up to {w.sum():.3g}: after the exponentials, divide each by "
                               "their sum, so the three add up to 1.")
    return Feedback(False, "these weights add up to 1 but are not q's. Check the three dot products "
                           "q . k_j = q[0] k_j[0] + q[1] k_j[1] first (q = (1, -1); the keys are the rows of K), "
                           "then divide each by sqrt(2), exponentiate, and divide by the sum.")


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


def attention_from_x_cases(seed=None, n_cases: int = 6) -> list:
    """Fresh random (X_q, X_kv, W_q, W_k, W_v): the shapes of :func:`attention_cases`
    (batch axis, T != S, d_k not in (B, S)) with the queries projected from X_q (B, T, d_model)
    and the keys and values from X_kv (B, S, d_model). d_model in 2..6 differs from d_k and d_v,
    so using X where a projection belongs gives a wrong shape."""
    rng = np.random.default_rng(seed)
    cases = []
    for Q, K, V in attention_cases(rng.integers(2**31), n_cases=4 * n_cases):
        (B, T, d_k), (_, S, d_v) = Q.shape, V.shape
        d_model = int(rng.integers(2, 7))
        if d_model in (d_k, d_v):
            continue
        cases.append((rng.standard_normal((B, T, d_model)), rng.standard_normal((B, S, d_model)),
                      *(0.9 * rng.standard_normal((d_model, d)) for d in (d_k, d_k, d_v))))
        if len(cases) == n_cases:
            break
    return cases


def _project(X_q, X_kv, W_q, W_k, W_v):
    return X_q @ W_q, X_kv @ W_k, X_kv @ W_v   # (B, T, d_k), (B, S, d_k), (B, S, d_v)


def _reference_from_x(*case):
    return scaled_dot_product_attention(*_project(*case))


def _diagnose_from_x(gots, wants, case) -> str | None:
    X_q, X_kv, W_q, W_k, W_v = case
    out, w = (np.asarray(g, dtype=float) for g in gots)
    if w.shape == wants[1].shape and np.allclose(w, wants[1]):
        if out.shape == X_kv.shape[:1] + (X_q.shape[1], X_kv.shape[2]):
            return "your weights are right but the output mixes the rows of X_kv: mix V = X_kv @ W_v."
    return _diagnose_attention(gots, wants, _project(*case))


def check_attention_from_x(fn, seed=None) -> Feedback:
    """Exercise 1: ``fn(X_q, X_kv, W_q, W_k, W_v) -> (output, weights)``, projections included,
    with a batch axis and T != S."""
    raised = []  # what the reader's function raised, with the projected Q and K

    def watched(*case):
        try:
            return fn(*case)
        except Exception as exc:
            Q, K, _ = _project(*case)
            raised.append((exc, Q, K))
            raise

    fb = check_function(watched if callable(fn) else fn, _reference_from_x, attention_from_x_cases(seed),
                        name="attention_from_x", diagnose=_diagnose_from_x, returns=("output", "weights"), shape_hints=True,
                        praise="Your attention_from_x gives the package's output and weights on every batch: "
                               "queries from X_q, keys and values from X_kv, rows summing to 1, scaled by 1/sqrt(d_k).")
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


def tie_cases(seed=None, n_cases: int = 5) -> list:
    """``(K (S, 2), a, b)``: the page's keys with (0, 2) first, then fresh random keys in which keys a and
    b are neighbours on the outside of the cloud (every other key lies strictly on one side of the line
    through k_a and k_b), so a query that ties them and puts every other key below exists."""
    rng = np.random.default_rng(seed)
    cases = [(TOY_K.copy(), 0, 2)]
    while len(cases) < n_cases:
        S = int(rng.integers(3, 6))
        k_a, k_b = rng.normal(size=(2, 2)) * 2
        d = k_a - k_b
        if np.linalg.norm(d) < 0.5:
            continue
        n = np.array([-d[1], d[0]]) / np.linalg.norm(d)          # (2,): across the line through k_a, k_b
        others = rng.normal(size=(S - 2, 2)) * 2
        side = others @ n - k_a @ n                              # (S - 2,): signed distance to the line
        others -= np.outer(np.where(side > 0, side + rng.uniform(0.3, 2.0, S - 2), 0.0), n)  # all below the line
        others -= np.outer(np.where(side <= 0, rng.uniform(0.3, 2.0, S - 2), 0.0), n)
        K = np.vstack([k_a, k_b, others])
        order = rng.permutation(S)                               # a and b anywhere in the list
        K = K[order]
        a, b = int(np.flatnonzero(order == 0)[0]), int(np.flatnonzero(order == 1)[0])
        cases.append((K, a, b))
    return cases


def _tie_verdict(K, a, b, q):
    """(tied, others below) as 0/1 floats for the query q (2,) on keys K (S, 2)."""
    dots = K @ q                                                 # (S, 2) @ (2,) -> (S,): q . k_j
    scale = 1e-6 * max(1.0, float(np.abs(dots).max()))
    tied = abs(dots[a] - dots[b]) <= scale
    rest = np.delete(dots, [a, b])
    below = bool(np.all(rest < min(dots[a], dots[b]) - scale))
    return np.array([float(tied), float(below)])


def check_tie_query(fn, seed=None) -> Feedback:
    """Exercise 3: ``fn(K, a, b) -> q`` (2,), a query for which keys a and b get equal weight and every
    other key less than either. Any such query is right: the checker judges the weights, not the numbers."""
    seen = []  # the reader's query on each case, for the diagnosis

    def judged(K, a, b):
        K_given = np.array(K, dtype=float)                       # judged on the keys as given, even if fn changes K
        q = fn(K, a, b)
        if q is None:
            return None
        q, _ = as_array(q)
        q = q.astype(float)
        if q.shape != (2,) or not np.all(np.isfinite(q)):
            raise AnswerError(f"should return a query of shape (2,) with finite numbers, got shape {q.shape}")
        seen.append(q)
        return _tie_verdict(K_given, a, b, q)

    def diagnose(got, want, case):
        K, a, b = case
        q = seen[-1]
        w = softmax(K @ q / np.sqrt(2))                          # (S,): the weights of the keys under this query
        if got[0] < 0.5:
            return (f"under your q = {np.round(q, 3).tolist()} key {a} gets the weight {w[a]:.3f} and key {b} "
                    f"{w[b]:.3f}: equal weights need equal dot products, q . k_{a} = q . k_{b}, i.e. "
                    f"q . (k_{a} - k_{b}) = 0. Which directions are at right angles to k_{a} - k_{b}?")
        worst = max((c for c in range(len(K)) if c not in (a, b)), key=lambda c: w[c])
        if np.allclose(q, 0):
            return "q = 0 ties every key; the others must get LESS than keys a and b: q cannot be zero."
        return (f"keys {a} and {b} tie at {w[a]:.3f}, but key {worst} gets {w[worst]:.3f}, not less. Of the two "
                "directions at right angles to k_a - k_b, you need the one pointing away from the other keys: "
                "try the opposite sign.")

    page_w = softmax(TOY_K @ np.array([-1.0, -1.0]) / np.sqrt(2))  # (3,): the page's keys, q = (-1, -1)
    return check_function(judged if callable(fn) else fn, lambda K, a, b: np.ones(2), tie_cases(seed),
                          name="tie_query", diagnose=diagnose,
                          praise="Every query at right angles to k_a - k_b ties the two keys; the sign that points "
                                 "away from the others puts them below. On the page's keys, under q = (-1, -1) "
                                 f"k0 and k2 get {page_w[0]:.3f} each and k1 {page_w[1]:.3f}.")
