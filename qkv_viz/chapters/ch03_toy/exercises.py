"""Chapter 3 exercises: a new query's row of weights by hand, the length at which a key wins, the weights back
from an output, a query that ties two keys (for any keys).

Each ``check_*`` returns a ``Feedback`` (``qkv_viz.chapters.feedback``): right or
wrong with a hint that never gives the answer away; ``None`` means "no answer yet".
Worked solutions: ``qkv_viz.chapters.ch03_toy.solutions``.
"""
from __future__ import annotations

import numpy as np

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


# ---------------------------------------------------------------- a key long enough to win
def winning_scale_cases(seed=None, n_cases: int = 7) -> list:
    """``(q (d_k,), K (S, d_k), j)``: the page's q0 with key 0 first (it ties k1 at 2.5 times its length), then
    random keys in d_k = 2..4 where key j does not win yet, its dot product with q is positive and the best other
    key is not the first other one, then keys that all point away from q (key j ties at half its length), then two
    keys no length can save: one at right angles to q (integer vectors, so its dot product is exactly 0) and one
    pointing away from it while another key does not."""
    rng = np.random.default_rng(seed)
    cases = [(TOY_Q[0].copy(), TOY_K.copy(), 0)]
    while len(cases) < n_cases - 3:
        d_k, S = int(rng.integers(2, 5)), int(rng.integers(3, 6))
        q, K = rng.normal(size=d_k), rng.normal(size=(S, d_k)) * 1.5
        j = int(rng.integers(S))
        dots = K @ q                                             # (S, d_k) @ (d_k,) -> (S,): q . k_i
        others = np.delete(dots, j)
        if not (0.3 < dots[j] < others.max() - 0.3) or int(np.argmax(others)) == 0:
            continue  # key j must lose to a positive best, and "the first other key" must be a wrong guess
        if abs(others.max() / dots[j] - np.linalg.norm(np.delete(K, j, axis=0)[np.argmax(others)])
               / np.linalg.norm(K[j])) < 0.1:
            continue  # the ratio of lengths must be a clearly wrong guess
        cases.append((q, K, j))
    cases.append((np.array([1.0, 0.0]), np.array([[-2.0, 0.0], [-1.0, 0.0]]), 0))
    cases.append((np.array([1.0, 0.0, 2.0]), np.array([[0.0, 3.0, 0.0], [1.0, 1.0, 1.0], [2.0, 0.0, 0.0]]), 0))
    cases.append((np.array([2.0, -1.0]), np.array([[1.0, 1.0], [-1.0, 1.0], [0.5, 2.0]]), 1))
    return cases


def _winning_scale(q, K, j):
    dots = K @ q                                                 # (S,): q . k_i, one per key
    best = np.delete(dots, j).max()                              # the best of the other keys
    return float(best / dots[j]) if dots[j] > 0 or (dots[j] < 0 and best < 0) else np.inf


