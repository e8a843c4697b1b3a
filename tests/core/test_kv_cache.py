"""The K/V cache and shared K/V heads: generating one token per step equals the causal
all-at-once layer; grouped-query attention equals torch's scaled_dot_product_attention
(is_causal=True, enable_gqa=True); cache sizes and step costs follow their formulas."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from qkv_viz.core.attention import causal_mask, scaled_dot_product_attention
from qkv_viz.core.kv_cache import (GQAParams, KVCache, causal_self_attention, decode_step, generate,
                                   group_kv_heads, grouped_query_attention, init_gqa_params,
                                   kv_cache_bytes, repeat_kv, step_flops)
from qkv_viz.core.sizes import attention_flops
from qkv_viz.core.config import AttentionConfig


@pytest.mark.parametrize("T, d_model, H, H_kv", [(1, 8, 2, 2), (6, 16, 4, 4), (9, 16, 4, 2),
                                                 (7, 24, 6, 1), (12, 32, 8, 2)])
def test_generating_equals_training_to_1e12(T, d_model, H, H_kv):
    rng = np.random.default_rng(T + H)
    x = rng.normal(size=(T, d_model))
    p = init_gqa_params(d_model, H, H_kv, seed=rng)
    full, weights = causal_self_attention(x, p)
    steps, cache = generate(x, p)
    assert np.abs(full - steps).max() < 1e-12
    assert len(cache) == T and cache.k.shape == (H_kv, T, d_model // H)
    assert np.all(weights[:, ~causal_mask(T)] == 0)
    # each step's weights are row t of the causal matrix
    cache = KVCache(H_kv, d_model // H)
    for t in range(T):
        out, w = decode_step(x[t], cache, p)
        np.testing.assert_allclose(w, weights[:, t, :t + 1], rtol=0, atol=1e-14)


def test_the_cache_never_changes_a_past_row():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(8, 16))
    p = init_gqa_params(16, 4, 2, seed=4)
    cache = KVCache(2, 4)
    seen = []
    for t in range(8):
        decode_step(x[t], cache, p)
        seen.append(cache.k.copy())
        for s, k in enumerate(seen):
            np.testing.assert_array_equal(cache.k[:, :s + 1], k)  # appended, never rewritten
    assert cache.nbytes == 2 * 8 * 2 * 4 * 8  # K and V, 8 tokens, 2 heads, d_k 4, float64


def test_multi_head_with_n_kv_equal_n_heads_is_ordinary_multi_head():
    from qkv_viz.core.multihead import MultiHeadParams, multi_head_attention
    rng = np.random.default_rng(5)
    x = rng.normal(size=(7, 16))
    p = init_gqa_params(16, 4, seed=6)
    mh = MultiHeadParams(W_q=p.W_q, W_k=p.W_k, W_v=p.W_v, W_o=p.W_o, n_heads=4)
    ours, w = causal_self_attention(x, p)
    ref, w_ref = multi_head_attention(x, x, mh, mask=causal_mask(7))
    np.testing.assert_allclose(ours, ref, rtol=0, atol=1e-12)
    np.testing.assert_allclose(w, w_ref, rtol=0, atol=1e-12)


@pytest.mark.parametrize("B, H, H_kv, T, S, d_k, d_v", [(1, 4, 4, 5, 5, 8, 8), (2, 8, 2, 6, 6, 4, 3),
                                                        (3, 6, 1, 4, 4, 5, 5), (2, 8, 4, 1, 9, 4, 4),
                                                        (1, 4, 2, 3, 7, 2, 6)])
def test_grouped_query_attention_equals_torch_enable_gqa(B, H, H_kv, T, S, d_k, d_v):
    rng = np.random.default_rng(B * 100 + H * 10 + H_kv)
    q, k, v = rng.normal(size=(B, H, T, d_k)), rng.normal(size=(B, H_kv, S, d_k)), rng.normal(size=(B, H_kv, S, d_v))
    mask = causal_mask(T, S)  # the T queries are the last T of the S positions (decoding with a cache)
    ours, w = grouped_query_attention(q, k, v, mask=mask)
    qt, kt, vt = (torch.tensor(a) for a in (q, k, v))
    if T == S:
        ref = F.scaled_dot_product_attention(qt, kt, vt, is_causal=True, enable_gqa=True)
        np.testing.assert_allclose(ours, ref.numpy(), rtol=0, atol=1e-12)
    ref = F.scaled_dot_product_attention(qt, kt, vt, attn_mask=torch.tensor(mask), enable_gqa=True)
    np.testing.assert_allclose(ours, ref.numpy(), rtol=0, atol=1e-12)
    assert w.shape == (B, H, T, S)


def test_query_head_h_reads_kv_head_h_over_group_size():
    rng = np.random.default_rng(8)
    q, k, v = rng.normal(size=(8, 3, 4)), rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 3, 4))
    out, _ = grouped_query_attention(q, k, v)
    for h in range(8):
        ref, _ = scaled_dot_product_attention(q[h], k[h // 4], v[h // 4])
        np.testing.assert_allclose(out[h], ref, rtol=0, atol=1e-14)
    np.testing.assert_array_equal(repeat_kv(k, 4)[5], k[1])
    assert not np.array_equal(np.tile(k, (4, 1, 1))[1], k[0])  # tiling interleaves: another grouping


def test_torch_refuses_or_differs_when_the_grouping_is_tiled():
    rng = np.random.default_rng(9)
    q, k, v = rng.normal(size=(4, 3, 2)), rng.normal(size=(2, 3, 2)), rng.normal(size=(2, 3, 2))
    ref = F.scaled_dot_product_attention(*(torch.tensor(a) for a in (q, k, v)), enable_gqa=True).numpy()
    tiled, _ = scaled_dot_product_attention(q, np.tile(k, (2, 1, 1)), np.tile(v, (2, 1, 1)))
    assert not np.allclose(tiled, ref)
    np.testing.assert_allclose(grouped_query_attention(q, k, v)[0], ref, atol=1e-12)


def test_group_kv_heads_averages_each_group():
    W = np.arange(2 * 8 * 3, dtype=float).reshape(2, 24)  # d_model 2, 8 heads of width 3
    G = group_kv_heads(W, 8, 2)
    assert G.shape == (2, 6)
    np.testing.assert_allclose(G[:, :3], W.reshape(2, 8, 3)[:, :4].mean(axis=1))
    np.testing.assert_array_equal(group_kv_heads(W, 8, 8), W)


def test_cache_bytes_formula_and_published_numbers():
    assert kv_cache_bytes(32, 32, 128) == 524_288              # Llama-2-7B, 16-bit: 0.5 MiB per token
    assert kv_cache_bytes(32, 8, 128, n_tokens=4096) == 2 ** 29  # Llama-3-8B: 512 MiB at 4,096 tokens
    assert kv_cache_bytes(12, 12, 64, bytes_per_number=4) == 73_728
    assert kv_cache_bytes(2, 3, 5, n_tokens=7, bytes_per_number=1, batch=11) == 2 * 2 * 3 * 5 * 7 * 11
    with pytest.raises(ValueError, match="n_kv_heads"):
        kv_cache_bytes(32, 0, 128)


def test_step_flops_count_and_grow():
    c = AttentionConfig(d_model=64, n_heads=4)
    assert step_flops(64, 4, 0, cached=False) == step_flops(64, 4, 0, cached=True) == attention_flops(c, 1)["total"]
    for t in (1, 10, 100):
        cached, full = step_flops(64, 4, t), step_flops(64, 4, t, cached=False)
        assert cached == 2 * 64 * 64 * 4 + 4 * 64 * (t + 1)
        assert full == attention_flops(c, t + 1)["total"] > cached
    assert step_flops(64, 4, 200) - step_flops(64, 4, 100) == 100 * 4 * 64  # linear in t
    with pytest.raises(ValueError, match="token index"):
        step_flops(64, 4, -1)


def test_bad_input_is_refused_with_shapes():
    with pytest.raises(ValueError, match="does not divide"):
        init_gqa_params(16, 4, 3)
    with pytest.raises(ValueError, match="equal groups"):
        grouped_query_attention(np.ones((4, 2, 2)), np.ones((3, 2, 2)), np.ones((3, 2, 2)))
    with pytest.raises(ValueError, match="K/V heads"):
        grouped_query_attention(np.ones((4, 2, 2)), np.ones((2, 2, 2)), np.ones((1, 2, 2)))
    p = init_gqa_params(16, 4, 2, seed=0)
    with pytest.raises(ValueError, match="W_k has shape"):
        GQAParams(W_q=p.W_q, W_k=p.W_q, W_v=p.W_v, W_o=p.W_o, n_heads=4, n_kv_heads=2)
    cache = KVCache(2, 4)
    with pytest.raises(ValueError, match="one token's k_new"):
        cache.append(np.ones((4, 4)), np.ones((4, 4)))
    with pytest.raises(TypeError, match="GQAParams"):
        causal_self_attention(np.ones((3, 16)), "params")
    with pytest.raises(ValueError, match="NaN"):
        generate(np.full((3, 16), np.nan), p)
