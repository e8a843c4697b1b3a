"""Chapter 3 checkers: each worked solution passes, each placeholder is "no answer yet",
the usual mistakes in winning_scale, weights_from_output and the row by hand are named precisely,
hints never give the answer."""
import numpy as np
import pytest

from qkv_viz import softmax
from qkv_viz.chapters.ch03_toy import exercises as ch03
from qkv_viz.chapters.ch03_toy import solutions as sol

SOLVED = [(ch03.check_projections, sol.projections),
          (ch03.check_winning_scale, sol.winning_scale),
          (ch03.check_weights_from_output, sol.weights_from_output),
          (ch03.check_tie_query, sol.tie_query)]


@pytest.mark.parametrize("check, answer", SOLVED)
def test_solution_passes(check, answer):
    fb = check(answer)
    assert fb.correct, fb.message


@pytest.mark.parametrize("check", [c for c, _ in SOLVED])
def test_placeholder_is_pending_not_an_error(check):
    fb = check(None)
    assert not fb.correct and fb.pending and "No answer yet" in repr(fb)


def test_wrong_queries_are_named_without_the_answer():
    cases = {
        "no tie": (lambda K, a, b: K[a], "q . (k_"),                          # points at key a: no tie
        "wrong sign": (lambda K, a, b: -sol.tie_query(K, a, b), "opposite sign"),
        "zero": (lambda K, a, b: np.zeros(2), "cannot be zero"),
        "bad shape": (lambda K, a, b: np.ones(3), "shape (2,)"),
        "nan": (lambda K, a, b: np.array([np.nan, 1.0]), "finite"),
    }
    for name, (fn, words) in cases.items():
        fb = ch03.check_tie_query(fn, seed=0)
        assert not fb.correct and words in fb.message, (name, fb.message)
        assert "-1, -1" not in fb.message  # never the page's answer


@pytest.mark.parametrize("seed", range(6))
def test_tie_cases_always_have_an_answer_and_any_right_query_passes(seed):
    for K, a, b in ch03.tie_cases(seed=seed):
        q = sol.tie_query(K, a, b)
        np.testing.assert_array_equal(ch03._tie_verdict(K, a, b, q), [1.0, 1.0])
        np.testing.assert_array_equal(ch03._tie_verdict(K, a, b, 7.3 * q), [1.0, 1.0])  # any length
    assert ch03.check_tie_query(lambda K, a, b: 0.01 * sol.tie_query(K, a, b), seed=seed).correct


def test_the_pages_keys_tie_k0_and_k2_below_k1():
    K, a, b = ch03.tie_cases(seed=0)[0]
    assert (a, b) == (0, 2)
    for c in (-0.1, -1.0, -7.5):
        w = softmax(K @ np.array([c, c]) / np.sqrt(2))
        assert np.isclose(w[0], w[2]) and w[1] < w[0]
    assert not ch03.check_tie_query(lambda K, a, b: np.array([0.5, 0.5])).correct    # k1 gets more


# ---------------------------------------------------------------- a key long enough to win
def _best_over(q, K, j):
    return np.delete(K @ q, j).max()


SCALE_MISTAKES = {
    "times sqrt(d_k)": lambda q, K, j: sol.winning_scale(q, K, j) * np.sqrt(len(q)),
    "divided by sqrt(d_k)": lambda q, K, j: sol.winning_scale(q, K, j) / np.sqrt(len(q)),
    "upside down": lambda q, K, j: (K[j] @ q) / _best_over(q, K, j),
    "gap between": lambda q, K, j: _best_over(q, K, j) - K[j] @ q,
    "first of the other keys": lambda q, K, j: np.delete(K @ q, j)[0] / (K[j] @ q),
    "key LENGTHS": lambda q, K, j: np.linalg.norm(np.delete(K, j, axis=0)[np.argmax(np.delete(K @ q, j))])
                                   / np.linalg.norm(K[j]),
    "WEIGHTS": lambda q, K, j: (lambda w: np.delete(w, j).max() / w[j])(softmax(K @ q / np.sqrt(len(q)))),
    "not yet a tie": lambda q, K, j: 0.9 * sol.winning_scale(q, K, j),
    "smaller factor": lambda q, K, j: 1.3 * sol.winning_scale(q, K, j),
    "must be positive": lambda q, K, j: -sol.winning_scale(q, K, j),
    "not inf": lambda q, K, j: np.inf,
    "return np.inf": lambda q, K, j: _best_over(q, K, j) / (K[j] @ q) if K[j] @ q != 0 else 0.0,  # no inf case
    "has shape": lambda q, K, j: np.array([sol.winning_scale(q, K, j)]),
    "every other key points away from q too": lambda q, K, j: (   # "pointing away never wins": wrong when all do
        _best_over(q, K, j) / (K[j] @ q) if K[j] @ q > 0 else np.inf),
}


@pytest.mark.parametrize("seed", [0, 1, 5])
@pytest.mark.parametrize("phrase", list(SCALE_MISTAKES))
def test_winning_scale_mistakes_are_named(phrase, seed):
    fb = ch03.check_winning_scale(SCALE_MISTAKES[phrase], seed=seed)
    assert not fb.correct and not fb.pending
    assert phrase in fb.message, fb.message
    assert "2.5" not in fb.message  # never the page's answer


