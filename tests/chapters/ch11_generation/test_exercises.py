"""Chapter 11 exercises: each worked solution passes its checker; each placeholder is
"no answer yet"; typical mistakes get a message that names them, never the answer."""
import numpy as np
import pytest

from qkv_viz.chapters.ch11_generation import exercises as ch11
from qkv_viz.chapters.ch11_generation import solutions as sol
from qkv_viz.core.kv_cache import kv_cache_bytes


@pytest.mark.parametrize("seed", [None, 0, 1, 2, 3])
def test_code_solutions_pass(seed):
    for check, fn in ((ch11.check_cached_step, sol.cached_step), (ch11.check_gqa, sol.gqa)):
        fb = check(fn, seed=seed)
        assert fb.correct, fb.message


def test_value_solutions_pass():
    assert ch11.check_llama2_70b_cache(sol.llama2_70b_cache()).correct
    assert ch11.check_bidirectional_cache(sol.bidirectional_cache()).correct
    assert ch11.check_bidirectional_cache(" (B) ").correct


@pytest.mark.parametrize("check", [ch11.check_cached_step, ch11.check_gqa, ch11.check_llama2_70b_cache,
                                   ch11.check_bidirectional_cache])
def test_placeholder_is_pending(check):
    fb = check(None)
    assert not fb.correct and fb.pending


def test_stub_functions_are_pending():
    assert ch11.check_cached_step(lambda *a: None).pending
    assert ch11.check_gqa(lambda *a: None).pending


def _softmax(s):
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _step_no_append(q, k, v, K, V):
    out, _, _ = sol.cached_step(q, k, v, K, V)
    return out, K, V


def _step_without_self(q, k, v, K, V):
    K2, V2 = np.vstack([K, k]), np.vstack([V, v])
    if len(K) == 0:
        return v, K2, V2
    return _softmax(K @ q / np.sqrt(len(q))) @ V, K2, V2


def _step_unscaled(q, k, v, K, V):
    K2, V2 = np.vstack([K, k]), np.vstack([V, v])
    return _softmax(K2 @ q) @ V2, K2, V2


def _step_prepended(q, k, v, K, V):
    K2, V2 = np.vstack([k, K]), np.vstack([v, V])
    return _softmax(K2 @ q / np.sqrt(len(q))) @ V2, K2, V2


@pytest.mark.parametrize("fn, words", [(_step_no_append, "still holds"), (_step_without_self, "ignores the new token"),
                                       (_step_unscaled, "not scaled"), (_step_prepended, "goes last"),
                                       (lambda *a: 1 / 0, "ZeroDivisionError")])
def test_cached_step_mistakes_are_named(fn, words):
    fb = ch11.check_cached_step(fn, seed=4)
    assert not fb.correct and words in fb.message, fb.message


def _gqa_with(k_heads, causal=True):
    def fn(q, k, v):
        H, T, d_k = q.shape
        kk, vv = k_heads(k, H // k.shape[0]), k_heads(v, H // k.shape[0])
        s = q @ kk.transpose(0, 2, 1) / np.sqrt(d_k)
        if causal:
            s = np.where(np.tril(np.ones((T, T), dtype=bool)), s, -np.inf)
        return _softmax(s) @ vv
    return fn


@pytest.mark.parametrize("fn, words", [
    (_gqa_with(lambda a, r: np.tile(a, (r, 1, 1))), "np.repeat along the head axis, not np.tile"),
    (_gqa_with(lambda a, r: np.repeat(a, r, 0), causal=False), "no causal mask"),
    (lambda q, k, v: sol.gqa(q[: k.shape[0]], k, v), "one per query head"),
])
def test_gqa_mistakes_are_named(fn, words):
    fb = ch11.check_gqa(fn, seed=5)
    assert not fb.correct and words in fb.message, fb.message


def test_cache_size_mistakes_are_named_and_the_answer_is_not_told():
    right = sol.llama2_70b_cache()
    assert right == kv_cache_bytes(80, 8, 8192 // 64, 4096, 2)
    for wrong, words in ((right * 8, "64 query heads"), (right // 2, "starts with 2"), (right * 2, "2 bytes"),
                         (right // 80, "80 layers"), (right / 2 ** 30, "in bytes"), (123, "Hint"),
                         ("big", "number of bytes")):
        fb = ch11.check_llama2_70b_cache(wrong)
        assert not fb.correct and words in fb.message, (wrong, fb.message)
        assert str(right) not in fb.message


def test_conceptual_wrong_choices_get_a_hint():
    for a in ("a", "c"):
        fb = ch11.check_bidirectional_cache(a)
        assert not fb.correct and "layer" in fb.message.lower()
    assert "one of" in ch11.check_bidirectional_cache("d").message


def test_the_conceptual_answer_is_true():
    """(b): in a 2-layer bidirectional stack, appending a token leaves layer 1's old K and V
    unchanged and changes layer 2's."""
    from qkv_viz.core.attention import scaled_dot_product_attention
    rng = np.random.default_rng(0)
    x = rng.normal(size=(5, 8))
    W = [rng.normal(size=(8, 8)) / 3 for _ in range(6)]

    def layers(x):
        k1, v1 = x @ W[1], x @ W[2]
        h = scaled_dot_product_attention(x @ W[0], k1, v1)[0]  # bidirectional: no mask
        return k1, h @ W[4]                                  # layer 1's K, layer 2's K
    k1_old, k2_old = layers(x[:4])
    k1_new, k2_new = layers(x)
    np.testing.assert_allclose(k1_new[:4], k1_old)
    assert not np.allclose(k2_new[:4], k2_old)
