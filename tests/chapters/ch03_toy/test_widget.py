"""Chapter 3's editable toy: Python's side and the browser's maths (Node) against toy_steps."""
import base64

import numpy as np
import pytest

from browser_harness import node_path, run_js
from qkv_viz.chapters.ch03_toy.toy import TOY_V, toy_steps
from qkv_viz.chapters.ch03_toy.widget import steps_html, toy_widget
from qkv_viz.viz.canvas import module_source


def test_initial_steps_are_the_articles_row():
    w = toy_widget()
    assert w.scores == [2.0, 5.0, 1.0] and w.scale
    np.testing.assert_allclose(w.steps.weights, toy_steps([2.0, 5.0, 1.0]).weights)
    np.testing.assert_array_equal(np.frombuffer(w.v, "<f8").reshape(TOY_V.shape), TOY_V)


def test_bad_scores_are_refused():
    with pytest.raises(ValueError):
        toy_widget(scores=[1.0, float("nan"), 2.0])


def test_bundle_and_plain_html_table():
    data, _ = toy_widget()._repr_mimebundle_()
    assert base64.b64decode(data["image/png"]).startswith(b"\x89PNG")
    assert "<script" not in steps_html(toy_steps()).lower()


@pytest.mark.skipif(node_path() is None, reason="node is not installed")
@pytest.mark.parametrize("scores, scale", [([2, 5, 1], True), ([0, 1, 3], False), ([800, 1, 3], False)])
def test_browser_weights_equal_toy_steps(scores, scale):
    got = run_js(module_source("toy.js"), f"""
      const scaled = {scores}.map((x) => x * ({str(scale).lower()} ? 1 / Math.sqrt(2) : 1));
      return Array.from(softmaxRows(Float64Array.from(scaled), 1, 3, 1));""")
    np.testing.assert_allclose(got, toy_steps(scores, scale=scale).weights, rtol=0, atol=1e-12)


@pytest.mark.parametrize("scores", [[1.0, float("nan"), 2.0], [1.0, 2.0], [float("inf"), 0.0, 0.0]])
def test_bad_scores_from_python_are_refused_and_the_table_stays(scores):
    import traitlets
    w = toy_widget()
    with pytest.raises(traitlets.TraitError, match="scores"):
        w.scores = scores
    assert w.scores == [2.0, 5.0, 1.0]
    np.testing.assert_allclose(w.steps.weights, toy_steps([2.0, 5.0, 1.0]).weights)


def test_table_formats_big_numbers_and_overflow_like_the_browser():
    from qkv_viz.chapters.ch03_toy.widget import format_number
    assert format_number(4.113) == "4.113"
    assert format_number(2262708765584501.5) == "2.26e+15"
    assert format_number(float("inf")) == "inf (overflow)"
    html = steps_html(toy_steps([50.0, 5.0, 1100.0]))
    assert "2.26e+15" in html and "inf (overflow)" in html
    if node_path() is not None:  # the browser's cells are the same strings
        got = run_js(module_source("toy.js"), "return [4.113, 2262708765584501.5, Infinity].map(formatNumber);")
        assert got == ["4.113", "2.26e+15", "inf (overflow)"]


def test_still_shows_the_table_of_intermediates_with_the_overflow():
    from qkv_viz.chapters.ch03_toy.widget import toy_widget
    fig = toy_widget([2.0, 1100.0, 1098.0]).still()
    table = fig.axes[0].tables[0]
    texts = [c.get_text().get_text() for c in table.get_celld().values()]
    assert "exp(scores)" in texts and "inf (overflow)" in texts and "1100.000" in texts
    bars = [p.get_height() for p in fig.axes[1].patches]
    np.testing.assert_allclose(bars, [0.0, 1 / (1 + np.exp(-2 / np.sqrt(2))), 1 / (1 + np.exp(2 / np.sqrt(2)))],
                               atol=1e-12)


def test_d_k_and_the_values_are_fixed_when_the_toy_is_built():
    """toy.js reads d_k and v once: a new one could not be shown, so it is refused."""
    import traitlets
    w = toy_widget()
    with pytest.raises(traitlets.TraitError, match="^d_k = 8, but it is fixed when the figure is built"):
        w.d_k = 8
    with pytest.raises(traitlets.TraitError, match="^scale = |'scale' trait"):
        w.scale = "no"
    assert w.d_k == 2 and w.scale is True
    np.testing.assert_allclose(w.steps.weights, toy_steps([2.0, 5.0, 1.0]).weights)