def _diagnose_scale(got, want, case) -> str | None:
    q, K, j = case
    c = float(got)
    d_k = len(q)
    dots = K @ q
    others = np.delete(dots, j)
    best = others.max()
    if not np.isfinite(want):
        rule = (f"A key whose dot product with q is zero or negative (at right angles to q, or pointing away) ties "
                f"at no positive length while the best other key's dot product ({best:.3g} here) is 0 or more: "
                "return np.inf.")
        if np.isfinite(c) and c <= 0:
            return (f"here q . k_{j} = {dots[j]:.3g}, and your c = {c:.4g} is not positive: a negative factor turns "
                    f"key {j} round to point the other way, which is not lengthening it. {rule}")
        if np.isfinite(c):
            return (f"here q . k_{j} = {dots[j]:.3g}, and your c = {c:.4g} gives the lengthened key the score "
                    f"{c * dots[j] / np.sqrt(d_k):.3g}, below the best other key's {best / np.sqrt(d_k):.3g}. {rule}")
        return None
    if not np.isfinite(c):
        if dots[j] < 0:
            return (f"here q . k_{j} = {dots[j]:.3g}, but every other key points away from q too (the best other "
                    f"dot product is {best:.3g}): shortening key {j} raises its dot product towards 0, so a factor "
                    "below 1 ties. Return that finite factor, not inf.")
        return (f"here q . k_{j} = {dots[j]:.3g} is positive, so some length is enough: return that finite factor, "
                "not inf.")

    def near(x):
        return np.isclose(c, x, rtol=1e-4, atol=1e-6)
    rest = np.delete(K, j, axis=0)
    wrong = [
        (want * np.sqrt(d_k), f"that is the right factor times sqrt(d_k) = {np.sqrt(d_k):.3g}. Dividing every score "
                              "by sqrt(d_k) does not change which lengthened key ties: leave sqrt(d_k) out."),
        (want / np.sqrt(d_k), f"that is the right factor divided by sqrt(d_k) = {np.sqrt(d_k):.3g}. Dividing every "
                              "score by sqrt(d_k) does not change which lengthened key ties: leave sqrt(d_k) out."),
        (1.0 / want, "that factor is upside down: lengthening k_j by c multiplies its dot product by c, so c "
                     "times q . k_j must reach the best other dot product."),
        (best - dots[j], "that is the gap between the two dot products; lengthening a key MULTIPLIES its dot "
                         "product, so the factor is a ratio."),
        (others[0] / dots[j], "that ties key j with the first of the other keys, not with the best of them: "
                              "compare with the largest other dot product."),
        (np.linalg.norm(rest[np.argmax(others)]) / np.linalg.norm(K[j]),
         "that is a ratio of key LENGTHS. A dot product rewards length AND direction, |q| |k| cos(angle): compare "
         "the dot products with q, not the lengths."),
    ]
    w = softmax(dots / np.sqrt(d_k))
    wrong.append((np.delete(w, j).max() / w[j], "that is a ratio of WEIGHTS. Lengthening k_j multiplies its dot "
                                                "product (before softmax), so compare dot products."))
    for value, message in wrong:
        if near(value):
            return message
    if c <= 0:
        return "the factor must be positive: a negative c turns the key round, to point the other way."
    lengthened = K.copy()
    lengthened[j] *= c
    w_c = softmax(lengthened @ q / np.sqrt(d_k))                 # (S,): the weights with key j lengthened by c
    if w_c[j] < np.delete(w_c, j).max():
        return (f"with key {j} {c:.4g} times as long its weight is {w_c[j]:.3f}, still below the best other key's "
                f"{np.delete(w_c, j).max():.3f}: not yet a tie.")
    return (f"with key {j} {c:.4g} times as long it already takes {w_c[j]:.3f}, more than every other key "
            f"({np.delete(w_c, j).max():.3f} at most): the tie comes at a {'smaller' if c > want else 'larger'} "
            "factor.")


def check_winning_scale(fn, seed=None) -> Feedback:
    """Exercise 2: ``fn(q, K, j) -> c``, the factor by which key j must be lengthened to tie the best other key
    (np.inf when no length is enough). The checker tries the page's q0 and key 0 first."""
    page_c = _winning_scale(TOY_Q[0], TOY_K, 0)
    return check_function(fn, _winning_scale, winning_scale_cases(seed), name="winning_scale", atol=1e-6,
                          diagnose=_diagnose_scale,
                          praise=f"Your winning_scale finds the tie on every case. On the page, k0 = (0, 1) points "
                                 f"more nearly along q0 than k1 does, yet must be {page_c:g} times as long to "
                                 "tie it. A key at right angles to q, or pointing away, ties at no length while another key scores "
                                 "0 or more; when every key points away, a shorter one (c < 1) ties.")


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
    """Exercise 3: ``fn(V, output) -> weights`` (3,), the mix of the values V (3, 2) that gives ``output`` (2,)."""
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
    """Exercise 4: ``fn(K, a, b) -> q`` (2,), a query for which keys a and b get equal weight and every
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