@pytest.mark.parametrize("seed", range(8))
def test_winning_scale_cases_lose_first_then_cannot_win(seed):
    cases = ch03.winning_scale_cases(seed=seed)
    q, K, j = cases[0]
    np.testing.assert_array_equal(q, ch03.TOY_Q[0]) and np.testing.assert_array_equal(K, ch03.TOY_K)
    assert j == 0 and sol.winning_scale(q, K, j) == 2.5
    for q, K, j in cases[1:-3]:
        c = sol.winning_scale(q, K, j)
        assert 1 < c < np.inf and int(np.argmax(K @ q)) != j
        longer = K.copy()
        longer[j] *= c * 1.01                                   # a little longer than the tie: key j wins
        assert int(np.argmax(softmax(longer @ q / np.sqrt(len(q))))) == j
    q, K, j = cases[-3]                                         # every key points away from q
    assert np.all(K @ q < 0) and int(np.argmax(K @ q)) != j and sol.winning_scale(q, K, j) == 0.5
    for factor, winner in ((0.49, j), (0.51, 1 - j), (2.0, 1 - j)):   # only a key shorter than the tie wins
        scaled = K.copy()
        scaled[j] *= factor
        assert int(np.argmax(scaled @ q)) == winner, factor
    for q, K, j in cases[-2:]:
        assert K[j] @ q <= 0 and sol.winning_scale(q, K, j) == np.inf
    assert K[j] @ q < 0 and cases[-2][1][cases[-2][2]] @ cases[-2][0] == 0   # one away from q, one at right angles


def test_winning_scale_accepts_a_python_float_and_numpy_division_by_zero():
    def naive(q, K, j):                                         # numpy's x / 0.0 is inf: right at right angles
        dots = K @ q
        c = np.delete(dots, j).max() / dots[j]
        return float(c) if c > 0 else np.inf
    with np.errstate(divide="ignore"):
        assert ch03.check_winning_scale(naive, seed=2).correct


WEIGHT_MISTAKES = {
    "add up to": lambda V, o: np.linalg.lstsq(V.T, o, rcond=None)[0],   # two equations only
    "mix the values into": lambda V, o: np.full(3, 1 / 3),
    "has shape": lambda V, o: np.append(sol.weights_from_output(V, o), 0.0),
}


@pytest.mark.parametrize("phrase", list(WEIGHT_MISTAKES))
def test_weights_from_output_mistakes_are_named(phrase):
    fb = ch03.check_weights_from_output(WEIGHT_MISTAKES[phrase], seed=3)
    assert not fb.correct and phrase in fb.message, fb.message



# ---------------------------------------------------------------- projections that give the page's Q and K
def test_projections_first_case_is_the_page_and_every_case_is_solvable():
    cases = ch03.projection_cases(seed=0)
    X, Q, K = cases[0]
    np.testing.assert_array_equal(X, ch03.TOY_X) and np.testing.assert_array_equal(Q, ch03.TOY_Q)
    assert any(X.shape[1] > X.shape[0] for X, _, _ in cases)           # a wide X, where solve() fails
    for X, Q, K in cases:
        W_q, W_k = sol.projections(X, Q, K)
        np.testing.assert_allclose(X @ W_q, Q, atol=1e-10)
        np.testing.assert_allclose(X @ W_k, K, atol=1e-10)
    W_q, W_k = sol.projections(ch03.TOY_X, ch03.TOY_Q, ch03.TOY_K)       # the page's weights come back
    scores = (ch03.TOY_X @ W_q) @ (ch03.TOY_X @ W_k).T / np.sqrt(2)
    np.testing.assert_allclose(softmax(scores), softmax(ch03.TOY_Q @ ch03.TOY_K.T / np.sqrt(2)))


def test_projections_any_exact_pair_passes():
    def other(X, Q, K):                                  # lstsq's answer plus something X sends to 0
        W_q, W_k = sol.projections(X, Q, K)
        null = np.linalg.svd(X)[2][X.shape[0]:]          # (d_model - T, d_model): X @ null.T = 0
        if len(null):
            W_q = W_q + null.T @ np.ones((len(null), W_q.shape[1]))
        return W_q, W_k
    fb = ch03.check_projections(other, seed=0)
    assert fb.correct, fb.message
    assert "typing Q and K in lost nothing" in fb.message


PROJECTION_MISTAKES = {
    "swapped": lambda X, Q, K: sol.projections(X, Q, K)[::-1],
    "X.T @ Q": lambda X, Q, K: (X.T @ Q, X.T @ K),
    "Q itself": lambda X, Q, K: (Q, sol.projections(X, Q, K)[1]),
    "least-squares solver": lambda X, Q, K: (np.linalg.solve(X, Q), np.linalg.solve(X, K)),
    "must be (d_model, d_k)": lambda X, Q, K: (np.linalg.pinv(X).T, np.linalg.pinv(X).T),
    "two matrices": lambda X, Q, K: sol.projections(X, Q, K)[0],
    "W_q is right": lambda X, Q, K: (sol.projections(X, Q, K)[0], 2 * sol.projections(X, Q, K)[1]),
}


@pytest.mark.parametrize("phrase", list(PROJECTION_MISTAKES))
def test_projections_mistakes_are_named(phrase):
    fb = ch03.check_projections(PROJECTION_MISTAKES[phrase], seed=0)
    assert not fb.correct and not fb.pending
    assert phrase in fb.message, fb.message


def test_projections_placeholder_waits():
    assert ch03.check_projections(None).pending


@pytest.mark.parametrize("factor, phrase", [(0.9, "comes at a larger factor"), (1.3, "not yet a tie")])
def test_winning_scale_off_only_where_every_key_points_away(factor, phrase):
    """Right on every case but the one where all keys point away from q: shorter than the tie already wins,
    longer does not yet tie (the reverse of a key that points along q)."""
    def answer(q, K, j):
        c = sol.winning_scale(q, K, j)
        return c * factor if np.all(K @ q < 0) else c
    fb = ch03.check_winning_scale(answer, seed=0)
    assert not fb.correct and phrase in fb.message, fb.message
