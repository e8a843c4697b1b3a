"""Chapter 2 checkers: each worked solution passes, each placeholder is "no answer yet",
typical mistakes get a precise message that does not give the answer away."""
import numpy as np
import pytest

from qkv_viz.chapters.ch02_projections import exercises as ch02
from qkv_viz.chapters.ch02_projections import solutions as sol

SOLVED = [(ch02.check_self_preference, sol.self_preference), (ch02.check_numerical_gradient, sol.numerical_gradient)]


def test_each_solution_passes_and_each_placeholder_waits():
    for check, answer in SOLVED:
        right, pending = check(answer), check(None)
        assert right.correct, right.message
        assert pending.pending and not pending.correct
        assert repr(pending).startswith("… No answer yet")  # not a red cross: nothing is wrong yet


@pytest.mark.parametrize("seed", range(4))
def test_code_solutions_pass_on_fresh_cases(seed):
    assert ch02.check_self_preference(sol.self_preference, seed=seed)


def test_self_preference_names_ties_the_wrong_axis_and_a_count():
    S = lambda X, a, b: (X @ a) @ (X @ b).T  # noqa: E731
    by_argmax = lambda X, a, b: float(np.mean(S(X, a, b).argmax(axis=1) == np.arange(len(X))))  # noqa: E731
    by_column = lambda X, a, b: float(np.mean(S(X, a, b).diagonal() >= S(X, a, b).max(axis=0)))  # noqa: E731
    count = lambda X, a, b: float(np.sum(S(X, a, b).diagonal() >= S(X, a, b).max(axis=1)))  # noqa: E731
    fb = ch02.check_self_preference(by_argmax, seed=0)
    assert not fb and "ties" in fb.message and "case 1 of" in fb.message  # the page's own X catches argmax
    assert "axis 0" in ch02.check_self_preference(by_column, seed=0).message
    assert "between 0 and 1" in ch02.check_self_preference(count, seed=0).message


def test_self_preference_cases_start_with_the_pages_sentence():
    cases = ch02.self_preference_cases(seed=0)
    np.testing.assert_array_equal(cases[0][0], ch02.PAGE_X)
    assert ch02.reference_self_preference(*cases[0]) == 1.0   # no projection: "the" and "a" tie, both count
    assert ch02.reference_self_preference(*cases[1]) == 0.4   # the page's W_q, W_k: only "the" and "a" (all zeros)
    assert ch02.reference_self_preference(*cases[2]) == 1.0   # random X of equal lengths, no projection
    assert sol.self_preference(*cases[0]) == 1.0


def test_determiner_head_accepts_the_solution_and_names_each_mistake():
    W_q, W_k = sol.DETERMINER_W_Q, sol.DETERMINER_W_K
    check = ch02.check_determiner_head
    assert check(W_q, W_k)
    assert check(W_q.tolist(), W_k.astype(np.float32))
    assert check(None, W_k).pending and check(W_q, None).pending
    fb = check(np.zeros((4, 2)), np.zeros((4, 2)))
    assert not fb and "every token equally" in fb.message
    assert "shape (4, d_k)" in check(W_q, W_k[:, :2]).message
    no_verb = W_q.copy()
    no_verb[2] = 0
    fb = check(no_verb, W_k)
    assert not fb and "chased" in fb.message
    assert not check(W_q, W_k * np.nan)
    assert not check("abc", W_k)
    # the page's own matrices leave "a" reading everyone equally
    fb = check(W_q[:, :2], W_k[:, :2])
    assert not fb and '"a"' in fb.message


def test_page_weights_are_the_pages_attention():
    W_q = np.array([[0, 2], [0, 2], [2, 0], [0, 0.]])
    W_k = np.array([[2, 0], [0, 0], [0, 2], [0, 0.]])
    w = ch02.page_weights(W_q, W_k)
    np.testing.assert_allclose(w.sum(axis=1), 1.0)
    assert w[2].argmax() == 1 and abs(w[2, 1] - 0.81) < 0.01  # the page: chased reads dog 0.81


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_numerical_gradient_agrees_with_the_pages_lines(seed):
    assert ch02.check_numerical_gradient(sol.numerical_gradient, seed=seed)


def test_numerical_gradient_mistakes_are_named():
    flipped = lambda loss, W: -sol.numerical_gradient(loss, W)  # noqa: E731
    assert "sign" in ch02.check_numerical_gradient(flipped, seed=0).message
    double = lambda loss, W: 2 * sol.numerical_gradient(loss, W)  # noqa: E731
    assert "2 * eps" in ch02.check_numerical_gradient(double, seed=0).message
    def stub(loss, W):
        raise NotImplementedError
    assert ch02.check_numerical_gradient(stub).pending
    with pytest.raises(ValueError, match="which"):
        ch02.PageLoss("W_v", np.zeros((4, 2)))


def test_the_pages_gradient_lines_match_finite_differences_on_the_page_itself():
    W_q, W_k = 0.1 * np.random.default_rng(0).standard_normal((2, 4, 2))  # the page's start
    for which, W, other in (("W_q", W_q, W_k), ("W_k", W_k, W_q)):
        loss = ch02.PageLoss(which, other)
        np.testing.assert_allclose(sol.numerical_gradient(loss, W), loss.grad(W), atol=1e-8)
