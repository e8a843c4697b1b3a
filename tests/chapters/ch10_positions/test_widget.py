"""Chapter 10's live RoPE figure: Python's side, and the browser's maths (Node) against the core."""
import base64

import numpy as np
import pytest

from browser_harness import node_path, run_js
from qkv_viz.chapters.ch10_positions.toy import widget_vectors
from qkv_viz.chapters.ch10_positions.widget import BASES, D_KS, rope_widget
from qkv_viz.core.positions import apply_rope, rope_dot, rope_dots_by_offset, rope_frequencies
from qkv_viz.viz.canvas import module_source

needs_node = pytest.mark.skipif(node_path() is None, reason="node is not installed")


def test_initial_state_and_core_dot():
    w = rope_widget()
    q, k = widget_vectors()
    np.testing.assert_array_equal(np.frombuffer(w.q, "<f8"), q)
    assert (w.m, w.n, w.d_k, w.base) == (2, 5, 8, 10000.0)
    assert w.dot == pytest.approx(rope_dot(q[:8], k[:8], 2, 5))
    w.m, w.n = 10, 13
    assert w.dot == pytest.approx(rope_dot(q[:8], k[:8], 2, 5))  # same offset, same dot product


def test_bundle_has_png_and_static_html():
    data, _ = rope_widget()._repr_mimebundle_()
    assert base64.b64decode(data["image/png"]).startswith(b"\x89PNG")
    assert "ropeRotate" in data["text/html"] and "<script type=\"module\">" in data["text/html"]


@pytest.mark.parametrize("kwargs, phrase", [
    (dict(m=40), "m must be a position"), (dict(d_k=6), "d_k must be one of"),
    (dict(base=5.0), "base must be one of"), (dict(pair=4), "pair must be 0..3"),
    (dict(t_max=1), "t_max must be"),
])
def test_bad_settings_are_refused(kwargs, phrase):
    with pytest.raises(ValueError, match=phrase):
        rope_widget(**kwargs)


def test_slider_stops_match_the_module():
    src = module_source("positions.js")
    assert f"const ROPE_D_KS = [{', '.join(map(str, D_KS))}];" in src
    assert f"const ROPE_BASES = [{', '.join(str(int(b)) for b in BASES)}];" in src


@needs_node
@pytest.mark.parametrize("d_k, base", [(2, 10.0), (8, 10000.0), (64, 1000000.0), (16, 100.0)])
def test_browser_maths_equal_the_core(d_k, base):
    q, k = widget_vectors()
    got = run_js(module_source("positions.js"), f"""
      const q = Float64Array.from({q.tolist()}), k = Float64Array.from({k.tolist()});
      const offsets = Array.from({{length: 21}}, (_, j) => j - 10);
      return {{theta: Array.from(ropeFrequencies({d_k}, {base})),
               rot: Array.from(ropeRotate(q, 7, {d_k}, {base})),
               dots: [[0, 3], [4, 7], [31, 2], [12, 12]].map(([m, n]) => ropeDot(q, k, m, n, {d_k}, {base})),
               curve: Array.from(ropeDotsByOffset(q, k, offsets, {d_k}, {base}))}};""")
    qd, kd = q[:d_k], k[:d_k]
    np.testing.assert_allclose(got["theta"], rope_frequencies(d_k, base), rtol=1e-12)
    np.testing.assert_allclose(got["rot"], apply_rope(qd[None], [7], base)[0], atol=1e-12)
    np.testing.assert_allclose(got["dots"], [rope_dot(qd, kd, m, n, base) for m, n in
                                             [(0, 3), (4, 7), (31, 2), (12, 12)]], atol=1e-12)
    np.testing.assert_allclose(got["curve"], rope_dots_by_offset(qd, kd, np.arange(-10, 11), base), atol=1e-12)


def test_the_default_pair_carries_the_largest_part_of_the_dot_product():
    from qkv_viz.chapters.ch10_positions.widget import pair_parts
    fig = rope_widget()
    parts = pair_parts(fig._q[:fig.d_k], fig._k[:fig.d_k], fig.m, fig.n, fig.base)
    assert parts.sum() == pytest.approx(fig.dot, abs=1e-12)
    assert fig.pair == np.abs(parts).argmax() and abs(parts[fig.pair]) > 0.5 * abs(fig.dot)
    assert rope_widget(pair=0).pair == 0


def test_bad_sliders_are_refused_and_a_smaller_d_k_brings_the_pair_into_range():
    """As positions.js: with fewer pairs the drawn pair becomes the last one; what no slider
    offers (a position past t_max, a d_k or base between stops) is refused, the dot stays."""
    import traitlets
    w = rope_widget(d_k=16, pair=6)
    dot = w.dot
    for name, value, why in (("m", 32, "choose 0..31"), ("d_k", 12, "choose one of 2, 4, 8"),
                             ("base", 500.0, "choose one of 10, 100"), ("pair", 8, "d_k = 16 has 8 pairs")):
        with pytest.raises(traitlets.TraitError, match=f"^{name} = .*{why}"):
            setattr(w, name, value)
    assert (w.m, w.d_k, w.base, w.pair, w.dot) == (2, 16, 10000.0, 6, dot)
    w.d_k = 4
    assert w.pair == 1 and w.dot == rope_dot(widget_vectors()[0][:4], widget_vectors()[1][:4], 2, 5, 10000.0)
    w.m = np.int64(7)  # numpy integers are positions too
    assert w.m == 7 and type(w.m) is int
