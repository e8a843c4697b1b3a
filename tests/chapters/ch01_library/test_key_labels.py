"""Chapter 1's live figure: each key's label sits beyond its arrow's tip and inside the plot box (Node)."""
import numpy as np
import pytest

from browser_harness import node_path, run_js
from qkv_viz.viz.canvas import module_source

BOX = {"x": 40, "y": 26, "w": 274, "h": 260}  # the plane's plot box (library.js, a 330 x 330 canvas)
W, H = 45, 12  # a label like "0: 0.85" in bold 12px


def place(origin, tip):
    return np.array(run_js(module_source("library.js"),
                           f"return keyLabelCentre({list(origin)}, {list(tip)}, {W}, {H}, "
                           f"{{x: {BOX['x']}, y: {BOX['y']}, w: {BOX['w']}, h: {BOX['h']}}});"))


def inside(c):
    return (BOX["x"] < c[0] - W / 2 and c[0] + W / 2 < BOX["x"] + BOX["w"]
            and BOX["y"] < c[1] - H / 2 and c[1] + H / 2 < BOX["y"] + BOX["h"])


def off_the_arrow(origin, tip, c):
    """No point of the arrow's shaft lies inside the label's rectangle."""
    t = np.linspace(0, 1, 200)[:, None]
    shaft = np.array(origin) + t * (np.array(tip) - np.array(origin))
    hit = (np.abs(shaft[:, 0] - c[0]) < W / 2) & (np.abs(shaft[:, 1] - c[1]) < H / 2)
    return not hit.any()


@pytest.mark.skipif(node_path() is None, reason="node is not installed")
@pytest.mark.parametrize("key", [(2.0, 0.0), (1.5, 0.0), (1.5, -0.5), (0.0, 2.0), (1.2, 1.2), (-1.5, 0.0), (-1.0, -0.5), (-2.0, 0.0),
                                 (0.0, -2.0), (-2.0, 2.0)])
def test_each_label_is_inside_the_box_and_off_its_arrow(key):
    lim = 2.6  # the page's: the largest coordinate 2.0, times 1.3
    X = lambda v: BOX["x"] + BOX["w"] * (v + lim) / (2 * lim)  # noqa: E731
    Y = lambda v: BOX["y"] + BOX["h"] * (lim - v) / (2 * lim)  # noqa: E731
    origin, tip = (X(0), Y(0)), (X(key[0]), Y(key[1]))
    c = place(origin, tip)
    assert inside(c), c
    assert off_the_arrow(origin, tip, c), c


@pytest.mark.skipif(node_path() is None, reason="node is not installed")
@pytest.mark.parametrize("key, query", [((2.0, 0.0), (1.5, 0.5)), ((0.0, 2.0), (0.0, 2.0)), ((-1.0, -0.5), (-1.0, -0.5))])
def test_a_label_leaves_the_query_head_free(key, query):
    """The page's query beside book 0's tip, and a query on a key's tip: the key's label avoids the
    query's head (an 18 px square), and stays inside the box."""
    lim = 2.6
    X = lambda v: BOX["x"] + BOX["w"] * (v + lim) / (2 * lim)  # noqa: E731
    Y = lambda v: BOX["y"] + BOX["h"] * (lim - v) / (2 * lim)  # noqa: E731
    head = [X(query[0]), Y(query[1]), 18, 18]
    c = np.array(run_js(module_source("library.js"),
                        f"return keyLabelCentre([{X(0)}, {Y(0)}], [{X(key[0])}, {Y(key[1])}], {W}, {H}, "
                        f"{{x: {BOX['x']}, y: {BOX['y']}, w: {BOX['w']}, h: {BOX['h']}}}, 6, [{head}]);"))
    assert inside(c), c
    assert abs(c[0] - head[0]) >= (W + 18) / 2 - 2 or abs(c[1] - head[1]) >= (H + 18) / 2 - 2, c
