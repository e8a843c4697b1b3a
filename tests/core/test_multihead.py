import numpy as np
import pytest
import torch

from qkv_viz import (AttentionConfig, causal_mask, head_columns, init_multihead_params, merge_heads,
                     multi_head_attention, scaled_dot_product_attention, split_heads)
from qkv_viz.bridges.torch_mha import params_from_torch_mha


def _torch_mha(d_model, n_heads, seed, bias=True, kdim=None):
    torch.manual_seed(seed)
    mha = torch.nn.MultiheadAttention(d_model, n_heads, bias=bias, batch_first=True,
                                      kdim=kdim, vdim=kdim, dtype=torch.float64)
    if bias:  # torch initialises biases to zero; make them matter
        with torch.no_grad():
            mha.in_proj_bias.normal_()
            mha.out_proj.bias.normal_()
    return mha.eval()


@pytest.mark.parametrize("bias", [True, False])
def test_self_attention_matches_torch_mha(bias):
    mha = _torch_mha(32, 4, seed=0, bias=bias)
    x = np.random.default_rng(0).normal(size=(2, 7, 32))
    out, weights = multi_head_attention(x, x, params_from_torch_mha(mha), n_heads=4)
    t = torch.tensor(x)
    t_out, t_w = mha(t, t, t, average_attn_weights=False)
    np.testing.assert_allclose(out, t_out.detach().numpy(), atol=1e-5)
    np.testing.assert_allclose(weights, t_w.detach().numpy(), atol=1e-5)


def test_cross_attention_matches_torch_mha_with_other_lengths():
    mha = _torch_mha(24, 3, seed=1)
    rng = np.random.default_rng(1)
    x_dec, x_enc = rng.normal(size=(1, 4, 24)), rng.normal(size=(1, 9, 24))
    out, weights = multi_head_attention(x_dec, x_enc, params_from_torch_mha(mha), n_heads=3)
    t_out, t_w = mha(torch.tensor(x_dec), torch.tensor(x_enc), torch.tensor(x_enc),
                     average_attn_weights=False)
    assert weights.shape == (1, 3, 4, 9)
    np.testing.assert_allclose(out, t_out.detach().numpy(), atol=1e-5)
    np.testing.assert_allclose(weights, t_w.detach().numpy(), atol=1e-5)


def test_cross_attention_with_other_key_width_matches_torch():
    mha = _torch_mha(16, 2, seed=2, kdim=10)
    rng = np.random.default_rng(2)
    x_dec, x_enc = rng.normal(size=(1, 3, 16)), rng.normal(size=(1, 5, 10))
    out, _ = multi_head_attention(x_dec, x_enc, params_from_torch_mha(mha), n_heads=2)
    t_out, _ = mha(torch.tensor(x_dec), torch.tensor(x_enc), torch.tensor(x_enc))
    np.testing.assert_allclose(out, t_out.detach().numpy(), atol=1e-5)


def test_causal_mask_matches_torch_mha():
    mha = _torch_mha(16, 4, seed=3)
    x = np.random.default_rng(3).normal(size=(1, 5, 16))
    out, _ = multi_head_attention(x, x, params_from_torch_mha(mha), 4, mask=causal_mask(5))
    t = torch.tensor(x)
    t_out, _ = mha(t, t, t, attn_mask=torch.tensor(~causal_mask(5)))  # torch MHA: True = blocked
    np.testing.assert_allclose(out, t_out.detach().numpy(), atol=1e-5)


def test_split_then_merge_is_identity():
    x = np.arange(2 * 5 * 12, dtype=float).reshape(2, 5, 12)
    heads = split_heads(x, 3)
    assert heads.shape == (2, 3, 5, 4)
    np.testing.assert_array_equal(heads[:, 1], x[..., 4:8])
    np.testing.assert_array_equal(merge_heads(heads), x)


def test_heads_are_column_slices_of_one_big_projection():
    cfg = AttentionConfig(d_model=12, n_heads=3, bias=False)
    w = init_multihead_params(cfg, seed=5)
    x = np.random.default_rng(5).normal(size=(6, 12))
    _, weights = multi_head_attention(x, x, w, n_heads=3)
    for h in range(3):
        q = x @ head_columns(w.W_q, h, 3)  # (6, 12) @ (12, 4) -> (6, 4)
        k = x @ head_columns(w.W_k, h, 3)
        v = x @ head_columns(w.W_v, h, 3)
        _, w_h = scaled_dot_product_attention(q, k, v)
        np.testing.assert_allclose(weights[h], w_h, atol=1e-12)


def test_init_is_reproducible_from_seed_or_generator():
    cfg = AttentionConfig(d_model=8, n_heads=2)
    a, b = init_multihead_params(cfg, seed=7), init_multihead_params(cfg, seed=np.random.default_rng(7))
    np.testing.assert_array_equal(a.W_q, b.W_q)
    assert not np.allclose(a.W_q, init_multihead_params(cfg, seed=8).W_q)
