"""Chapter 4 exercises: every worked solution passes its checker, every placeholder is "no answer yet",
and the typical mistakes get the precise message."""
import numpy as np
import pytest

from qkv_viz import softmax, softmax_jacobian
from qkv_viz.chapters.ch04_scaling import exercises as ch04
from qkv_viz.chapters.ch04_scaling import solutions as sol


SOLVED = {ch04.check_key_grad: sol.key_grad, ch04.check_jacobian_norms: sol.jacobian_norms,
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


@pytest.mark.parametrize("wrong, says", [
    (lambda w: sol.jacobian_norms(w).sum(), "one number"),
    (lambda w: w * 0.1, "one number per weight"),
    (lambda w: sol.jacobian_norms(w) ** 2, "square root"),
    (lambda w: np.sqrt(np.sum(w ** 2, axis=-1) - np.sum(w ** 3, axis=-1)), "three sums"),
])
def test_jacobian_norm_mistakes_are_named(wrong, says):
    fb = ch04.check_jacobian_norms(wrong, seed=2)
    assert not fb.correct and not fb.pending
    assert says in fb.message, fb.message


def test_code_checkers_use_fresh_cases_each_call():
    a, b = ch04.key_grad_cases(), ch04.key_grad_cases()
    assert not np.array_equal(a[0][0], b[0][0]) or a[0][0].shape != b[0][0].shape
    seeded = ch04.jacobian_norm_cases(seed=3), ch04.jacobian_norm_cases(seed=3)
    assert all(np.array_equal(x[0], y[0]) for x, y in zip(*seeded))
    for (w,) in seeded[0]:
        np.testing.assert_allclose(w.sum(axis=-1), 1.0)
        assert w.shape[0] != w.shape[1]
    assert any(not case[3] for case in a) and any(case[3] for case in a)
    assert all(q.shape[0] != k.shape[0] for q, k, _, _ in a)


def test_jacobian_norms_reference_is_the_frobenius_norm_of_each_row():
    """The checker's truth: one full (S, S) Jacobian per row, its Frobenius norm; the closed form agrees."""
    w = softmax(np.random.default_rng(0).normal(size=(4, 6)) * 3)
    want = [np.sqrt((softmax_jacobian(row) ** 2).sum()) for row in w]
    np.testing.assert_allclose(ch04._jacobian_norms_reference(w), want)
    np.testing.assert_allclose(sol.jacobian_norms(w), want)
    np.testing.assert_allclose(sol.jacobian_norms(np.eye(3)), 0.0, atol=1e-12)   # one-hot rows: J = 0


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


def test_the_sum_form_passes_on_near_one_hot_rows_for_many_seeds():
    """The worked solution's sum form loses digits on near one-hot rows; the checker must not reject it."""
    for seed in range(200):
        fb = ch04.check_jacobian_norms(sol.jacobian_norms, seed=seed)
        assert fb.correct, (seed, fb.message)
    # the checker allows 5e-4 (float32 answers lose that much on near one-hot rows): a 1 % error is caught
    wrong = lambda w: sol.jacobian_norms(w) * 1.01                  # noqa: E731
    assert not ch04.check_jacobian_norms(wrong, seed=0).correct


def test_a_nan_from_rounding_is_named():
    unclipped = lambda w: np.sqrt(np.sum(w ** 2, -1) - 2 * np.sum(w ** 3, -1) + np.sum(w ** 2, -1) ** 2)  # noqa: E731
    for seed in range(200):
        with np.errstate(invalid="ignore"):
            if np.isnan(unclipped(ch04.jacobian_norm_cases(seed=seed)[4][0])).any():
                fb = ch04.check_jacobian_norms(unclipped, seed=seed)
                assert not fb.correct and "np.maximum" in fb.message, fb.message
                return
    pytest.skip("no seed gave a NaN")
