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


def test_the_pages_five_numpy_lines_equal_the_package_and_torch():
    """The chapter's numpy lines (rows sum to 1, the max shift changes nothing) equal
    qv.scaled_dot_product_attention and torch's (the page shows the torch check once)."""
    d_k = 2
    scores = TOY_Q @ TOY_K.T / np.sqrt(d_k)  # (3, 2) @ (2, 3) -> (3, 3)
    e = np.exp(scores - scores.max(axis=1, keepdims=True))
    weights = e / e.sum(axis=1, keepdims=True)
    output = weights @ TOY_V
    np.testing.assert_allclose(weights.sum(axis=1), 1)
    np.testing.assert_allclose(np.exp(scores) / np.exp(scores).sum(axis=1, keepdims=True), weights)
    out_pkg, w_pkg = scaled_dot_product_attention(TOY_Q, TOY_K, TOY_V)
    np.testing.assert_allclose(w_pkg, weights)
    np.testing.assert_allclose(out_pkg, output)
    torch = pytest.importorskip("torch")
    out_t = torch.nn.functional.scaled_dot_product_attention(*(torch.tensor(a) for a in (TOY_Q, TOY_K, TOY_V)))
    np.testing.assert_allclose(out_t.numpy(), output, atol=1e-12)


def test_no_positive_scale_ranks_token_2_above_token_0_as_the_articles_table_does():
    for c in (0.1, 0.5, 1 / np.sqrt(2), 1.0, 1.5, 10.0):
        w = softmax(c * np.array(TOY_SCORES))
        assert w[0] > w[2]
    assert ARTICLE1_TABLE_WEIGHTS[0] < ARTICLE1_TABLE_WEIGHTS[2]


def test_the_arrays_typed_on_the_page_are_the_package_toy():
    """Chapter 3 types Q, K, V in a cell; the live figures draw toy.TOY_Q/K/V: they must agree."""
    import json
    import pathlib
    from qkv_viz.chapters.ch03_toy.toy import TOY_K, TOY_Q, TOY_V
    page = pathlib.Path(__file__).resolve().parents[3] / "notebooks" / "03_numeric_toy.ipynb"
    cells = ["".join(c["source"]) for c in json.loads(page.read_text())["cells"] if c["cell_type"] == "code"]
    typed = next(c for c in cells if c.startswith("Q = np.array"))
    scope = {"np": np}
    exec(typed.split("dots_0")[0], scope)  # noqa: S102 - the book's own cell
    for name, want in (("Q", TOY_Q), ("K", TOY_K), ("V", TOY_V)):
        np.testing.assert_array_equal(scope[name], want, err_msg=name)


def test_q0_points_nearest_k0_yet_k1_wins_and_no_query_equals_a_key():
    """The page: q0's cosine is largest with k0, its dot product with k1 (the longest key); no query equals
    a key; each token reads a different key most (the widget's "start from" menu shows three cases)."""
    cos = TOY_K @ TOY_Q[0] / np.linalg.norm(TOY_K, axis=1) / np.linalg.norm(TOY_Q[0])
    assert np.argmax(cos) == 0 and np.argmax(TOY_K @ TOY_Q[0]) == 1
    assert np.argmax(np.linalg.norm(TOY_K, axis=1)) == 1
    assert not any(np.allclose(q, k) for q in TOY_Q for k in TOY_K)
    _, w = scaled_dot_product_attention(TOY_Q, TOY_K, TOY_V)
    assert w.argmax(axis=1).tolist() == [1, 0, 2]
    assert np.max(TOY_Q @ TOY_K.T, axis=1)[2] == 0 and w[2, 2] > 0.6   # token 2's best score is 0, yet it leads
