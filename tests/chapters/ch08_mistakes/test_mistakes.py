"""Chapter 8's helpers: the per-head split and its block-split bug, the fused-vs-separate timing."""
import numpy as np
import pytest

from qkv_viz.chapters.ch08_mistakes import mistakes
from qkv_viz.core.projections import init_projection


def interleave_heads(W_qkv, n_heads):
    """[W_q | W_k | W_v] (d_model, 3 H d_head) -> the per-head layout (d_model, H, 3, d_head), flat (section 3's line)."""
    d_model, width = W_qkv.shape
    return W_qkv.reshape(d_model, 3, n_heads, width // (3 * n_heads)).transpose(0, 2, 1, 3).reshape(d_model, width)


def test_time_fused_vs_separate_returns_positive_medians():
    r = mistakes.time_fused_vs_separate(n=8, d_model=16, repeats=3, seed=0)
    assert set(r) >= {"fused_ms", "separate_ms", "ratio"}
    assert r["fused_ms"] > 0 and r["separate_ms"] > 0
    assert r["ratio"] == pytest.approx(r["separate_ms"] / r["fused_ms"])


def test_time_fused_vs_separate_rejects_bad_repeats():
    with pytest.raises(ValueError, match="repeats"):
        mistakes.time_fused_vs_separate(n=8, d_model=16, repeats=0)


def test_interleaved_layout_split_per_head_gives_each_heads_projections():
    rng = np.random.default_rng(7)
    n, H, d_head, d_model = 5, 3, 2, 8
    x = rng.normal(size=(n, d_model))
    W_q, W_k, W_v = (init_projection(d_model, H * d_head, s) for s in (1, 2, 3))
    W_heads = interleave_heads(np.concatenate([W_q, W_k, W_v], axis=1), H)
    np.testing.assert_array_equal(W_heads[:, :d_head], W_q[:, :d_head])              # head 0's q first,
    np.testing.assert_array_equal(W_heads[:, d_head:2 * d_head], W_k[:, :d_head])    # then head 0's k
    q, k, v = mistakes.split_per_head(x @ W_heads, H)
    for got, W in zip((q, k, v), (W_q, W_k, W_v)):
        want = (x @ W).reshape(n, H, d_head).transpose(1, 0, 2)                     # (H, n, d_head)
        np.testing.assert_allclose(got, want, atol=1e-12)
    q_w, _, _ = mistakes.split_per_head_as_blocks(x @ W_heads, H)
    assert q_w.shape == q.shape and not np.allclose(q_w, q)


def test_per_head_splits_reject_a_width_not_divisible():
    for fn in (mistakes.split_per_head, mistakes.split_per_head_as_blocks):
        with pytest.raises(ValueError, match=r"\(2, 9\).*3 \* n_heads = 6"):
            fn(np.zeros((2, 9)), 2)
