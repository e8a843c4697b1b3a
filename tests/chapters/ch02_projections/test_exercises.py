"""Chapter 2 checkers: each worked solution passes, each placeholder is "no answer yet",
typical mistakes get a precise message that does not give the answer away."""
import numpy as np
import pytest

from qkv_viz.chapters.ch02_projections import exercises as ch02
from qkv_viz.chapters.ch02_projections import solutions as sol

SOLVED = [(ch02.check_self_preference, sol.self_preference), (ch02.check_pair_gradients, sol.pair_gradients)]


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
    fb = check(W_q, W_k)
    assert fb and '"a thing"' in fb.message and '"the" reads "ball" too' in fb.message  # what the head finds
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


def _central_differences(f, W, eps=1e-6):
    grad = np.zeros_like(W)
    for idx in np.ndindex(W.shape):
        n = np.zeros_like(W)
        n[idx] = eps
        grad[idx] = (f(W + n) - f(W - n)) / (2 * eps)
    return grad


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_reference_slopes_are_central_differences_of_the_pair_loss(seed):
    """The checker's reference is itself checked: against central differences of sum -log w[i, t]."""
    for X, W_q, W_k, pairs in ch02.pair_gradient_cases(seed):
        def loss(W_q, W_k):
            w = ch02.page_weights(W_q, W_k, X=X)
            return -sum(np.log(w[i, t]) for i, t in pairs)
        dW_q, dW_k = ch02.reference_pair_gradients(X, W_q, W_k, pairs)
        np.testing.assert_allclose(dW_q, _central_differences(lambda W: loss(W, W_k), W_q), atol=1e-7)
        np.testing.assert_allclose(dW_k, _central_differences(lambda W: loss(W_q, W), W_k), atol=1e-7)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_pair_gradients_solution_passes_on_fresh_cases(seed):
    assert ch02.check_pair_gradients(sol.pair_gradients, seed=seed)


def test_pair_gradient_cases_start_with_the_pages_loss_then_add_the_determiner():
    cases = ch02.pair_gradient_cases(seed=0)
    W_q, W_k = 0.1 * np.random.default_rng(0).standard_normal((2, 4, 2))   # the page's start
    for case, pairs in zip(cases[:2], ([(2, 1)], [(2, 1), (3, 4)])):
        np.testing.assert_array_equal(case[0], ch02.PAGE_X)
        np.testing.assert_array_equal(case[1], W_q)
        np.testing.assert_array_equal(case[2], W_k)
        np.testing.assert_array_equal(case[3], pairs)
    readers = cases[2][3][:, 0]
    assert readers[0] == readers[1]                       # one random case asks one token to read two others


def test_pair_gradients_praise_reports_the_training_it_ran():
    """Right slopes: the checker trains the page's start on both pairs and says what was learned."""
    fb = ch02.check_pair_gradients(sol.pair_gradients)
    W_q, W_k = ch02.page_start()
    for _ in range(ch02.TRAIN_STEPS):
        dW_q, dW_k = sol.pair_gradients(ch02.PAGE_X, W_q, W_k, np.array(ch02.PAGE_PAIRS))
        W_q, W_k = W_q - ch02.TRAIN_LR * dW_q, W_k - ch02.TRAIN_LR * dW_k
    w = ch02.page_weights(W_q, W_k)
    assert w[3, 4] > 0.9 and w[2, 1] > 0.9                # "a" learned to read "ball", "chased" still "dog"
    assert f'"a" reads "ball" {w[3, 4]:.2f}' in fb.message and f'"chased" reads "dog" {w[2, 1]:.2f}' in fb.message


def test_pair_gradients_mistakes_are_named():
    check = ch02.check_pair_gradients

    def last_pair_only(X, W_q, W_k, pairs):
        out = None
        for i, t in pairs:
            out = sol.pair_gradients(X, W_q, W_k, [(i, t)])   # overwrites instead of adding
        return out
    fb = check(last_pair_only, seed=0)
    assert not fb and "one pair's loss only" in fb.message and "case 2 of" in fb.message
    fb = check(lambda *a: tuple(-v for v in sol.pair_gradients(*a)), seed=0)
    assert not fb and "wrong sign" in fb.message
    fb = check(lambda X, a, b, p: tuple(np.sqrt(b.shape[1]) * v for v in sol.pair_gradients(X, a, b, p)), seed=0)
    assert not fb and "sqrt(d_k)" in fb.message
    fb = check(lambda *a: (sol.pair_gradients(*a)[0], 1.1 * sol.pair_gradients(*a)[1]), seed=0)
    assert not fb and "dW_q is right, dW_k is not" in fb.message
    fb = check(lambda *a: (1.1 * sol.pair_gradients(*a)[0], sol.pair_gradients(*a)[1]), seed=0)
    assert not fb and "dW_k is right, dW_q is not" in fb.message

    def stub(X, W_q, W_k, pairs):
        raise NotImplementedError
    assert check(stub).pending
    # the page's own finite differences of the summed loss pass: the task is the slopes, by any honest route
    def by_nudging(X, W_q, W_k, pairs):
        loss = lambda a, b: -sum(np.log(ch02.page_weights(a, b, X=X)[i, t]) for i, t in pairs)  # noqa: E731
        return (_central_differences(lambda W: loss(W, W_k), W_q, eps=1e-5),
                _central_differences(lambda W: loss(W_q, W), W_k, eps=1e-5))
    assert check(by_nudging, seed=0)
