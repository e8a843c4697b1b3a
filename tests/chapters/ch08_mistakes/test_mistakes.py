"""Tests for qkv_viz.mistakes: each mistake's numbers against the math core or torch."""
import numpy as np
import pytest

from qkv_viz.chapters.ch08_mistakes import mistakes
from qkv_viz.core.attention import scaled_dot_product_attention
from qkv_viz.core.diagnostics import softmax_grad_norm
from qkv_viz.core.projections import init_projection
from qkv_viz.core.softmax import softmax


def _qkv(T=4, S=4, d_k=4, d_v=4, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(T, d_k)), rng.normal(size=(S, d_k)), rng.normal(size=(S, d_v))


def test_weight_v_with_q_is_q_matmul_v():
    q, _, v = _qkv()
    np.testing.assert_allclose(mistakes.weight_v_with_q(q, v), q @ v)


def test_weight_v_with_q_shape_error_names_shapes():
    q, _, v = _qkv(T=4, S=6, d_k=8)
    with pytest.raises(ValueError, match=r"\(4, 8\).*\(6, 4\)"):
        mistakes.weight_v_with_q(q, v)


def test_compare_weighting_right_matches_core_and_bug_differs():
    q, k, v = _qkv(seed=1)
    r = mistakes.compare_weighting(q, k, v)
    expected, weights = scaled_dot_product_attention(q, k, v)
    np.testing.assert_allclose(r["right"], expected)
    np.testing.assert_allclose(r["right_row_sums"], 1.0)
    np.testing.assert_allclose(r["buggy_row_sums"], q.sum(axis=1))
    assert r["max_abs_diff"] == pytest.approx(np.abs(expected - q @ v).max())
    assert r["rel_diff"] > 0.1


def test_bug_output_ignores_k_right_output_does_not():
    q, k, v = _qkv(seed=2)
    k2 = k[::-1].copy()  # (adding a constant to every key would shift each score row: no change)
    a, b = mistakes.compare_weighting(q, k, v), mistakes.compare_weighting(q, k2, v)
    np.testing.assert_array_equal(a["buggy"], b["buggy"])
    assert np.abs(a["right"] - b["right"]).max() > 1e-3


def test_kv_role_check_v_nudge_leaves_weights_exactly():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(5, 8))
    r = mistakes.kv_role_check(x, init_projection(8, 4, 1), init_projection(8, 4, 2), init_projection(8, 3, 3))
    assert r["nudge_W_v"]["weights"] == 0.0
    assert r["nudge_W_v"]["output"] > 1e-3
    assert r["nudge_W_k"]["weights"] > 1e-3


def test_match_carry_toy_separate_retrieves_content_tied_returns_label():
    x, x_q, W_q, W_k, W_v = mistakes.match_carry_toy(n_types=3, d_content=2, seed=0)
    r = mistakes.tied_vs_separate(x, x_q, W_q, W_k, W_v)
    np.testing.assert_allclose(r["target"], x[0, 3:])
    np.testing.assert_allclose(r["output_separate"][0], x[0, 3:], atol=1e-3)
    np.testing.assert_allclose(r["weights_tied"], r["weights_separate"])
    np.testing.assert_allclose(r["output_tied"][0], (x[0] @ W_k), atol=1e-2)  # the label, not content


def test_fused_vs_separate_exact():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(6, 16))
    diff = mistakes.fused_vs_separate(x, init_projection(16, 8, 1), init_projection(16, 8, 2), init_projection(16, 5, 3))
    assert diff <= 1e-12


def test_time_fused_vs_separate_returns_positive_medians():
    r = mistakes.time_fused_vs_separate(n=8, d_model=16, repeats=3, seed=0)
    assert set(r) >= {"fused_ms", "separate_ms", "ratio"}
    assert r["fused_ms"] > 0 and r["separate_ms"] > 0
    assert r["ratio"] == pytest.approx(r["separate_ms"] / r["fused_ms"])


def test_time_fused_vs_separate_rejects_bad_repeats():
    with pytest.raises(ValueError, match="repeats"):
        mistakes.time_fused_vs_separate(n=8, d_model=16, repeats=0)


def test_overflow_sweep_naive_nan_past_709_stable_constant():
    r = mistakes.overflow_sweep([1.0, 700.0, 710.0, 1000.0], offsets=(-1.0, -2.0))
    expected = softmax(np.array([0.0, -1.0, -2.0]))[0]
    assert np.all(np.isfinite(r["naive_top"][:2]))
    np.testing.assert_allclose(r["naive_top"][:2], expected)
    assert np.all(np.isnan(r["naive_top"][2:]))
    np.testing.assert_allclose(r["stable_top"], expected)


def test_saturation_sweep_grad_norm_falls_with_factor():
    r = mistakes.saturation_sweep([2.0, 5.0, 1.0], [0.5, 1.0, 10.0, 100.0])
    np.testing.assert_allclose(r["grad_norm"], softmax_grad_norm(r["weights"]))
    assert np.all(np.diff(r["grad_norm"]) < 0)
    assert np.all(np.diff(r["max_weight"]) > 0)
    assert r["grad_norm"][-1] < 1e-10


def test_saturation_sweep_rejects_nan_scores():
    with pytest.raises(ValueError, match="scores"):
        mistakes.saturation_sweep([1.0, np.nan], [1.0])


def test_split_fused_right_matches_separate_projections():
    rng = np.random.default_rng(6)
    x, d = rng.normal(size=(5, 12)), 4
    W_q, W_k, W_v = (init_projection(12, d, s) for s in (1, 2, 3))
    qkv = x @ np.concatenate([W_q, W_k, W_v], axis=1)  # (5, 12) @ (12, 12)
    for got, want in zip(mistakes.split_fused_right(qkv, d), (x @ W_q, x @ W_k, x @ W_v)):
        np.testing.assert_allclose(got, want, atol=1e-12)


def test_interleaved_layout_split_per_head_gives_each_heads_projections():
    rng = np.random.default_rng(7)
    n, H, d_head, d_model = 5, 3, 2, 8
    x = rng.normal(size=(n, d_model))
    W_q, W_k, W_v = (init_projection(d_model, H * d_head, s) for s in (1, 2, 3))
    W_heads = mistakes.interleave_heads(np.concatenate([W_q, W_k, W_v], axis=1), H)
    np.testing.assert_array_equal(W_heads[:, :d_head], W_q[:, :d_head])              # head 0's q first,
    np.testing.assert_array_equal(W_heads[:, d_head:2 * d_head], W_k[:, :d_head])    # then head 0's k
    q, k, v = mistakes.split_per_head(x @ W_heads, H)
    for got, W in zip((q, k, v), (W_q, W_k, W_v)):
        want = (x @ W).reshape(n, H, d_head).transpose(1, 0, 2)                     # (H, n, d_head)
        np.testing.assert_allclose(got, want, atol=1e-12)
    q_w, _, _ = mistakes.split_per_head_as_blocks(x @ W_heads, H)
    assert q_w.shape == q.shape and not np.allclose(q_w, q)


def test_per_head_splits_reject_a_width_not_divisible():
    for fn in (mistakes.split_per_head, mistakes.split_per_head_as_blocks, mistakes.interleave_heads):
        with pytest.raises(ValueError, match=r"\(2, 9\).*3 \* n_heads = 6"):
            fn(np.zeros((2, 9)), 2)


def test_split_fused_rejects_wrong_width():
    with pytest.raises(ValueError, match=r"3\*d = 12"):
        mistakes.split_fused_right(np.zeros((2, 9)), 4)
