"""Chapter 3's live picture: Python's numbers are the core's, bad traits are refused with
their name and leave the picture as it was, the still is a PNG, and the browser's maths
(run in Node) equal the core's."""
import base64

import matplotlib.colors

import numpy as np
import pytest
import traitlets

from browser_harness import node_path, run_js
from qkv_viz.chapters.ch03_toy.figures import barycentric
from qkv_viz.chapters.ch03_toy.toy import TOY_K, TOY_Q, TOY_V
from qkv_viz.chapters.ch03_toy.vector_move import VectorMoveFigure, vector_move
from qkv_viz.core.attention import scaled_dot_product_attention
from qkv_viz.viz import style
from qkv_viz.viz.canvas import module_source


def test_starts_at_token_0_with_the_articles_weights():
    f = vector_move()
    assert f.q == list(TOY_Q[0]) and f.token == 0
    np.testing.assert_allclose(f.weights, [0.102, 0.848, 0.050], atol=1e-3)
    np.testing.assert_allclose(barycentric(f.output, TOY_V), f.weights)


@pytest.mark.parametrize("q, scale", [([-2.0, 0.5], True), ([3.0, -3.0], False), ([0.0, 0.0], True)])
def test_numbers_are_the_cores(q, scale):
    f = vector_move()
    f.q, f.scale = q, scale
    out, w = scaled_dot_product_attention(np.array([q]), TOY_K, TOY_V, scale=scale)
    np.testing.assert_allclose(f.weights, w[0])
    np.testing.assert_allclose(f.output, out[0])
    np.testing.assert_allclose(f.scores, TOY_K @ np.array(q) * (1 / np.sqrt(2) if scale else 1))


def test_choosing_a_token_takes_its_query():
    f = vector_move()
    f.token = 2
    assert f.q == list(TOY_Q[2])


@pytest.mark.parametrize("name, value", [("q", [99.0, 0.0]), ("q", [1.0]), ("q", [float("nan"), 0.0]),
                                         ("token", 3), ("token", -1)])
def test_bad_traits_are_refused_and_the_picture_stays(name, value):
    f = vector_move()
    before = (list(f.q), f.token, f.weights.copy())
    with pytest.raises(traitlets.TraitError, match=name):
        setattr(f, name, value)
    assert (f.q, f.token) == before[:2]
    np.testing.assert_array_equal(f.weights, before[2])
    assert f.static_png().startswith(b"\x89PNG")


def test_bad_data_is_named():
    with pytest.raises(ValueError, match="2 columns"):
        VectorMoveFigure(K=np.ones((3, 3)))
    with pytest.raises(ValueError, match="names"):
        VectorMoveFigure(names=["a", "b"])


def test_bundle_has_widget_html_and_png():
    data, _ = vector_move()._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in data
    assert base64.b64decode(data["image/png"]).startswith(b"\x89PNG")
    assert '<script type="module">' in data["text/html"] and "https://" not in data["text/html"]


@pytest.mark.skipif(node_path() is None, reason="node is not installed")
@pytest.mark.parametrize("q, scale", [([1, 2], True), ([-2, 0.5], True), ([3, -3], False)])
def test_browser_maths_equal_the_core(q, scale):
    got = run_js(module_source("vector_move.js"), f"""
      const r = attendOne({q}, Float64Array.from({TOY_K.ravel().tolist()}),
                          Float64Array.from({TOY_V.ravel().tolist()}), 3, 2, {1 / np.sqrt(2) if scale else 1});
      return {{weights: Array.from(r.weights), output: Array.from(r.output)}};""")
    out, w = scaled_dot_product_attention(np.array([q], dtype=float), TOY_K, TOY_V, scale=scale)
    np.testing.assert_allclose(got["weights"], w[0], rtol=0, atol=1e-12)
    np.testing.assert_allclose(got["output"], out[0], rtol=0, atol=1e-12)


def test_a_query_equal_to_a_key_is_said_in_the_picture():
    from qkv_viz.chapters.ch03_toy.vector_move import vector_move
    fig = vector_move()  # token 0's query (1, 2) equals no key
    assert fig.same_as_key() is None
    assert fig.still().axes[0].get_xlabel() == "q = (1.0, 2.0)"   # the readout sits under the plane, off its axis
    fig.q = [3.0, 1.0]                                          # exactly k1
    assert fig.same_as_key() == 1
    left, right = fig.still().axes[:2]
    assert left.get_xlabel() == "q = (3.0, 1.0) = k1" and "k1 (= q)" in [t.get_text() for t in left.texts]
    assert right.get_xlabel().startswith("output (")


def test_the_query_readout_keeps_a_second_decimal_when_it_has_one():
    """q0 a quarter as long is (0.25, 0.5): the still says 0.25, not 0.2; the live figure's 0.1 steps keep one decimal."""
    from matplotlib import pyplot as plt
    from qkv_viz.chapters.ch03_toy.figures import plot_query_states
    from qkv_viz.chapters.ch03_toy.vector_move import _coord
    assert [_coord(x) for x in (1.0, -3.0, 0.5, 0.25, -0.25, 0.1)] == ["1.0", "-3.0", "0.5", "0.25", "-0.25", "0.1"]
    fig, _ = plot_query_states(TOY_Q[:1] / 4, TOY_K, TOY_V, ["q0 a quarter as long"])
    assert fig.axes[0].get_xlabel() == "q = (0.25, 0.5)"
    plt.close(fig)


def test_still_shows_the_shares_below_as_the_text_says():
    from qkv_viz.chapters.ch03_toy.vector_move import vector_move
    fig = vector_move()
    still = fig.still()
    bar = still.axes[2]
    assert bar.get_position().y1 < min(ax.get_position().y0 for ax in still.axes[:2])  # under both planes
    widths = [p.get_width() for p in bar.patches]
    np.testing.assert_allclose(widths, fig.weights)


def test_still_draws_the_query_as_a_solid_arrow_and_names_the_keys():
    from matplotlib.patches import FancyArrow
    from qkv_viz.chapters.ch03_toy.vector_move import vector_move
    left = vector_move().still().axes[0]
    assert all(line.get_alpha() in (None, 1.0) for line in left.lines)   # no pale band: every line solid
    orange = [p for p in left.patches if isinstance(p, FancyArrow)
              and np.allclose(p.get_facecolor()[:3], matplotlib.colors.to_rgb(style.QUERY_COLOR))]
    assert len(orange) == 1                                                 # the query's arrow
    assert {"k0", "k1", "k2"} <= {t.get_text() for t in left.texts}         # every key named


def test_still_keeps_every_key_inside_the_query_plane():
    left = vector_move().still().axes[0]
    (x0, x1), (y0, y1) = left.get_xlim(), left.get_ylim()
    assert x0 < TOY_K[:, 0].min() and x1 > TOY_K[:, 0].max() and y0 < TOY_K[:, 1].min() and y1 > TOY_K[:, 1].max()
