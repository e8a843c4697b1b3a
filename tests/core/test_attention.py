import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from qkv_viz.core.attention import (attention_scores, causal_mask, masked_softmax, padding_mask,
                               scaled_dot_product_attention)


def _qkv(seed=0, lead=(2, 3), T=4, S=6, d_k=8, d_v=5):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(*lead, T, d_k)), rng.normal(size=(*lead, S, d_k)),
            rng.normal(size=(*lead, S, d_v)))


def _torch_sdpa(q, k, v, mask=None, scale=None):
    t = [torch.tensor(a) for a in (q, k, v)]
    m = None if mask is None else torch.tensor(mask)
    return F.scaled_dot_product_attention(*t, attn_mask=m, scale=scale).numpy()


@pytest.mark.parametrize("scale, torch_scale", [(True, None), (0.3, 0.3), (False, 1.0)])
def test_matches_torch_sdpa_with_scales(scale, torch_scale):
    q, k, v = _qkv()
    out, weights = scaled_dot_product_attention(q, k, v, scale=scale)
    np.testing.assert_allclose(out, _torch_sdpa(q, k, v, scale=torch_scale), atol=1e-5)
    assert weights.shape == (2, 3, 4, 6)


def test_matches_torch_sdpa_with_masks():
    q, k, v = _qkv(1, T=6, S=6)
    for mask in (causal_mask(6), padding_mask([6, 3], 6)[:, None]):  # (T,S), (B,1,1,S)
        out, _ = scaled_dot_product_attention(q, k, v, mask=mask)
        np.testing.assert_allclose(out, _torch_sdpa(q, k, v, mask=mask), atol=1e-5)


def test_masked_keys_get_zero_weight():
    q, k, v = _qkv(2, lead=(), T=5, S=5)
    _, weights = scaled_dot_product_attention(q, k, v, mask=causal_mask(5))
    assert np.all(weights[~causal_mask(5)] == 0)
    np.testing.assert_allclose(weights.sum(-1), 1.0)


def test_fully_masked_row_is_zero_like_torch():
    q, k, v = _qkv(3, lead=(), T=3, S=4)
    mask = np.ones((3, 4), dtype=bool)
    mask[1] = False
    out, weights = scaled_dot_product_attention(q, k, v, mask=mask)
    assert np.all(weights[1] == 0) and np.all(out[1] == 0)
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(out, _torch_sdpa(q, k, v, mask=mask), atol=1e-6)


def test_causal_mask_with_more_keys_than_queries():
    m = causal_mask(2, 4)
    np.testing.assert_array_equal(m, [[1, 1, 1, 0], [1, 1, 1, 1]])


def test_scores_are_scaled_dot_products():
    q, k, _ = _qkv(4, lead=(), d_k=16)
    np.testing.assert_allclose(attention_scores(q, k), q @ k.T / 4.0)
    np.testing.assert_allclose(attention_scores(q, k, scale=False), q @ k.T)


vec = st.integers(0, 2**31 - 1)


@given(vec, st.floats(-100, 100))
@settings(max_examples=40, deadline=None)
def test_adding_a_constant_to_a_score_row_changes_nothing(seed, c):
    scores = np.random.default_rng(seed).normal(size=(3, 5))
    shifted = scores.copy()
    shifted[1] += c
    np.testing.assert_allclose(masked_softmax(shifted), masked_softmax(scores), atol=1e-10)


@given(vec)
@settings(max_examples=40, deadline=None)
def test_weights_rows_sum_to_one(seed):
    q, k, v = _qkv(seed, lead=(2,))
    _, weights = scaled_dot_product_attention(q, k, v)
    np.testing.assert_allclose(weights.sum(-1), 1.0, atol=1e-12)


@given(vec)
@settings(max_examples=40, deadline=None)
def test_permuting_keys_and_values_together_changes_nothing(seed):
    q, k, v = _qkv(seed, lead=())
    perm = np.random.default_rng(seed + 1).permutation(k.shape[0])
    out, _ = scaled_dot_product_attention(q, k, v)
    out_p, _ = scaled_dot_product_attention(q, k[perm], v[perm])
    np.testing.assert_allclose(out_p, out, atol=1e-10)


@given(vec)
@settings(max_examples=40, deadline=None)
def test_permuting_queries_permutes_outputs(seed):
    q, k, v = _qkv(seed, lead=())
    perm = np.random.default_rng(seed + 2).permutation(q.shape[0])
    out, weights = scaled_dot_product_attention(q, k, v)
    out_p, weights_p = scaled_dot_product_attention(q[perm], k, v)
    np.testing.assert_allclose(out_p, out[perm], atol=1e-10)
    np.testing.assert_allclose(weights_p, weights[perm], atol=1e-12)


def test_padding_mask_shape_and_bad_lengths():
    m = padding_mask([2, 0], 3)
    assert m.shape == (2, 1, 3)
    np.testing.assert_array_equal(m[:, 0], [[1, 1, 0], [0, 0, 0]])
    with pytest.raises(ValueError, match="lengths"):
        padding_mask([4], 3)
