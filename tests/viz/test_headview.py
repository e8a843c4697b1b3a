"""The head view (qkv_viz/viz/headview.py): input checks, the static picture, the mime bundle."""
import base64
import re

import numpy as np
import pytest

from qkv_viz.viz.headview import MAX_LINE_PT, HeadView, head_view, head_view_inputs, plot_head_view

TOKENS = ["the", "river", "bank"]
W = np.array([[0.7, 0.2, 0.1], [0.1, 0.1, 0.8], [0.05, 0.6, 0.35]])


def test_widget_sends_tokens_weights_and_focus():
    f = head_view(TOKENS, W, focus="bank", title="bank")
    assert isinstance(f, HeadView)
    assert f.tokens_q == TOKENS and f.tokens_k == TOKENS and f.focus == 2 and f.title == "bank"
    np.testing.assert_array_equal(np.frombuffer(f.weights, "<f8").reshape(3, 3), W)
    np.testing.assert_array_equal(f.weights_array, W)


def test_cross_attention_has_its_own_key_tokens():
    w = np.full((2, 4), 0.25)
    f = head_view(["a", "b"], w, tokens_k=["w", "x", "y", "z"], focus=1)
    assert f.tokens_k == ["w", "x", "y", "z"] and f.focus == 1
    assert np.frombuffer(f.weights, "<f8").size == 8


@pytest.mark.parametrize("weights, tokens_k, match", [
    (np.ones(3) / 3, None, r"2-D \(T, S\).*shape \(3,\)"),
    (np.full((3, 2), 0.5), None, r"shape \(3, 2\).*3 query tokens and 3 key tokens"),
    (np.full((3, 3), 0.5), ["x", "y"], r"shape \(3, 3\).*2 key tokens: expected \(3, 2\)"),
    (np.array([[np.nan, 1, 0]] * 3), None, r"shape \(3, 3\).*NaN"),
    (np.array([[1.5, -0.5, 0]] * 3), None, r"\[0, 1\]"),
])
def test_bad_weights_raise_a_value_error_naming_the_argument_and_shapes(weights, tokens_k, match):
    with pytest.raises(ValueError, match="weights") as err:
        head_view(TOKENS, weights, tokens_k=tokens_k)
    assert re.search(match, str(err.value)), str(err.value)


@pytest.mark.parametrize("focus", ["shore", 3, -1])
def test_bad_focus_is_refused(focus):
    with pytest.raises(ValueError, match="focus"):
        head_view(TOKENS, W, focus=focus)


def test_inputs_are_returned_as_lists_and_floats():
    tq, tk, w = head_view_inputs(("a", 1), [[1, 0], [0.5, 0.5]])
    assert tq == ["a", "1"] and tk == tq and w.dtype == float


def test_plot_draws_one_line_per_pair_as_wide_as_its_weight():
    import matplotlib.pyplot as plt
    _, ax = plt.subplots()
    art = plot_head_view(TOKENS, W, focus="bank", ax=ax)
    np.testing.assert_allclose(art["lines"].get_linewidths(), MAX_LINE_PT * W.ravel())
    alphas = art["lines"].get_colors()[:, 3].reshape(3, 3)
    np.testing.assert_allclose(alphas[2], 0.2 + 0.8 * W[2])          # the focused token: strong
    assert np.all(alphas[:2] < 0.1)                                 # the others: faint
    assert [t.get_text() for t in art["labels_k"]] == ["the  0.05", "river  0.60", "bank  0.35"]
    assert [t.get_text() for t in art["labels_q"]] == TOKENS


def test_bundle_has_the_live_widget_the_static_html_and_a_png():
    data, _ = head_view(TOKENS, W, focus=0)._repr_mimebundle_()
    assert base64.b64decode(data["image/png"]).startswith(b"\x89PNG")
    assert "application/vnd.jupyter.widget-view+json" in data
    html = data["text/html"]
    assert "qkv-headview" in html and '<script type="module">' in html and "</script>" in html
    assert "http://" not in html.split("<script")[1] and "https://" not in html


def test_a_saved_figure_says_what_it_is_in_plain_text():
    """The text/plain part of the output (what the saved file and a console show) names the
    figure in words, not as '<qkv_viz.viz.headview.HeadView object at 0x...>'."""
    data, _ = head_view(TOKENS, W, focus="bank", title="bank")._repr_mimebundle_()
    text = data["text/plain"]
    assert text.startswith("HeadView: an interactive figure"), text
    assert "object at 0x" not in text and "web edition" in text
    assert data["image/png"] and data["text/html"]
