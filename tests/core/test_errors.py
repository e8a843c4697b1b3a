"""Bad input: every mistake a learner makes gets a message naming the argument and shapes."""
import numpy as np
import pytest

from qkv_viz import (AttentionConfig, attention_flops, attention_scores, fused_qkv_projections,
                     head_columns, init_multihead_params, masked_softmax, model_param_count,
                     multi_head_attention, param_count, projection_flops, qkv_projections,
                     resolve_scale, scaled_dot_product_attention, split_heads, summarize)

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


# Issue 16, item 2: messages name the argument the caller passed, the shapes, and the fix.

def _message(exc, fn, *args, **kwargs):
    with pytest.raises(exc) as info:
        fn(*args, **kwargs)
    return str(info.value)


def test_multihead_names_x_q_and_x_kv():
    w = init_multihead_params(AttentionConfig(d_model=8, n_heads=2), seed=0)
    assert "x_q" in _message(ValueError, multi_head_attention, Q[:, :7], Q, w)
    assert "x_kv" in _message(ValueError, multi_head_attention, Q, Q[:, :7], w)
    assert "x_kv" in _message(ValueError, multi_head_attention, Q, [[np.nan] * 8], w)


@pytest.mark.parametrize("bad", [None, {"W_q": np.eye(2)}, "params"])
def test_params_of_the_wrong_type_is_a_type_error(bad):
    msg = _message(TypeError, multi_head_attention, Q, Q, bad, 2)
    assert "params" in msg and "MultiHeadParams" in msg


@pytest.mark.parametrize("fn", [param_count, model_param_count, lambda c: projection_flops(c, 4),
                                lambda c: attention_flops(c, 4), lambda c: init_multihead_params(c)])
def test_config_of_the_wrong_type_is_a_type_error(fn):
    msg = _message(TypeError, fn, {"d_model": 8, "n_heads": 2})
    assert "config" in msg and "AttentionConfig(" in msg


def test_weights_none_is_a_type_error():
    assert "weights" in _message(TypeError, summarize, Q, None)


def test_mask_with_too_many_dimensions_is_named():
    msg = _message(ValueError, scaled_dot_product_attention, Q, K, V, mask=np.ones((1, 1, 1, 4, 6), bool))
    assert "mask" in msg and "(1, 1, 1, 4, 6)" in msg and "(4, 6)" in msg


def test_non_integer_head_index_and_widths_are_type_errors():
    W = rng.normal(size=(4, 8))
    assert "h must be an integer" in _message(TypeError, head_columns, W, 1.5, 2)
    assert "n_heads must be >= 1" in _message(ValueError, head_columns, W, 0, 0)
    assert "h=2" in _message(ValueError, head_columns, W, 2, 2)
    assert "d_k must be an integer" in _message(TypeError, fused_qkv_projections, Q, rng.normal(size=(8, 6)), 2.0)


@pytest.mark.parametrize("args", [(Q[0], K, V), (Q[:, :7], K, V), (Q, K, V[:5]), (Q, K, [["a"] * 5] * 6)])
def test_same_message_with_or_without_a_mask(args):
    mask = np.ones((4, 6), dtype=bool)
    with pytest.raises((ValueError, TypeError)) as plain:
        scaled_dot_product_attention(*args)
    with pytest.raises(type(plain.value)) as masked:
        scaled_dot_product_attention(*args, mask=mask)
    assert str(masked.value) == str(plain.value)


def test_masked_softmax_names_scores_with_or_without_a_mask():
    bad = np.array([[1.0, np.nan]])
    assert _message(ValueError, masked_softmax, bad) == _message(
        ValueError, masked_softmax, bad, np.ones((1, 2), bool))


def test_split_heads_says_how_to_fix_it():
    msg = _message(ValueError, split_heads, Q, 3)
    assert "(4, 8)" in msg and "n_heads=3" in msg and "divisor" in msg


# Issue 16, item 3: ``scale`` has one meaning (see resolve_scale's docstring).

@pytest.mark.parametrize("scale, factor", [(True, 8 ** -0.5), (np.True_, 8 ** -0.5), (False, 1.0), (np.False_, 1.0),
                                           (None, 1.0), (1, 1.0), (0.25, 0.25), (np.float32(2.0), 2.0),
                                           (np.int64(3), 3.0)])
def test_scale_values(scale, factor):
    assert resolve_scale(scale, Q.shape[-1]) == pytest.approx(factor, rel=1e-15)  # d_k = 8
    np.testing.assert_allclose(scaled_dot_product_attention(Q, K, V, scale=scale)[1],
                               scaled_dot_product_attention(Q * factor, K, V, scale=False)[1])


@pytest.mark.parametrize("scale, exc", [(0, ValueError), (-1.0, ValueError), (np.nan, ValueError),
                                        (np.inf, ValueError), ("True", TypeError), ([0.5], TypeError),
                                        (np.array(0.5), TypeError), (1 + 0j, TypeError)])
def test_bad_scales_are_refused_everywhere(scale, exc):
    for fn, args in ((resolve_scale, (scale, 4)), (attention_scores, (Q, K, scale)),
                     (scaled_dot_product_attention, (Q, K, V, None, scale))):
        assert "scale" in _message(exc, fn, *args)


def test_multihead_mask_of_the_wrong_shape_names_the_shapes_it_accepts():
    w = init_multihead_params(AttentionConfig(d_model=8, n_heads=2), seed=0)
    x = rng.normal(size=(3, 4, 8))  # (B, T, d_model)
    msg = _message(ValueError, multi_head_attention, x, x, w, mask=np.ones((3, 5), bool))
    assert "(3, 5)" in msg and "(3, 2, 4, 4)" in msg and "(3, 4, 4)" in msg
    assert "mask must be a boolean array" in _message(TypeError, multi_head_attention, x, x, w,
                                                      mask=[[True], [True, False]])
