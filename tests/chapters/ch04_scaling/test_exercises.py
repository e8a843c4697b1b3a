"""Chapter 4 exercises: every worked solution passes its checker, every placeholder is "no answer yet",
and the typical mistakes get the precise message."""
import numpy as np
import pytest

from qkv_viz import softmax, softmax_jacobian
from qkv_viz.chapters.ch04_scaling import exercises as ch04
from qkv_viz.chapters.ch04_scaling import solutions as sol


SOLVED = {ch04.check_key_grad: sol.key_grad, ch04.check_row_means: sol.row_means,
          ch04.check_new_width_std: sol.NEW_WIDTH_STD, ch04.check_saturating_d_k: sol.SATURATING_D_K}


@pytest.mark.parametrize("check", list(SOLVED))
def test_solution_passes_its_checker(check):
    for _ in range(3):  # fresh random cases each call
        fb = check(SOLVED[check])
        assert fb.correct and not fb.pending, fb.message


@pytest.mark.parametrize("check", list(SOLVED))
def test_placeholder_none_is_pending_not_an_error(check):
    fb = check(None)
    assert not fb.correct and fb.pending and "No answer yet" in fb.message



@pytest.mark.parametrize("wrong, says", [
    (lambda q, k, g, scale: g @ k, "one row per query"),
    (lambda q, k, g, scale: g.T @ q, "scale=True"),
    (lambda q, k, g, scale: g.T @ q / np.sqrt(q.shape[1]), "scale=False"),
    (lambda q, k, g, scale: -sol.key_grad(q, k, g, scale), "sign is flipped"),
    (lambda q, k, g, scale: g.sum(axis=0)[:, None] * q.mean(axis=0), "which query"),
])
def test_key_grad_mistakes_are_named(wrong, says):
    fb = ch04.check_key_grad(wrong, seed=1)
    assert not fb.correct and not fb.pending
    assert says in fb.message, fb.message


def test_key_grad_reference_is_the_chain_rule_by_finite_differences():
    q, k, g, scale = ch04.key_grad_cases(seed=3)[0]
    loss = lambda kk: np.sum(g * (q @ kk.T) / (np.sqrt(q.shape[1]) if scale else 1.0))
    fd = np.zeros_like(k)
    for idx in np.ndindex(*k.shape):
        e = np.zeros_like(k); e[idx] = 1e-6
        fd[idx] = (loss(k + e) - loss(k - e)) / 2e-6
    np.testing.assert_allclose(ch04._key_grad_reference(q, k, g, scale), fd, atol=1e-6)


def _softmax_cols(x):
    return softmax(x, axis=0)


@pytest.mark.parametrize("wrong, says", [
    (lambda q, k, f: sol.row_means(q, k, 1.0), "before softmax"),
    (lambda q, k, f: sol.row_means(q, k, 1 / f), "divided"),
    (lambda q, k, f: (_softmax_cols(f * q @ k.T).max(axis=1).mean(), 0.3), "axis=-1"),
    (lambda q, k, f: (softmax(f * q @ k.T).max(axis=0).mean(), 0.3), "mean over the T rows"),
    (lambda q, k, f: (sol.row_means(q, k, f)[0],
                      np.mean([(softmax_jacobian(r) ** 2).sum() for r in softmax(f * q @ k.T)])), "square root"),
    (lambda q, k, f: (sol.row_means(q, k, f)[0], 0.5), "||J||_F is off"),
])
def test_row_means_mistakes_are_named(wrong, says):
    fb = ch04.check_row_means(wrong, seed=2)
    assert not fb.correct and not fb.pending
    assert says in fb.message, fb.message


def test_row_means_success_measures_the_three_factors():
    fb = ch04.check_row_means(sol.row_means, seed=0)
    assert fb.correct and "1/sqrt(d_k)" in fb.message and "1/d_k" in fb.message
    rows = [line.split() for line in fb.message.splitlines() if line.strip().startswith("1024")]
    top_1, top_sqrt, top_dk = float(rows[0][1]), float(rows[0][4]), float(rows[0][7])
    assert top_1 > 0.9 and 0.15 < top_sqrt < 0.4 and top_dk < 0.1   # saturated, the page's spread, near uniform


