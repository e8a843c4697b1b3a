"""Chapter 1 checkers: every solution passes, every placeholder is "no answer yet",
typical mistakes are named precisely, and no hint gives the answer away."""
import numpy as np
import pytest

from qkv_viz.chapters.ch01_library import exercises as ch01
from qkv_viz.chapters.ch01_library import solutions
from qkv_viz.chapters.ch01_library.library import DEMO_QUERY, demo_library
from qkv_viz.core import softmax


def stub(*args):
    raise NotImplementedError  # the notebook's placeholder


CHECKS = [  # (checker, solution)
    (ch01.check_lookup_many, solutions.lookup_many),
    (ch01.check_lookup_available, solutions.lookup_available),
    (ch01.check_gains_when_warmer, solutions.gains_when_warmer),
]


@pytest.mark.parametrize("check, solution", CHECKS)
def test_every_solution_passes_its_checker(check, solution):
    fb = check(solution)
    assert fb and not fb.pending, fb.message


@pytest.mark.parametrize("check, placeholder", [(c, None) for c, _ in CHECKS]
                         + [(ch01.check_lookup_many, stub), (ch01.check_lookup_available, stub),
                            (ch01.check_gains_when_warmer, stub)])
def test_placeholders_are_no_answer_yet_not_errors(check, placeholder):
    fb = check(placeholder)
    assert not fb and fb.pending
    assert "No answer yet" in repr(fb) and "✘" not in repr(fb)


@pytest.mark.parametrize("seed", range(5))
def test_code_solutions_pass_on_any_fresh_cases(seed):
    assert ch01.check_lookup_many(solutions.lookup_many, seed=seed)
    assert ch01.check_lookup_available(solutions.lookup_available, seed=seed)
    assert ch01.check_gains_when_warmer(solutions.gains_when_warmer, seed=seed)


def _sm(s, axis=-1):
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def test_lookup_many_rows_are_the_pages_one_query_lookups():
    """Each reader's row is the page's one-query lookup (softmax(keys @ q / tau), then @ values); the page case has
    the page's query, the historian and the doubled query at tau = sqrt(2); every case can tell tau from 1 and from
    sqrt(d_k), and one is square (a transposed table has the right shape there)."""
    cases = ch01.many_cases(seed=0)
    readers, keys, values, tau = cases[0]
    np.testing.assert_allclose(readers, [DEMO_QUERY, [-1.5, 0.0], 2 * DEMO_QUERY])
    np.testing.assert_allclose(keys, demo_library().keys)
    assert np.isclose(tau, np.sqrt(2))
    for q, k, v, t in cases:
        out, w = ch01.reference_lookup_many(q, k, v, t)
        for i in range(len(q)):
            wi = softmax(k @ q[i] / t)
            np.testing.assert_allclose(w[i], wi)
            np.testing.assert_allclose(out[i], wi @ v)
    for q, k, v, t in cases[1:]:
        assert not np.isclose(t, 1.0) and not np.isclose(t, np.sqrt(k.shape[1]))
    assert any(len(q) == len(k) for q, k, _, _ in cases) and any(len(q) == 1 for q, _, _, _ in cases)


def _looped(q, k, v, t):
    """One reader at a time, as the page does it: a right answer written differently."""
    rows = [softmax(k @ qi / t) for qi in q]
    w = np.array(rows)
    return w @ v, w


def test_other_right_answers_pass():
    for seed in range(3):
        assert ch01.check_lookup_many(_looped, seed=seed)
        assert ch01.check_lookup_many(lambda q, k, v, t: tuple(x.tolist() for x in solutions.lookup_many(q, k, v, t)),
                                      seed=seed)


MANY_MISTAKES = {  # a reader's wrong function -> words the feedback must contain
    "tau forgotten": (lambda q, k, v, t: (_sm(q @ k.T) @ v, _sm(q @ k.T)), "those of tau = 1"),
    "tau multiplied": (lambda q, k, v, t: (_sm(q @ k.T * t) @ v, _sm(q @ k.T * t)), "multiply the dot products by tau"),
    "sqrt(d_k) for tau": (lambda q, k, v, t: (_sm(q @ k.T / np.sqrt(k.shape[1])) @ v,
                                              _sm(q @ k.T / np.sqrt(k.shape[1]))), "divide by sqrt(d_k)"),
    "softmax down the columns": (lambda q, k, v, t: (_sm(q @ k.T / t, 0) @ v, _sm(q @ k.T / t, 0)), "axis 0"),
    "softmax over the whole table": (lambda q, k, v, t: (lambda w: (w @ v, w))(np.exp(q @ k.T / t)
                                                                                / np.exp(q @ k.T / t).sum()),
                                     "whole table"),
    "keys blended": (lambda q, k, v, t: (_sm(q @ k.T / t) @ k, _sm(q @ k.T / t)), "blends the keys"),
    "table transposed": (lambda q, k, v, t: (_sm(k @ q.T / t).T @ v, _sm(k @ q.T / t)), "keys @ queries.T"),
    "weights right, output wrong": (lambda q, k, v, t: (_sm(q @ k.T / t) @ v * 2, _sm(q @ k.T / t)),
                                    "your weights are right"),
}


@pytest.mark.parametrize("name", sorted(MANY_MISTAKES))
def test_lookup_many_mistakes_are_named(name):
    fn, words = MANY_MISTAKES[name]
    fb = ch01.check_lookup_many(fn, seed=0)
    assert not fb and not fb.pending
    assert words in fb.message, fb.message


