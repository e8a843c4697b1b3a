"""Chapter 11 exercises: each worked solution passes its checker; each placeholder is
"no answer yet"; typical mistakes get a message that names them, never the answer."""
import numpy as np
import pytest

from qkv_viz.chapters.ch11_generation import exercises as ch11
from qkv_viz.chapters.ch11_generation import solutions as sol
from qkv_viz.core.kv_cache import kv_cache_bytes


@pytest.mark.parametrize("seed", [None, 0, 1, 2, 3])
def test_code_solutions_pass(seed):
    for check, fn in ((ch11.check_window_step, sol.window_step), (ch11.check_gqa_step, sol.gqa_step)):
        fb = check(fn, seed=seed)
        assert fb.correct, fb.message


def test_value_solutions_pass():
    assert ch11.check_llama2_70b_cache(sol.llama2_70b_cache()).correct
    assert ch11.check_bidirectional_cache(sol.bidirectional_cache()).correct
    assert ch11.check_bidirectional_cache(" (B) ").correct


@pytest.mark.parametrize("check", [ch11.check_window_step, ch11.check_gqa_step, ch11.check_llama2_70b_cache,
                                   ch11.check_bidirectional_cache])
def test_placeholder_is_pending(check):
    fb = check(None)
    assert not fb.correct and fb.pending


def test_stub_functions_are_pending():
    assert ch11.check_window_step(lambda *a: None).pending
    assert ch11.check_gqa_step(lambda *a: None).pending


def test_window_cases_fill_the_window():
    """Some cases start with a full window, so a step that never drops a row cannot pass."""
    cases = ch11.window_step_cases(seed=0)
    assert len(cases[0][3]) == 0 and any(len(c[3]) == c[5] for c in cases)


def _softmax(s):
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _attend(q, K, V):
    return _softmax(K @ q / np.sqrt(len(q))) @ V


def _win_no_append(q, k, v, K, V, w):
    return _attend(q, np.vstack([K, k])[-w:], np.vstack([V, v])[-w:]), K, V


def _win_no_drop(q, k, v, K, V, w):
    K2, V2 = np.vstack([K, k]), np.vstack([V, v])
    return _attend(q, K2, V2), K2, V2


def _win_drops_new(q, k, v, K, V, w):
    K2, V2 = np.vstack([K, k])[:w], np.vstack([V, v])[:w]
    return _attend(q, K2, V2), K2, V2


def _win_without_self(q, k, v, K, V, w):
    K2, V2 = np.vstack([K, k])[-w:], np.vstack([V, v])[-w:]
    return (_attend(q, K, V) if len(K) else v), K2, V2


def _win_prepended(q, k, v, K, V, w):
    K2, V2 = np.vstack([k, K])[:w], np.vstack([v, V])[:w]
    return _attend(q, K2, V2), K2, V2


@pytest.mark.parametrize("fn, words", [(_win_no_append, "still holds"), (_win_no_drop, "drop the oldest row"),
                                       (_win_drops_new, "LAST window rows"), (_win_without_self, "ignores the new token"),
                                       (_win_prepended, "goes last"), (lambda *a: 1 / 0, "ZeroDivisionError")])
def test_window_step_mistakes_are_named(fn, words):
    fb = ch11.check_window_step(fn, seed=4)
    assert not fb.correct and words in fb.message, fb.message


def _gqa_step_with(k_heads):
    def fn(q, k, v, K, V):
        K2, V2 = np.concatenate([K, k[:, None]], 1), np.concatenate([V, v[:, None]], 1)
        r = q.shape[0] // k.shape[0]
        Kr, Vr = k_heads(K2, r), k_heads(V2, r)
        w = _softmax(np.einsum("hd,htd->ht", q, Kr) / np.sqrt(q.shape[1]))
        return np.einsum("ht,htd->hd", w, Vr), K2, V2
    return fn


def _gqa_step_repeated_cache(q, k, v, K, V):
    out, K2, V2 = sol.gqa_step(q, k, v, K, V)
    r = q.shape[0] // k.shape[0]
    return out, np.repeat(K2, r, 0), np.repeat(V2, r, 0)


@pytest.mark.parametrize("fn, words", [
    (_gqa_step_with(lambda a, r: np.tile(a, (r, 1, 1))), "np.repeat along the head axis, not np.tile"),
    (lambda q, k, v, K, V: (sol.gqa_step(q, k, v, K, V)[0], K, V), "still holds"),
    (_gqa_step_repeated_cache, "keeps only the"),
    (lambda q, k, v, K, V: sol.gqa_step(q[: k.shape[0]], k, v, K, V), "one per query head"),
])
def test_gqa_step_mistakes_are_named(fn, words):
    fb = ch11.check_gqa_step(fn, seed=5)
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
    """(b): in a 2-layer bidirectional stack, appending a token leaves layer 0's old K and V
    unchanged and changes layer 1's."""
    from qkv_viz.core.attention import scaled_dot_product_attention
    rng = np.random.default_rng(0)
    x = rng.normal(size=(5, 8))
    W = [rng.normal(size=(8, 8)) / 3 for _ in range(6)]

    def layers(x):
        k1, v1 = x @ W[1], x @ W[2]
        h = scaled_dot_product_attention(x @ W[0], k1, v1)[0]  # bidirectional: no mask
        return k1, h @ W[4]                                  # layer 0's K, layer 1's K
    k1_old, k2_old = layers(x[:4])
    k1_new, k2_new = layers(x)
    np.testing.assert_allclose(k1_new[:4], k1_old)
    assert not np.allclose(k2_new[:4], k2_old)


def test_train_one_kv_solution_passes_and_its_placeholders_are_pending():
    fb = ch11.check_train_one_kv(sol.train_one_kv)
    assert fb.correct, fb.message
    assert "0.116" in fb.message and "(6, 4)" in fb.message
    # the worked solution is the training the page ran through trained_writer(n_kv_heads=1): the same weights
    from qkv_viz.chapters.ch11_generation.generation import trained_writer
    E, p = trained_writer(n_kv_heads=1)
    _, (E_sol, *W_sol) = sol.train_one_kv()
    np.testing.assert_allclose(E_sol, E, rtol=0, atol=1e-12)
    for name, W in zip(("W_q", "W_k", "W_v", "W_o"), W_sol):
        np.testing.assert_allclose(W, getattr(p, name), rtol=0, atol=1e-12, err_msg=name)
    assert ch11.check_train_one_kv(None).pending
    assert ch11.check_train_one_kv(lambda: None).pending

    def stub():
        raise NotImplementedError
    assert ch11.check_train_one_kv(stub).pending


def test_train_one_kv_names_the_usual_slips():
    """The page's two-head train (W_k still two heads wide), too few steps, a stale loss."""
    from qkv_viz.chapters.ch11_generation.generation import trained_writer
    E, p = trained_writer()                          # ordinary multi-head: W_k (6, 8)
    fb = ch11.check_train_one_kv(lambda: (0.116, (E, p.W_q, p.W_k, p.W_v, p.W_o)))
    assert not fb.correct and "W_k is still (6, 8)" in fb.message
    fb = ch11.check_train_one_kv(lambda: sol.train_one_kv(steps=5))
    assert not fb.correct and "above the floor" in fb.message
    loss, weights = sol.train_one_kv()
    fb = ch11.check_train_one_kv(lambda: (loss + 1.0, weights))
    assert not fb.correct and "not the returned weights' loss" in fb.message
    fb = ch11.check_train_one_kv(lambda: weights)
    assert not fb.correct and "Return what train() returns" in fb.message
