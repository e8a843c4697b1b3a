"""Bad input: every mistake a learner makes gets a message naming the argument and shapes."""
import numpy as np
import pytest

from qkv_viz import (AttentionConfig, init_multihead_params, multi_head_attention, qkv_projections,
                     scaled_dot_product_attention, split_heads)

rng = np.random.default_rng(0)
Q, K, V = rng.normal(size=(4, 8)), rng.normal(size=(6, 8)), rng.normal(size=(6, 5))


def _raises(exc, pattern, *args, **kwargs):
    with pytest.raises(exc, match=pattern) as info:
        scaled_dot_product_attention(*args, **kwargs)
    return str(info.value)


def test_wrong_rank():
    msg = _raises(ValueError, "q must have at least 2 dimensions", Q[0], K, V)
    assert "(8,)" in msg


def test_mismatched_d_k():
    msg = _raises(ValueError, "d_k", Q[:, :7], K, V)
    assert "(4, 7)" in msg and "(6, 8)" in msg


def test_mismatched_key_value_lengths():
    msg = _raises(ValueError, "same number of positions", Q, K, V[:5])
    assert "(6, 8)" in msg and "(5, 5)" in msg


def test_mask_of_wrong_shape():
    msg = _raises(ValueError, "mask", Q, K, V, mask=np.ones((4, 5), dtype=bool))
    assert "(4, 5)" in msg and "(4, 6)" in msg


def test_non_boolean_mask():
    _raises(TypeError, "mask must be boolean", Q, K, V, mask=np.ones((4, 6)))


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nan_or_inf_in_inputs(bad):
    k = K.copy()
    k[2, 3] = bad
    _raises(ValueError, "k contains 1 NaN or inf", Q, k, V)


def test_empty_sequence():
    _raises(ValueError, "q is empty", np.zeros((0, 8)), K, V)


def test_non_numeric_input():
    _raises(TypeError, "v must hold numbers", Q, K, [["a"] * 5] * 6)


def test_bad_scale():
    _raises(ValueError, "scale", Q, K, V, scale=-1.0)


def test_d_model_not_divisible_by_n_heads():
    with pytest.raises(ValueError, match="d_model=768 is not divisible by n_heads=10"):
        AttentionConfig(d_model=768, n_heads=10)


def test_projection_widths_named():
    with pytest.raises(ValueError, match="W_q.*W_k"):
        qkv_projections(Q, rng.normal(size=(8, 3)), rng.normal(size=(8, 4)), rng.normal(size=(8, 2)))
    with pytest.raises(ValueError, match="x's last axis must match W_q"):
        qkv_projections(Q, rng.normal(size=(7, 3)), rng.normal(size=(7, 3)), rng.normal(size=(7, 3)))


def test_multihead_input_width_named():
    w = init_multihead_params(AttentionConfig(d_model=8, n_heads=2), seed=0)
    with pytest.raises(ValueError, match=r"\(4, 7\).*W_q.*\(8, 8\)"):
        multi_head_attention(Q[:, :7], Q[:, :7], w, n_heads=2)
    with pytest.raises(ValueError, match="n_heads=3"):
        split_heads(Q, 3)