def test_a_transposed_table_on_a_square_case_is_named():
    """On the square case (T = S) keys @ queries.T has the right shape; the checker still names it."""
    q, k, v, t = next(c for c in ch01.many_cases(seed=0) if len(c[0]) == len(c[1]))
    w = _sm((k @ q.T / t))
    msg = ch01._many_diagnosis((w @ v, w), ch01.reference_lookup_many(q, k, v, t), (q, k, v, t))
    assert msg and "keys @ queries.T" in msg


def test_lookup_many_says_none_and_non_functions_plainly():
    fb = ch01.check_lookup_many(lambda q, k, v, t: None)
    assert not fb and fb.pending and "returns None" in fb.message
    fb = ch01.check_lookup_many(0.85)
    assert not fb and "should be a function" in fb.message


def _softmax(s, axis=-1):
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _mask_after_softmax(renormalise):
    def fn(q, k, v, available, t):
        w = _softmax(k @ q / t) * available
        if renormalise:
            w = w / w.sum()
        return w @ v, w
    return fn


AVAILABLE_MISTAKES = {  # a reader's wrong function -> words the feedback must contain
    "mask ignored": (lambda q, k, v, a, t: (_softmax(k @ q / t) @ v, _softmax(k @ q / t)), "exactly 0"),
    "masked after softmax, not renormalised": (_mask_after_softmax(False), "do not sum to 1"),
    "masked after softmax, renormalised": (_mask_after_softmax(True), "before"),
    "temperature ignored": (lambda q, k, v, a, t: solutions.lookup_available(q, k, v, a, 1.0), "divide the scores"),
    "wrong output": (lambda q, k, v, a, t: (2 * solutions.lookup_available(q, k, v, a, t)[0],
                                             solutions.lookup_available(q, k, v, a, t)[1]), "output = weights @ values"),
}


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("name", sorted(AVAILABLE_MISTAKES))
def test_lookup_available_mistakes_are_named(name):
    fn, words = AVAILABLE_MISTAKES[name]
    fb = ch01.check_lookup_available(fn, seed=0)
    assert not fb and not fb.pending
    assert words in fb.message, fb.message


def test_available_cases_mask_something_keep_something_and_have_a_huge_score():
    cases = ch01.available_cases(seed=0)
    for q, k, v, a, t in cases:
        assert a.dtype == bool and a.any() and not a.all()
        w = ch01.reference_lookup_available(q, k, v, a, t)[1]
        assert np.all(w[~a] == 0) and abs(w.sum() - 1) < 1e-12
    assert any(a.sum() == 1 for *_, a, _ in cases)
    q, k, v, a, t = cases[-1]
    assert (k[~a] @ q).max() / t > 709  # a masked book that would overflow a naive exp


def test_the_condition_agrees_with_a_finite_difference_and_with_the_pages_peak():
    """Book j gains from warming exactly when d_j < sum_i w_i d_i (checked against the weights themselves on every case);
    on the page Robot Chefs gains at tau = 0.3 and 1 and loses at 3 and 10 (the praise says so), and its line on the
    page's 200-point grid peaks where the weighted mean is within 0.05 of its own dot product (the page prints both)."""
    for seed in range(4):
        for dots, tau in ch01.warmer_cases(seed=seed):
            rises = np.array([ch01._rises(dots, j, tau) > 0 for j in range(len(dots))])
            np.testing.assert_array_equal(ch01.reference_gains_when_warmer(dots, tau), rises)
            np.testing.assert_array_equal(solutions.gains_when_warmer(dots, tau), rises)
    lib = demo_library()
    dots, robot = lib.keys @ DEMO_QUERY, lib.titles.index("Robot Chefs")
    assert [ch01.reference_gains_when_warmer(dots, t)[robot] for t in (0.3, 1.0, 3.0, 10.0)] == [True, True, False, False]
    grid = np.geomspace(0.01, 100, 200)[:, None]
    w = softmax(dots / grid)
    peak = int(w[:, robot].argmax())
    assert abs(w[peak] @ dots - dots[robot]) < 0.05


def test_a_finite_difference_answer_passes():
    """The exercise allows comparing a book's weight at two nearby temperatures instead of the condition."""
    def by_difference(dots, tau, h=1e-4):
        return softmax(dots / (tau * (1 + h))) > softmax(dots / (tau * (1 - h)))
    for seed in range(3):
        assert ch01.check_gains_when_warmer(by_difference, seed=seed)


def _complement(d, t):
    return ~solutions.gains_when_warmer(d, t)


@pytest.mark.parametrize("answer, words", [
    (_complement, "whose weight falls"),
    (lambda d, t: d < d.mean(), "plain mean"),
    (lambda d, t: d < d.max(), "every book but the top one"),
    (lambda d, t: d < softmax(d * t) @ d, "multiply the dot products by tau"),
    (lambda d, t: np.zeros(len(d), dtype=bool), "weighted mean sum_i w_i d_i at this temperature"),
    (lambda d, t: (d < softmax(d / t) @ d)[:-1], "returned shape"),
    (lambda d, t: softmax(d / t), "return booleans"),
    (lambda d, t: 1 / 0, "ZeroDivisionError"),
])
def test_gains_when_warmer_mistakes_are_named(answer, words):
    fb = ch01.check_gains_when_warmer(answer, seed=0)
    assert not fb and not fb.pending and words in fb.message, fb.message


def test_tau_1_answer_is_named():
    fb = ch01.check_gains_when_warmer(lambda d, t: solutions.gains_when_warmer(d, 1.0), seed=0)
    assert not fb and "answered for tau = 1" in fb.message, fb.message