def test_code_checkers_use_fresh_cases_each_call():
    a, b = ch04.key_grad_cases(), ch04.key_grad_cases()
    assert not np.array_equal(a[0][0], b[0][0]) or a[0][0].shape != b[0][0].shape
    seeded = ch04.row_means_cases(seed=3), ch04.row_means_cases(seed=3)
    assert all(np.array_equal(x[0], y[0]) for x, y in zip(*seeded))
    assert all(q.shape[0] != k.shape[0] for q, k, _ in seeded[0])
    assert any(not case[3] for case in a) and any(case[3] for case in a)
    assert all(q.shape[0] != k.shape[0] for q, k, _, _ in a)


def test_row_means_reference_is_the_pages_row_diagnostics():
    """The checker's truth: softmax of factor * q k^T, one full (S, S) Jacobian per row, row means."""
    q, k, factor = ch04.row_means_cases(seed=0)[1]
    w = softmax(factor * q @ k.T)
    want = (w.max(axis=1).mean(), np.mean([np.sqrt((softmax_jacobian(r) ** 2).sum()) for r in w]))
    np.testing.assert_allclose(ch04._row_means_reference(q, k, factor), want)
    np.testing.assert_allclose(sol.row_means(q, k, factor), want)


def test_new_width_std_matches_a_measurement():
    rng = np.random.default_rng(0)
    q = rng.normal(scale=np.sqrt(ch04.VAR_Q_EX3), size=(40000, ch04.D_K_EX3))
    k = rng.normal(size=(40000, ch04.D_K_EX3))
    measured = np.sum(q * k, axis=-1).std()
    assert ch04.check_new_width_std(measured * 1.005)  # a measured answer within 1 % passes
    assert measured == pytest.approx(sol.NEW_WIDTH_STD, rel=0.02)


@pytest.mark.parametrize("check, right", [(ch04.check_new_width_std, sol.NEW_WIDTH_STD),
                                          (ch04.check_saturating_d_k, sol.SATURATING_D_K)])
def test_wrong_numbers_get_hint_without_answer(check, right):
    for wrong in (right * 1.5, right / 2, right ** 2, [right, right], "big"):
        fb = check(wrong)
        assert not fb.correct and not fb.pending
        assert "Hint" in fb.message
        for fmt in ("g", ".2f", ".3f", ".4f"):
            assert format(right, fmt) not in fb.message


def test_saturating_d_k_matches_a_measurement():
    """At the answer's d_k a two-key gap of one std gives max weight 0.99 or more; one width less, below 0.99.
    Measured gaps have that std."""
    d_k = sol.SATURATING_D_K
    sigma = lambda x: 1 / (1 + np.exp(-x))                       # noqa: E731
    assert sigma(np.sqrt(2 * (d_k - 1))) < ch04.MAX_WEIGHT_EX4 <= sigma(np.sqrt(2 * d_k))
    rng = np.random.default_rng(0)
    q, k0, k1 = (rng.normal(size=(40000, d_k)) for _ in range(3))
    assert np.std(np.sum(q * (k1 - k0), axis=-1)) == pytest.approx(np.sqrt(2 * d_k), rel=0.02)


def test_saturating_d_k_accepts_the_whole_width_and_names_the_near_misses():
    right = sol.SATURATING_D_K
    for ok in (right, float(right), np.int64(right)):
        assert ch04.check_saturating_d_k(ok)
    crossing = np.log(99) ** 2 / 2                                 # not a whole number: the reader must round up
    for near, words in ((crossing, "whole number"), (round(crossing, 1), "whole number"),
                        (right - 1, "round up"), (np.log(99) ** 2, "both keys"), (2 * right, "both keys")):
        fb = ch04.check_saturating_d_k(near)
        assert not fb.correct and words in fb.message, (near, fb.message)
        assert str(right) not in fb.message
