import numpy as np
import pytest

from qkv_viz.core.attention import scaled_dot_product_attention
from qkv_viz.core.softmax import softmax
from qkv_viz.chapters.ch03_toy.toy import (ARTICLE1_TABLE_WEIGHTS, ARTICLE1_TEXT_WEIGHTS, TOY_K, TOY_Q, TOY_SCORES,
                         TOY_V, compare_with_claim, toy_steps)


def test_toy_vectors_give_the_articles_scores():
    np.testing.assert_allclose(TOY_Q[0] @ TOY_K.T, TOY_SCORES)  # (d_k,) @ (d_k, S) -> (S,)


@pytest.mark.parametrize("scale, factor", [(True, 1 / np.sqrt(2)), (False, 1.0), (0.25, 0.25)])
def test_steps_agree_with_softmax_and_attention(scale, factor):
    steps = toy_steps(TOY_SCORES, TOY_V, d_k=2, scale=scale)
    assert steps.factor == pytest.approx(factor)
    np.testing.assert_allclose(steps.scaled, np.array(TOY_SCORES) * factor)
    np.testing.assert_allclose(steps.exp / steps.total, steps.weights, rtol=1e-12)
    np.testing.assert_allclose(steps.weights, softmax(np.array(TOY_SCORES) * factor))
    assert steps.shifted.max() == 0.0
    out, weights = scaled_dot_product_attention(TOY_Q[:1], TOY_K, TOY_V, scale=scale)
    np.testing.assert_allclose(steps.output, out[0], atol=1e-12)
    np.testing.assert_allclose(steps.contributions.sum(axis=0), steps.output)


def test_scaled_row_matches_article_text_not_its_table():
    w = toy_steps().weights
    assert compare_with_claim(w, ARTICLE1_TEXT_WEIGHTS)["matches"]
    assert not compare_with_claim(w, ARTICLE1_TABLE_WEIGHTS)["matches"]
    assert not compare_with_claim(toy_steps(scale=False).weights, ARTICLE1_TABLE_WEIGHTS)["matches"]


def test_huge_scores_keep_finite_weights():
    steps = toy_steps([1000.0, 0.0, -5.0], scale=False)
    assert np.all(np.isfinite(steps.weights))
    assert steps.weights[0] == pytest.approx(1.0)


def test_bad_input_names_the_argument():
    with pytest.raises(ValueError, match="v needs one row per score"):
        toy_steps([1.0, 2.0], TOY_V)
    with pytest.raises(ValueError, match="scores"):
        toy_steps([[1.0, 2.0, 3.0]])
    with pytest.raises(TypeError, match="scores"):
        toy_steps(["a", "b", "c"])
    with pytest.raises(ValueError, match="claimed"):
        compare_with_claim([0.5, 0.5], [1.0, 0.0, 0.0])
