"""Chapter 1's interactive library figure: Python's numbers, the bundle, the browser's maths (Node)."""
import base64

import numpy as np
import pytest

from browser_harness import node_path, run_js
from qkv_viz.chapters.ch01_library.library import DEMO_QUERY, demo_library, soft_lookup
from qkv_viz.chapters.ch01_library.widget import library_widget
from qkv_viz.viz.canvas import module_source


def test_sends_the_books_and_follows_temperature_and_query():
    w = library_widget()
    lib = demo_library()
    np.testing.assert_array_equal(np.frombuffer(w.book_keys, "<f8").reshape(lib.keys.shape), lib.keys)
    assert w.titles == list(lib.titles)
    w.temperature = 0.01
    assert w.weights.max() == pytest.approx(1.0, abs=1e-6)  # the top book takes everything
    w.temperature, w.query = 100.0, [0.0, 2.0]
    np.testing.assert_allclose(w.weights, soft_lookup([0.0, 2.0], lib, 100.0)[1])
    np.testing.assert_allclose(w.output, w.weights @ lib.values)


def test_bad_arguments_are_refused_with_the_name():
    with pytest.raises(ValueError, match="temperature"):
        library_widget(temperature=0)
    with pytest.raises(ValueError, match="query"):
        library_widget(query=[1.0, 2.0, 3.0])


def test_bundle_has_a_picture_and_a_self_contained_fragment():
    data, _ = library_widget()._repr_mimebundle_()
    assert base64.b64decode(data["image/png"]).startswith(b"\x89PNG")
    assert "import " not in data["text/html"] and "function render" in data["text/html"]
    assert "https://" not in data["text/html"]


@pytest.mark.skipif(node_path() is None, reason="node is not installed")
@pytest.mark.parametrize("temperature", [0.01, 0.3, 1.0, 50.0])
def test_browser_weights_equal_the_core(temperature):
    lib = demo_library()
    keys = ", ".join(str(x) for x in lib.keys.ravel())
    got = run_js(module_source("library.js"), f"""
      const keys = [{keys}], q = [{DEMO_QUERY[0]}, {DEMO_QUERY[1]}], n = {lib.n_books};
      const scores = Float64Array.from({{length: n}}, (_, b) => keys[2 * b] * q[0] + keys[2 * b + 1] * q[1]);
      return Array.from(softmaxRows(scores, 1, n, {temperature}));""")
    np.testing.assert_allclose(got, soft_lookup(DEMO_QUERY, lib, temperature)[1], rtol=0, atol=1e-12)


def test_the_live_bars_wear_the_pages_colour_and_the_picture_starts_cold():
    js = module_source("library.js")
    render = js[js.index("function drawWeightBars"):]
    assert "ctx.fillStyle = KEY_COLOUR" in render and "lutColour(lut, w)" not in render  # blue, like the page's bars
    cold, page = library_widget(temperature=0.3), library_widget()
    assert cold.static_png() != page.static_png()  # the saved picture is not the page's tau = 1 figure
    assert cold.weights.max() > 0.8


def test_bad_temperature_or_query_is_refused_and_the_weights_stay():
    import traitlets
    w = library_widget()
    weights = w.weights.copy()
    for name, value, why in (("temperature", 0, "it must be > 0"), ("temperature", float("nan"), "finite"),
                             ("query", [1.0], "2 finite numbers"), ("titles", ["a"], "fixed")):
        with pytest.raises(traitlets.TraitError, match=f"^{name} = .*{why}"):
            setattr(w, name, value)
    np.testing.assert_array_equal(w.weights, weights)
    w.temperature = np.float32(0.5)  # a numpy number is a number
    assert w.temperature == 0.5 and type(w.temperature) is float
