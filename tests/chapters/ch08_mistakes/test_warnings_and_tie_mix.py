"""Chapter 8 claims of the fourth fix round: numpy warns on the overflows of section 4 while torch
returns the same wrong numbers without a warning; torch's usual fills leave a fully hidden row
uniform while F.scaled_dot_product_attention returns zeros; section 2's mixed tie
k = v = a role + content sharpens the weights as a grows but leaks the role into the output."""
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from qkv_viz import softmax


def _caught(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fn()
    return out, [str(w.message) for w in caught]


def test_numpy_warns_but_torch_is_silent_on_the_float32_window():
    row = np.array([88.5, 87.5, 86.5], dtype=np.float32)
    naive_np, msgs_np = _caught(lambda: np.exp(row) / np.exp(row).sum())
    assert np.all(naive_np == 0) and not np.isnan(naive_np).any()
    assert any("overflow" in m for m in msgs_np)
    t = torch.tensor(row)
    naive_t, msgs_t = _caught(lambda: torch.exp(t) / torch.exp(t).sum())
    assert torch.all(naive_t == 0) and msgs_t == []


def test_numpy_warns_when_float16_stores_minus_1e9_as_minus_inf_torch_cast_is_silent():
    value, msgs = _caught(lambda: np.float16(-1e9))
    assert np.isneginf(value) and any("overflow encountered in cast" in m for m in msgs)
    t, msgs_t = _caught(lambda: torch.tensor([-1e9]).half())
    assert torch.isneginf(t).all() and msgs_t == []


def test_torch_fills_leave_a_fully_hidden_row_uniform_sdpa_returns_zeros():
    every = torch.ones(3, dtype=torch.bool)
    half = torch.zeros(3, dtype=torch.float16)
    for filled in (half.masked_fill(every, torch.finfo(half.dtype).min), half.float().masked_fill(every, -1e9)):
        np.testing.assert_allclose(filled.float().softmax(-1).numpy(), 1 / 3, atol=1e-3)
    v = torch.randn(1, 3, 4, generator=torch.Generator().manual_seed(0))
    q, k = torch.randn(1, 1, 4), torch.randn(1, 3, 4)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=~every)
    assert torch.all(out == 0)
    with pytest.raises(AssertionError):                        # a visible key gives a non-zero row
        assert torch.all(F.scaled_dot_product_attention(q, k, v, attn_mask=torch.tensor([True, False, False])) == 0)


def test_the_mixed_tie_sharpens_the_weights_but_leaks_the_role():
    content = np.random.default_rng(0).normal(size=(500, 3, 3))
    x = np.concatenate([np.broadcast_to(np.eye(3), (500, 3, 3)), content], axis=-1)
    q = np.eye(3, 6) @ np.vstack([4 * np.eye(3), np.zeros((3, 3))])
    matches, errors = [], []
    for a in (0, 0.5, 1, 2, 4, 8):
        kv = x @ np.vstack([a * np.eye(3), np.eye(3)])
        w = softmax(q @ kv.swapaxes(-1, -2) / np.sqrt(3))
        matches.append(np.diagonal(w, axis1=-2, axis2=-1).mean())
        errors.append(np.linalg.norm(w @ kv - content, axis=-1).mean())
    assert np.all(np.diff(matches) > 0) and matches[-1] > 0.99
    mean_error = np.linalg.norm(content.mean(1, keepdims=True) - content, axis=-1).mean()
    assert min(errors) > mean_error                            # every mix does worse than no lookup
    assert abs(errors[-1] - 8) < 0.1                           # sharp weights: the error is the role
