"""Chapter 9's figures: the value-side bars and the token-row bars draw what they are given."""
import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from qkv_viz.chapters.ch09_real_model.figures import token_row_figure, value_side_figure  # noqa: E402


def test_value_side_figure_bars_are_the_numbers():
    a, b, c, d = np.array([1.0, 2.0]), np.array([3.0, 4.0]), np.array([0.5, 0.6]), np.array([0.1, 0.2])
    fig = value_side_figure(a, b, c, d)
    left, right = fig.axes[:2]
    heights = [p.get_height() for p in left.patches]
    np.testing.assert_allclose(heights, np.r_[a, b])
    np.testing.assert_allclose([p.get_height() for p in right.patches], np.r_[c, d])
    assert right.get_ylim() == (0, 1)
    assert [t.get_text() for t in left.get_legend().get_texts()] == ["[CLS]", "other tokens"]
    assert right.get_ylabel() == "share on [CLS]"


def test_value_side_figure_rejects_mismatched_lengths():
    with pytest.raises(ValueError, match=r"shape \(L,\)"):
        value_side_figure(np.ones(2), np.ones(3), np.ones(2), np.ones(2))


def test_token_row_figure_panels_series_and_labels():
    rows = np.random.default_rng(0).dirichlet(np.ones(5), size=(2, 3))  # (P=2, R=3, T=5)
    fig = token_row_figure(rows, list("abcde"), ["p0", "p1"], ["s0", "s1", "s2"])
    axes = fig.axes
    assert [ax.get_title() for ax in axes] == ["p0", "p1"]
    assert [t.get_text() for t in axes[0].get_xticklabels()] == list("abcde")
    np.testing.assert_allclose([p.get_height() for p in axes[1].patches], rows[1].ravel())
    with pytest.raises(ValueError, match="4 tokens"):
        token_row_figure(rows, list("abcd"), ["p0", "p1"], ["s0", "s1", "s2"])


def test_scores_weights_figure_marks_the_rows_and_shows_both_matrices():
    from matplotlib.patches import Rectangle

    from qkv_viz.chapters.ch09_real_model.figures import scores_weights_figure
    from qkv_viz.core.softmax import softmax

    tokens = ["[CLS]", "a", "cat", "it", "[SEP]"]
    scores = np.arange(25.0).reshape(5, 5) / 10 - 1
    fig = scores_weights_figure(scores, softmax(scores), tokens, ["it", "cat"])
    left, right = (next(ax for ax in fig.axes if ax.get_title().startswith(w)) for w in ("scores", "weights"))
    np.testing.assert_allclose(left.get_images()[0].get_array(), scores)
    np.testing.assert_allclose(right.get_images()[0].get_array(), softmax(scores))
    for ax in (left, right):
        ys = sorted(p.get_y() + 0.5 for p in ax.patches if isinstance(p, Rectangle) and not p.get_fill())
        assert ys == [2, 3]
    with pytest.raises(ValueError):
        scores_weights_figure(scores, softmax(scores), tokens, ["dog"])
    with pytest.raises(ValueError, match="4 tokens"):
        scores_weights_figure(scores, softmax(scores), tokens[:4], ["it"])


def test_encoder_layer_diagram_takes_its_shapes_from_the_config():
    from types import SimpleNamespace

    import matplotlib.pyplot as plt

    from qkv_viz.chapters.ch09_real_model.figures import encoder_layer_diagram

    config = SimpleNamespace(d_model=64, n_heads=4, d_k=16, d_ff=256, n_layers=3)  # not MiniLM's numbers
    fig, ax = plt.subplots()
    artists = encoder_layer_diagram(config, T=7, ax=ax)
    texts = " | ".join(a.get_text() for a in artists if hasattr(a, "get_text"))
    for shape in ("7 × 64", "4 × 7 × 16", "7 × 256", "√16", "× 3", "64 → 256 → 64"):
        assert shape in texts, shape
    assert "384" not in texts and "1536" not in texts
    assert all(a.axes is ax for a in artists)
    own = encoder_layer_diagram(config)  # ax=None: its own figure, "T" as a letter
    assert own[0].axes is not ax and any("T × 64" in a.get_text() for a in own if hasattr(a, "get_text"))
    plt.close("all")


def test_query_key_figure_bars_are_the_cosines_and_labels_the_key_lengths():
    from qkv_viz.chapters.ch09_real_model.figures import query_key_figure
    cos, norms = np.array([0.4, -0.2, 0.1]), np.array([5.0, 7.25, 6.0])
    fig = query_key_figure(cos, norms, 8.6, ["a", "b", "c"], marked=["a"], title="t")
    ax = fig.axes[0]
    np.testing.assert_allclose([p.get_height() for p in ax.patches], cos)
    assert [t.get_text() for t in ax.texts] == ["5.0", "7.2", "6.0"]
    assert "8.6" in ax.get_ylabel() and ax.get_title() == "t"
    assert ax.patches[0].get_edgecolor() != ax.patches[1].get_edgecolor()
    with pytest.raises(ValueError, match="3 tokens"):
        query_key_figure(cos, norms[:2], 8.6, ["a", "b", "c"])
