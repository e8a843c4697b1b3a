"""Chapter 11's generation stepper: Python's side, and the browser's maths (Node) against the core."""
import base64

import numpy as np
import pytest

from browser_harness import node_path, run_js
from qkv_viz.chapters.ch11_generation.generation import shared_kv, toy_layer
from qkv_viz.chapters.ch11_generation.widget import GenerationFigure, generation_widget
from qkv_viz.core.kv_cache import causal_self_attention, group_kv_heads
from qkv_viz.viz.canvas import module_source


def test_weights_and_cache_follow_the_controls():
    w = generation_widget()
    assert w.T == 6 and w.n_heads == 4 and w.n_kv_heads == 4
    assert w.weights.shape == (1,) and w.weights[0] == 1.0      # token 0 sees only itself
    w.step, w.head, w.n_kv_heads = 5, 3, 2
    x, p = toy_layer()
    _, weights = causal_self_attention(x, shared_kv(p, 2))
    np.testing.assert_allclose(w.weights, weights[3, 5])
    assert w.cache_numbers == 2 * 6 * 2 * 4 and w.cache.k.shape == (2, 6, 4)


def test_bad_input_is_refused_and_bundle_has_a_picture():
    x, p = toy_layer()
    with pytest.raises(ValueError, match="token labels"):
        GenerationFigure(x, p, ["a"])
    with pytest.raises(ValueError, match="divide"):
        GenerationFigure(x, p, list("abcdef"), n_kv_heads=3)
    with pytest.raises(ValueError, match="step"):
        GenerationFigure(x, p, list("abcdef"), step=6)
    with pytest.raises(ValueError, match="multi-head"):
        GenerationFigure(x, shared_kv(p, 2), list("abcdef"))
    data, _ = generation_widget()._repr_mimebundle_()
    assert base64.b64decode(data["image/png"]).startswith(b"\x89PNG")
    assert "qkv-generation" in data["text/html"] or "generation" in data["text/html"]


@pytest.mark.skipif(node_path() is None, reason="node is not installed")
@pytest.mark.parametrize("n_kv", [4, 2, 1])
def test_browser_maths_equal_the_core(n_kv):
    x, p = toy_layer()
    T, d, H, dh = 6, 16, 4, 4
    arr = lambda a: "Float64Array.from(" + str(np.ravel(a).tolist()) + ")"
    got = run_js(module_source("generation.js"), f"""
      const s = generationState({arr(x)}, {arr(p.W_q)}, {arr(p.W_k)}, {arr(p.W_v)}, {T}, {d}, {H}, {n_kv}, {dh});
      const g = groupHeads({arr(p.W_k)}, {d}, {H}, {n_kv}, {dh});
      return {{weights: Array.from(s.weights), k: Array.from(s.k), g: Array.from(g),
               n: cacheNumbers(3, {n_kv}, {dh})}};""")
    layer = shared_kv(p, n_kv)
    _, weights = causal_self_attention(x, layer)
    np.testing.assert_allclose(np.array(got["weights"]).reshape(H, T, T), weights, rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.array(got["g"]).reshape(d, n_kv * dh), group_kv_heads(p.W_k, H, n_kv), atol=1e-14)
    np.testing.assert_allclose(np.array(got["k"]).reshape(T, n_kv * dh), x @ layer.W_k, atol=1e-12)
    assert got["n"] == 2 * 4 * n_kv * dh


def test_still_picture_follows_the_step_and_the_kv_heads():
    """The saved picture is the step on screen, not a fixed summary."""
    pics = {(s, g): generation_widget(step=s, n_kv_heads=g).static_png() for s, g in ((1, 4), (3, 4), (3, 2))}
    assert len(set(pics.values())) == 3
    assert all(p.startswith(b"\x89PNG") for p in pics.values())
