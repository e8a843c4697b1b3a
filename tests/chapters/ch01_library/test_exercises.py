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
    (ch01.check_temperature_for, solutions.temperature_for),
    (ch01.check_lookup_available, solutions.lookup_available),
    (ch01.check_gains_when_warmer, solutions.gains_when_warmer),
]


@pytest.mark.parametrize("check, solution", CHECKS)
def test_every_solution_passes_its_checker(check, solution):
    fb = check(solution)
    assert fb and not fb.pending, fb.message


@pytest.mark.parametrize("check, placeholder", [(c, None) for c, _ in CHECKS]
                         + [(ch01.check_temperature_for, stub), (ch01.check_lookup_available, stub),
                            (ch01.check_gains_when_warmer, stub)])
def test_placeholders_are_no_answer_yet_not_errors(check, placeholder):
    fb = check(placeholder)
    assert not fb and fb.pending
    assert "No answer yet" in repr(fb) and "✘" not in repr(fb)


@pytest.mark.parametrize("seed", range(5))
def test_code_solutions_pass_on_any_fresh_cases(seed):
    assert ch01.check_temperature_for(solutions.temperature_for, seed=seed)
    assert ch01.check_lookup_available(solutions.lookup_available, seed=seed)
    assert ch01.check_gains_when_warmer(solutions.gains_when_warmer, seed=seed)


def test_temperature_cases_have_one_answer_and_the_solution_hits_it():
    """Every case has a unique top book and a target strictly between 1/S and 1, so the top weight falls through
    the target exactly once; the solution's tau gives the target to 1e-9, and the page's half-weight tau is colder
    than 1 (at tau = 1 the top book has 0.46)."""
    for seed in range(3):
        for dots, target in ch01.temperature_cases(seed=seed):
            assert np.sum(dots == dots.max()) == 1 and 1 / len(dots) < target < 1
            top = softmax(dots / np.geomspace(1e-4, 1e4, 400)[:, None]).max(axis=1)
            assert np.all(np.diff(top) <= 1e-15)  # falls as tau rises
            tau = solutions.temperature_for(dots, target)
            assert abs(softmax(dots / tau).max() - target) < 1e-9
    page = demo_library().keys @ DEMO_QUERY
    assert 0.5 < ch01.reference_temperature_for(page, 0.5) < 1.0


def _linear_bisection(dots, target, steps=200):
    """Bisection on a plain (not log) interval: a right answer written differently (with enough steps)."""
    lo, hi = 1e-3, 1e3
    for _ in range(steps):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if softmax(dots / mid).max() > target else (lo, mid)
    return (lo + hi) / 2


def test_other_right_answers_pass():
    for seed in range(3):
        assert ch01.check_temperature_for(_linear_bisection, seed=seed)
        assert ch01.check_temperature_for(lambda d, t: np.array(solutions.temperature_for(d, t)), seed=seed)  # 0-d


def _flipped(dots, target):
    """Bisection that moves the wrong end: it runs off to the hot end."""
    lo, hi = 1e-3, 1e3
    for _ in range(100):
        mid = np.sqrt(lo * hi)
        lo, hi = (lo, mid) if softmax(dots / mid).max() > target else (mid, hi)
    return np.sqrt(lo * hi)


TEMPERATURE_MISTAKES = {  # a reader's wrong answer -> words the feedback must contain
    "always tau = 1": (lambda d, t: 1.0, "too hot"),
    "far too cold": (lambda d, t: 1e-3, "too cold"),
    "multiplied by tau": (lambda d, t: 1 / ch01.reference_temperature_for(d, t), "multiplied"),
    "moves the wrong end": (_flipped, "too hot"),
    "too few steps": (lambda d, t: _linear_bisection(d, t, steps=8), "the top book's weight is"),
    "negative": (lambda d, t: -1.0, "above 0"),
    "not a number": (lambda d, t: "hot", "return one number"),
    "an array": (lambda d, t: np.ones(len(d)), "return one number"),
    "raises": (lambda d, t: 1 / 0, "ZeroDivisionError"),
}


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("name", sorted(TEMPERATURE_MISTAKES))
def test_temperature_for_mistakes_are_named(name):
    fn, words = TEMPERATURE_MISTAKES[name]
    fb = ch01.check_temperature_for(fn, seed=0)
    assert not fb and not fb.pending
    assert words in fb.message, fb.message


def test_temperature_for_says_none_and_non_functions_plainly():
    fb = ch01.check_temperature_for(lambda d, t: None)
    assert not fb and fb.pending and "returns None" in fb.message
    fb = ch01.check_temperature_for(0.85)
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
