"""Issue 16, item 1: inputs that used to give a wrong (or non-finite) answer without a word.

Each test here failed before the fix: it now expects either a clear ValueError/TypeError
or the correct result.
"""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from qkv_viz import (AttentionConfig, MultiHeadParams, attention_scores, causal_mask, entropy,
                     fused_qkv_projections, head_columns, init_multihead_params, init_projection,
                     multi_head_attention, padding_mask, resolve_scale,
                     scaled_dot_product_attention)

rng = np.random.default_rng(0)


def test_padding_mask_cannot_line_up_with_the_head_axis():
    B = H = 2  # B == H: a (B, 1, S) mask broadcasts against (B, H, T, S), along the wrong axes
    q, k, v = rng.normal(size=(B, H, 3, 4)), rng.normal(size=(B, H, 5, 4)), rng.normal(size=(B, H, 5, 4))
    with pytest.raises(ValueError, match=r"mask.*\(2, 1, 5\).*4 dimensions.*\(2, 2, 3, 5\)"):
        scaled_dot_product_attention(q, k, v, mask=padding_mask([5, 2], 5))


def test_padding_mask_for_heads_masks_the_padded_keys_like_torch():
    B = H = 2
    q, k, v = rng.normal(size=(B, H, 3, 4)), rng.normal(size=(B, H, 5, 4)), rng.normal(size=(B, H, 5, 4))
    mask = padding_mask([5, 2], 5, scores_ndim=4)
    assert mask.shape == (2, 1, 1, 5)
    out, weights = scaled_dot_product_attention(q, k, v, mask=mask)
    assert np.all(weights[1, :, :, 2:] == 0)  # sentence 1's padded keys, in every head
    expected = F.scaled_dot_product_attention(*map(torch.tensor, (q, k, v)), attn_mask=torch.tensor(mask))
    np.testing.assert_allclose(out, expected.numpy(), atol=1e-12)


def test_mask_must_broadcast_to_the_scores_not_just_with_them():
    q, k, v = rng.normal(size=(3, 4)), rng.normal(size=(5, 4)), rng.normal(size=(5, 2))
    with pytest.raises(ValueError, match=r"mask.*\(2, 3, 5\).*\(3, 5\)"):
        scaled_dot_product_attention(q, k, v, mask=np.ones((2, 3, 5), dtype=bool))


def test_scores_that_overflow_are_refused():
    q = np.full((2, 3), 1e200)
    with pytest.raises(ValueError, match="overflow"):
        attention_scores(q, q)


def test_causal_mask_with_fewer_keys_than_queries_is_refused():
    with pytest.raises(ValueError, match=r"S=2.*T=4"):
        causal_mask(4, 2)


@pytest.mark.parametrize("bad", ["False", 0, 1, None])
def test_config_bias_must_be_a_bool(bad):
    with pytest.raises(TypeError, match="bias"):
        AttentionConfig(d_model=8, n_heads=2, bias=bad)


def test_config_bias_accepts_numpy_bools():
    assert AttentionConfig(d_model=8, n_heads=2, bias=np.False_).bias is False


@pytest.mark.parametrize("n_heads", [3, 7, 9])
def test_head_columns_needs_a_head_count_that_divides_the_columns(n_heads):
    W = rng.normal(size=(4, 8))
    with pytest.raises(ValueError, match=rf"W.*\(4, 8\).*n_heads={n_heads}"):
        head_columns(W, 0, n_heads)


@pytest.mark.parametrize("d_k", [0, -1])
def test_fused_projections_refuse_non_positive_d_k(d_k):
    x, W = rng.normal(size=(3, 4)), rng.normal(size=(4, 6))
    with pytest.raises(ValueError, match="d_k must be >= 1"):
        fused_qkv_projections(x, W, d_k=d_k, d_v=6 - 2 * d_k)


@pytest.mark.parametrize("std", [np.nan, np.inf, -1.0])
def test_init_projection_refuses_bad_std(std):
    with pytest.raises(ValueError, match="std must be a finite number >= 0"):
        init_projection(3, 4, seed=0, std=std)


@pytest.mark.parametrize("d_k", [0, -4])
def test_resolve_scale_refuses_non_positive_d_k(d_k):
    with pytest.raises(ValueError, match="d_k must be >= 1"):
        resolve_scale(True, d_k)


@pytest.mark.parametrize("row", [[2.0, 3.0], [0.1, 0.2], [0.0, 0.0]])
def test_entropy_refuses_rows_that_are_not_distributions(row):
    with pytest.raises(ValueError, match="sum to 1"):
        entropy(row)


def test_params_know_their_head_count():
    params = init_multihead_params(AttentionConfig(d_model=8, n_heads=2), seed=0)
    assert params.n_heads == 2
    x = rng.normal(size=(3, 8))
    with pytest.raises(ValueError, match=r"n_heads=4.*2 heads"):
        multi_head_attention(x, x, params, n_heads=4)
    out, weights = multi_head_attention(x, x, params)  # the count comes from the params
    assert out.shape == (3, 8) and weights.shape == (2, 3, 3)


def test_params_without_a_head_count_need_n_heads():
    p = init_multihead_params(AttentionConfig(d_model=8, n_heads=2), seed=0)
    bare = MultiHeadParams(p.W_q, p.W_k, p.W_v, p.W_o)
    x = rng.normal(size=(3, 8))
    with pytest.raises(ValueError, match="n_heads"):
        multi_head_attention(x, x, bare)
    np.testing.assert_allclose(multi_head_attention(x, x, bare, 2)[0], multi_head_attention(x, x, p)[0])
