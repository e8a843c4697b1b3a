"""Chapter 3 exercises: the projections that give the page's Q and K, the length at which a key wins, the weights back
from an output, a query that ties two keys (for any keys).

Each ``check_*`` returns a ``Feedback`` (``qkv_viz.chapters.feedback``): right or
wrong with a hint that never gives the answer away; ``None`` means "no answer yet".
Worked solutions: ``qkv_viz.chapters.ch03_toy.solutions``.
"""
from __future__ import annotations

import numpy as np

from qkv_viz.core.softmax import softmax
from qkv_viz.chapters.feedback import AnswerError, Feedback, as_array, check_function
from qkv_viz.chapters.ch03_toy.figures import barycentric
from qkv_viz.chapters.ch03_toy.toy import TOY_K, TOY_Q, TOY_X


# ---------------------------------------------------------------- projections that give the page's Q and K
def projection_cases(seed=None, n_cases: int = 5) -> list:
    """``(X (T, d_model), Q (T, d_k), K (T, d_k))``: the page's TOY_X with its Q and K first, then random square X
    (T = d_model = 3 or 4), then X with more features than tokens (d_model > T), where many W's work. Every X is
    well conditioned, so a solution in float32 still reproduces Q and K closely."""
    rng = np.random.default_rng(seed)
    cases = [(TOY_X.copy(), TOY_Q.copy(), TOY_K.copy())]
    while len(cases) < n_cases:
        square = len(cases) < n_cases - 2
        T = int(rng.integers(3, 5))
        d_model, d_k = (T if square else T + int(rng.integers(1, 3))), int(rng.integers(2, 4))
        X = rng.normal(size=(T, d_model))
        if np.linalg.cond(X) > 20:
            continue
        cases.append((X, rng.normal(size=(T, d_k)) * 2, rng.normal(size=(T, d_k)) * 2))
    return cases


def check_projections(fn, seed=None) -> Feedback:
    """Exercise 1: ``fn(X, Q, K) -> (W_q, W_k)``, each (d_model, d_k), with X @ W_q = Q and X @ W_k = K. Any such
    pair is right (with more features than tokens there are many): the checker judges X @ W_q and X @ W_k."""
    seen = []  # the reader's (W_q, W_k) on each case, for the diagnosis

    def judged(X, Q, K):
        X_given = np.array(X, dtype=float)                       # judged on X as given, even if fn changes it
        T, d_model = X_given.shape
        d_k = np.shape(Q)[1]
        try:
            result = fn(X, Q, K)
        except np.linalg.LinAlgError as exc:
            if T != d_model:
                raise AnswerError(f"failed on an X of shape {X_given.shape} ({exc}). This X has more features "
                                  "than tokens, so it has no inverse and np.linalg.solve refuses it, yet many W's "
                                  "solve X W = Q. A least-squares solver finds one that fits exactly (np.linalg "
                                  "has one).") from None
            raise
        if result is None:
            return None
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            raise AnswerError("should return two matrices, (W_q, W_k)")
        out, Ws = [], []
        for name, W in zip(("W_q", "W_k"), result):
            W, precision = as_array(W)
            if W.shape != (d_model, d_k):
                raise AnswerError(f"returned {name} of shape {W.shape}; it must be (d_model, d_k) = "
                                  f"({d_model}, {d_k}), so that X ({T}, {d_model}) @ {name} is ({T}, {d_k})")
            Ws.append(W)
            made = X_given @ W                                   # (T, d_model) @ (d_model, d_k) -> (T, d_k)
            out.append(made.astype(np.float32) if precision != "float64" else made)
        seen.append(Ws)
        return tuple(out)

    def diagnose(got, want, case):
        X, Q, K = case
        W_q, W_k = seen[-1]
        made_q, made_k = got

        def near(a, b):
            return a.shape == b.shape and np.allclose(a, b, rtol=1e-3, atol=1e-4)
        if near(made_q, K) and near(made_k, Q):
            return "X @ W_q gives K and X @ W_k gives Q: the two are swapped. Return (W_q, W_k) in that order."
        for W, wanted, name in ((W_q, Q, "W_q"), (W_k, K, "W_k")):
            if near(W, X.T @ wanted):
                return (f"your {name} is X.T @ {name[-1].upper()}. The transpose undoes X only when its rows are "
                        "at right angles and of length 1; these are not. X W = Q asks for X's inverse, or a solver.")
            if near(W, wanted):
                return (f"your {name} is {name[-1].upper()} itself. {name} is the matrix that X is multiplied by "
                        f"to give {name[-1].upper()}: X @ {name} = {name[-1].upper()}.")
        if near(made_q, Q):
            return f"W_q is right, but X @ W_k is {np.round(made_k, 3).tolist()}, not K = {np.round(K, 3).tolist()}."
        if near(made_k, K):
            return f"W_k is right, but X @ W_q is {np.round(made_q, 3).tolist()}, not Q = {np.round(Q, 3).tolist()}."
        return None

    page_w = softmax(TOY_Q @ TOY_K.T / np.sqrt(2))               # (3, 3): the page's weights
    return check_function(judged if callable(fn) else fn, lambda X, Q, K: (Q, K), projection_cases(seed),
                          name="projections", diagnose=diagnose, returns=("X @ W_q", "X @ W_k"),
                          praise="X @ W_q and X @ W_k give Q and K on every case, so your W's reproduce the "
                                 f"page's weights too (row 0: {np.round(page_w[0], 2).tolist()}). Three independent "
                                 "token vectors with d_model = 3 can be projected onto any queries and keys, so "
                                 "typing Q and K in lost nothing here. With more tokens than features that is no "
                                 "longer true: X W has at most d_model independent rows.")


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
